//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// isolateOutput returns a private duplicate of stdout for protocol frames and
// points stdout's file descriptor at stderr, so that a
// stray fmt.Println or an inherited child process cannot corrupt the stream.
// When the output is a pipe or socket, the duplicate is put in non-blocking
// mode so that SetWriteDeadline can end a write the reader never drains
// (a terminal or file is left as it is: its mode is shared with other
// processes). SIGPIPE is ignored, so a vanished reader is an ordinary write
// error rather than the end of the process.
func isolateOutput(stdout, stderr *os.File) (*os.File, error) {
	signal.Ignore(syscall.SIGPIPE)
	fd, err := syscall.Dup(int(stdout.Fd()))
	if err != nil {
		return nil, fmt.Errorf("duplicate standard output: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := redirectFD(int(stderr.Fd()), int(stdout.Fd())); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("point standard output at standard error: %w", err)
	}
	makePollable(fd)
	return os.NewFile(uintptr(fd), "protocol-output"), nil
}

// pollableInput returns a duplicate of stdin that the Go runtime's poller
// waits on, when stdin is a pipe or socket, so that a read waiting for the
// client parks a goroutine instead of a thread; otherwise stdin itself.
func pollableInput(stdin *os.File) *os.File {
	fd, err := syscall.Dup(int(stdin.Fd()))
	if err != nil {
		return stdin
	}
	syscall.CloseOnExec(fd)
	if !makePollable(fd) {
		syscall.Close(fd)
		return stdin
	}
	return os.NewFile(uintptr(fd), "protocol-input")
}

// makePollable puts fd in non-blocking mode when it is a pipe or socket, and
// reports whether it did. A terminal or file is left as it is: its mode is
// shared with other processes.
func makePollable(fd int) bool {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return false
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return false
	}
	return syscall.SetNonblock(fd, true) == nil
}
