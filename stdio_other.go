//go:build !unix || solaris

package main

import "os"

// openStdio returns standard input and output as they are: this platform
// (or, on Solaris and illumos, package syscall) cannot duplicate a
// descriptor onto another, so the output stays on descriptor 1 and in its
// mode, and its writes are made by the transport's writing goroutine.
func openStdio() (*stdioStreams, error) {
	return &stdioStreams{in: os.Stdin, out: os.Stdout, restore: func() {}}, nil
}
