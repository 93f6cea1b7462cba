package main

import (
	"context"
	"errors"
	"io"
)

// ServeStdio serves d on the process's standard input and output (os.Stdin
// and os.Stdout) until the connection ends, as Serve does, and guards the
// stream while it serves. On Linux and the other Unix systems (macOS, the
// BSDs, AIX):
//
//   - Nothing else in the process writes into the protocol. Frames go to a
//     private duplicate of standard output, and descriptor 1 points at
//     standard error: a stray fmt.Println, a library logging to os.Stdout,
//     or a child process that inherits descriptor 1 writes diagnostics
//     instead of corrupting the stream.
//   - Every write has its deadline. A pipe or socket is put in non-blocking
//     mode, so a write that the client does not take within WriteTimeout
//     ends and ServeStdio returns an error matching ErrOutputFailed; the input
//     is made non-blocking too, so a read waiting for the client parks a
//     goroutine rather than a thread. A terminal or a regular file is left
//     in its mode (a terminal's is shared with other processes): its
//     writes are made by a goroutine that is abandoned if one never
//     returns, as with Serve.
//   - SIGPIPE is ignored, so a client that goes away is an ordinary write
//     error, also for a log line written to a closed standard error, never
//     the end of the process. It stays ignored after the return: a client
//     that went away often took standard error with it, and what the
//     process logs and cleans up on its way out must not end it. Ignoring
//     it cancels a signal.Notify for SIGPIPE.
//   - On Linux, a pipe of the kernel's default capacity (64 KiB) is
//     enlarged to 1 MiB, what an unprivileged process may ask for by
//     default, so that a large message crosses it in fewer writes and
//     reads. A pipe whose capacity someone chose is left as it is, and so
//     is one the kernel refuses to enlarge.
//
// On other systems (Windows, Plan 9, WebAssembly, and Solaris and illumos,
// whose package syscall cannot point one descriptor at another's file)
// none of this is done: ServeStdio is Serve with os.Stdin and os.Stdout as
// Input and Output.
//
// When ServeStdio returns, the streams are as it found them: standard
// input and output are back in the mode they had (a stream the parent made
// non-blocking stays so), descriptor 1 is standard output again, and the
// duplicates are closed, which ends a read of a pipe or socket still
// waiting after a cancelled ctx (a read of a terminal waits on, and takes
// the next line typed). A handler still running then (one that ignores
// its cancelled context) that writes to os.Stdout writes into the stream
// again. On OpenBSD and AIX, whose package syscall reads no status flags,
// a stream the parent made non-blocking is left blocking. The process has
// one standard input and output: serve them with one ServeStdio (or stdio
// transport) at a time.
//
// opts are as for NewTransport, except that Input and Output must be nil
// (an error names the one that is not). An error preparing the streams
// (no descriptor left to duplicate standard output, or standard error
// closed) is returned before anything is read, with nothing changed.
func ServeStdio(ctx context.Context, d Dispatcher, opts Options) error {
	t, err := NewStdioTransport(d, opts)
	if err != nil {
		return err
	}
	return t.Serve(ctx)
}

// NewStdioTransport returns the transport ServeStdio serves, for a program
// that needs it while it serves (Transport.Notify, or an observer that
// reads its gauges). Nothing in the process changes until Serve starts,
// which prepares the streams as ServeStdio describes, and Serve restores
// them before it returns. opts are as for ServeStdio.
func NewStdioTransport(d Dispatcher, opts Options) (*Transport, error) {
	switch {
	case opts.Input != nil:
		return nil, errors.New("mcpstdio: NewStdioTransport: Options.Input must be nil: the transport reads standard input")
	case opts.Output != nil:
		return nil, errors.New("mcpstdio: NewStdioTransport: Options.Output must be nil: the transport writes standard output")
	}
	t, err := newTransport(d, opts)
	if err != nil {
		return nil, err
	}
	t.connect = func() (messageSource, *frameWriter, func(), error) {
		s, err := openStdio()
		if err != nil {
			return nil, nil, nil, err
		}
		return newLineSource(s.in, t.opts.MaxLineBytes), newFrameWriter(s.out, t.opts.WriteTimeout), s.restore, nil
	}
	return t, nil
}

// stdioStreams are the process's standard input and output as a stdio
// transport serves them (openStdio): in and out carry the protocol, and
// restore, called once after the last write, undoes every change made to
// the process and closes what openStdio opened.
type stdioStreams struct {
	in      io.Reader
	out     io.Writer
	restore func()
}
