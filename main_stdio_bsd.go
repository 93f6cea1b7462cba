//go:build unix && !linux

package main

import "syscall"

func redirectFD(from, to int) error { return syscall.Dup2(from, to) }
