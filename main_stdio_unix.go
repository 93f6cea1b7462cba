//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// isolateOutput returns a private duplicate of stdout for protocol frames and
// points stdout's file descriptor at stderr, so that a
// stray fmt.Println or an inherited child process cannot corrupt the stream.
// When the output is a pipe or socket, the duplicate is put in non-blocking
// mode so that SetWriteDeadline can end a write the reader never drains
// (a terminal or file is left as it is: its mode is shared with other
// processes), and a pipe of the default capacity is enlarged (growPipe). SIGPIPE is ignored, so a vanished reader is an ordinary write
// error rather than the end of the process.
//
// The non-blocking mode belongs to the open file description, which the
// duplicate shares with the process that started this one and with whatever
// it runs next (the next command of a shell script). restore puts the mode
// back as it was; call it once, after the last write and before the process
// exits. It never fails and never closes the output.
func isolateOutput(stdout, stderr *os.File) (out *os.File, restore func(), err error) {
	signal.Ignore(syscall.SIGPIPE)
	stdoutFD, stderrFD := rawFD(stdout), rawFD(stderr)
	fd, err := syscall.Dup(stdoutFD)
	if err != nil {
		return nil, nil, fmt.Errorf("duplicate standard output: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := redirectFD(stderrFD, stdoutFD); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("point standard output at standard error: %w", err)
	}
	_, restoreMode := makePollable(fd)
	growPipe(fd)
	out = os.NewFile(uintptr(fd), "protocol-output")
	return out, keepOpenUntil(out, restoreMode), nil
}

// pollableInput returns a duplicate of stdin that the Go runtime's poller
// waits on, when stdin is a pipe or socket, so that a read waiting for the
// client parks a goroutine instead of a thread; otherwise stdin itself. A
// pipe of the default capacity is enlarged (growPipe). restore puts stdin's blocking mode back as it was, as isolateOutput's does;
// a read in progress may then block its goroutine's thread.
func pollableInput(stdin *os.File) (in *os.File, restore func()) {
	fd, err := syscall.Dup(rawFD(stdin))
	if err != nil {
		return stdin, func() {}
	}
	syscall.CloseOnExec(fd)
	ok, restoreMode := makePollable(fd)
	if !ok {
		syscall.Close(fd)
		return stdin, func() {}
	}
	growPipe(fd)
	in = os.NewFile(uintptr(fd), "protocol-input")
	return in, keepOpenUntil(in, restoreMode)
}

// rawFD returns f's descriptor without File.Fd's side effect of putting a
// non-blocking descriptor in blocking mode (which would hide the mode the
// parent chose from makePollable); -1 if f is closed.
func rawFD(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// keepOpenUntil returns restore, which also keeps f reachable until it is
// called, so that f's finalizer cannot close the descriptor restore works on
// (and let the number be reused) before then.
func keepOpenUntil(f *os.File, restore func()) func() {
	return func() {
		restore()
		runtime.KeepAlive(f)
	}
}

// makePollable puts fd in non-blocking mode when it is a pipe or socket, and
// reports whether fd is then in non-blocking mode; restore clears the mode
// again if makePollable set it, and does nothing otherwise. A terminal or
// file is left as it is: its mode is shared with other processes.
//
// When fd's status flags cannot be read (openbsd allows no fcntl through
// package syscall), fd is taken to have been blocking, as inherited standard
// streams almost always are.
func makePollable(fd int) (ok bool, restore func()) {
	restore = func() {}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return false, restore
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return false, restore
	}
	if flags, err := fileStatusFlags(fd); err == nil && flags&syscall.O_NONBLOCK != 0 {
		return true, restore // already non-blocking: someone else's choice
	}
	if syscall.SetNonblock(fd, true) != nil {
		return false, restore
	}
	return true, func() { syscall.SetNonblock(fd, false) }
}

// fileStatusFlags returns fd's file status flags (fcntl F_GETFL).
func fileStatusFlags(fd int) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}
