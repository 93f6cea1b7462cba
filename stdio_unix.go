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
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil {
		if kind := st.Mode & syscall.S_IFMT; kind == syscall.S_IFIFO || kind == syscall.S_IFSOCK {
			syscall.SetNonblock(fd, true)
		}
	}
	return os.NewFile(uintptr(fd), "protocol-output"), nil
}
