//go:build !unix

package main

import "os"

// isolateOutput returns stdout unchanged where file descriptors cannot be
// duplicated portably; restore does nothing.
func isolateOutput(stdout, stderr *os.File) (out *os.File, restore func(), err error) {
	return stdout, func() {}, nil
}

// pollableInput returns stdin unchanged; restore does nothing.
func pollableInput(stdin *os.File) (in *os.File, restore func()) { return stdin, func() {} }
