//go:build unix && !solaris

package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// openStdio prepares the process's standard input and output for a stdio
// transport, as ServeStdio describes: the protocol's output isolated from
// descriptor 1 (isolateOutput), the input pollable (pollableInput), and
// SIGPIPE ignored, for good. On error nothing is changed.
func openStdio() (*stdioStreams, error) {
	out, restoreOutput, err := isolateOutput(rawFD(os.Stdout), rawFD(os.Stderr))
	if err != nil {
		return nil, err
	}
	in, restoreInput := pollableInput(os.Stdin)
	signal.Ignore(syscall.SIGPIPE)
	return &stdioStreams{in: in, out: out, restore: func() {
		restoreInput()
		restoreOutput()
	}}, nil
}

// isolateOutput returns a private duplicate of stdoutFD for protocol
// frames and points stdoutFD at stderrFD, so that a stray fmt.Println or an
// inherited child process cannot corrupt the stream. When the output is a
// pipe or socket, the duplicate is put in non-blocking mode so that
// SetWriteDeadline can end a write the reader never drains (makePollable),
// and a pipe of the default capacity is enlarged (growPipe).
//
// The non-blocking mode belongs to the open file description, which the
// duplicate shares with the process that started this one and with whatever
// it runs next (the next command of a shell script). restore puts the mode
// back as it was, points stdoutFD at the output again and closes the
// duplicate; call it once, after the last write. It never fails.
func isolateOutput(stdoutFD, stderrFD int) (out *os.File, restore func(), err error) {
	fd, err := dupCloseOnExec(stdoutFD)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpstdio: duplicate standard output: %w", err)
	}
	if err := redirectFD(stderrFD, stdoutFD); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("mcpstdio: point standard output at standard error: %w", err)
	}
	madeNonblocking := makePollable(fd) == madeNonblock
	growPipe(fd)
	out = os.NewFile(uintptr(fd), "protocol-output")
	return out, func() {
		if madeNonblocking {
			syscall.SetNonblock(fd, false)
		}
		redirectFD(fd, stdoutFD)
		out.Close()
	}, nil
}

// pollableInput returns a duplicate of stdin that the Go runtime's poller
// waits on, when stdin is a pipe or socket, so that a read waiting for the
// client parks a goroutine instead of a thread; otherwise stdin itself. A
// pipe of the default capacity is enlarged (growPipe). restore closes the
// duplicate, which ends a Read of it in progress, and then puts stdin's
// mode back as it was, as isolateOutput's does.
func pollableInput(stdin *os.File) (in *os.File, restore func()) {
	stdinFD := rawFD(stdin)
	fd, err := dupCloseOnExec(stdinFD)
	if err != nil {
		return stdin, func() {}
	}
	mode := makePollable(fd)
	if mode == notPollable {
		syscall.Close(fd)
		return stdin, func() {}
	}
	growPipe(fd)
	in = os.NewFile(uintptr(fd), "protocol-input")
	return in, func() {
		// Closing first wakes a Read parked in the poller and waits for
		// any read call in progress, which then cannot block its thread
		// on the blocking mode; stdin shares the mode with the duplicate.
		in.Close()
		if mode == madeNonblock {
			syscall.SetNonblock(stdinFD, false)
		}
	}
}

// dupCloseOnExec duplicates fd with close-on-exec set, so that a child
// process started meanwhile by another goroutine does not inherit it.
func dupCloseOnExec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}

// rawFD returns f's descriptor without File.Fd's side effect of putting a
// non-blocking descriptor in blocking mode (which would hide the mode the
// parent chose from makePollable); -1 if f is nil or closed.
func rawFD(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// pollMode is what makePollable found or did.
type pollMode int

const (
	notPollable    pollMode = iota // not a pipe or socket, or the mode could not be set: left blocking
	wasNonblocking                 // already non-blocking: someone else's choice, kept
	madeNonblock                   // made non-blocking by makePollable
)

// makePollable puts fd in non-blocking mode when it is a pipe or socket. A
// terminal or file is left as it is: its mode is shared with other
// processes.
//
// When fd's status flags cannot be read (OpenBSD and AIX allow no fcntl
// through package syscall), fd is taken to have been blocking, as
// inherited standard streams almost always are.
func makePollable(fd int) pollMode {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return notPollable
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return notPollable
	}
	if flags, err := fileStatusFlags(fd); err == nil && flags&syscall.O_NONBLOCK != 0 {
		return wasNonblocking
	}
	if syscall.SetNonblock(fd, true) != nil {
		return notPollable
	}
	return madeNonblock
}

// fileStatusFlags returns fd's file status flags (fcntl F_GETFL).
func fileStatusFlags(fd int) (int, error) {
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}
