//go:build linux

package main

import (
	"os"
	"syscall"
)

// redirectFD makes to refer to what from refers to (dup2; Linux on some
// architectures has only dup3).
func redirectFD(from, to int) error { return syscall.Dup3(from, to, 0) }

// pipeBytes is the buffer growPipe asks for: Linux's default bound for an
// unprivileged process (/proc/sys/fs/pipe-max-size).
const pipeBytes = 1 << 20

// growPipe enlarges the kernel buffer of fd, when fd is a pipe of Linux's
// default capacity (16 pages), to pipeBytes. A pipe of 64 KiB takes a 1 MB
// answer in 16 writes, each waiting for the client to read, and a 1 MB
// request in as many reads: at 1 MB texts, one pipe size went from 0.44 to
// 0.95 of lineecho's rate in bench/limits' pairs (whose client and lineecho
// keep the default), at 10 KB texts from 0.44 to 0.47. A pipe whose capacity
// someone chose is left as it is, and so is fd when it is not a pipe or the
// kernel refuses (pipe-max-size, pipe-user-pages-soft): best effort.
func growPipe(fd int) {
	size, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETPIPE_SZ, 0)
	if errno != 0 || int(size) != 16*os.Getpagesize() || int(size) >= pipeBytes {
		return
	}
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETPIPE_SZ, pipeBytes)
}
