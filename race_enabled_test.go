//go:build race

package main

// raceEnabled says the tests run under the race detector, whose sync.Pool
// drops a quarter of what is put in it, on purpose.
const raceEnabled = true
