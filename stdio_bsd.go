//go:build unix && !linux && !solaris

package main

import "syscall"

// redirectFD makes to refer to what from refers to (dup2).
func redirectFD(from, to int) error { return syscall.Dup2(from, to) }

// growPipe does nothing: only Linux lets a process size its pipes.
func growPipe(int) {}
