//go:build !unix

package main

import "os"

// isolateOutput returns stdout unchanged where file descriptors cannot be
// duplicated portably.
func isolateOutput(stdout, stderr *os.File) (*os.File, error) { return stdout, nil }

// pollableInput returns stdin unchanged.
func pollableInput(stdin *os.File) *os.File { return stdin }
