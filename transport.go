package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Transport defaults (docs/reference/options.md).
const (
	DefaultWriteTimeout     = 5 * time.Second
	DefaultMaxLineBytes     = 2_000_000
	DefaultMaxSubscriptions = 32
)

// ErrClosed is returned by Notify when the transport is not serving: Serve has
// not started yet or has returned.
var ErrClosed = errors.New("mcpstdio: transport closed")

// Options configure a Transport. A zero value means the default, and a
// field says when it also takes Unlimited or None (see Unlimited for the
// rule every options struct follows).
type Options struct {
	// Input and Output carry the newline-delimited JSON-RPC stream. Both are
	// required, except by ServeStdio and NewStdioTransport, which serve the
	// process's standard input and output and refuse them. The transport
	// never closes them. When Output has write deadlines (a
	// SetWriteDeadline method that succeeds, as a pipe's *os.File in
	// non-blocking mode or a net.Conn has), Serve's goroutine writes to it
	// and sets the deadlines that enforce WriteTimeout, clearing them when it
	// returns; otherwise a goroutine of the transport writes, abandoned if a
	// Write never returns (as with a blocking standard output: ServeStdio
	// gives the process's standard output deadlines).
	Input  io.Reader
	Output io.Writer

	// WriteTimeout bounds each frame written to Output, never a write
	// (default 5s): a frame fails when the client has taken none of it for
	// WriteTimeout after it took the frame before it whole (or after the
	// frame's own write began), so a client that reads slowly but steadily
	// gets every answer however many frames join one write. A write that
	// fails or times out is terminal for the connection.
	WriteTimeout time.Duration
	// MaxLineBytes limits one input message, counting its newline (default
	// 2,000,000).
	MaxLineBytes int
	// RequestTimeout is each request's deadline, counted from when it starts
	// running; 0 means the executor's default (30s), Unlimited none.
	RequestTimeout time.Duration
	// MaxSubscriptions limits the subscriptions one connection holds
	// (default 32): open subscriptions/listen streams and URIs subscribed
	// with resources/subscribe count together. A listen request over it is
	// answered -32603 "Server subscription capacity exhausted", a
	// resources/subscribe of a new URI -32602 "Subscription limit reached
	// (N)". A subscribed URI is at most 1000 bytes long.
	MaxSubscriptions int
	// NotificationMethods lists the methods Notify may send (default none).
	NotificationMethods []string

	// Executor runs the work. When nil the transport creates one with
	// MaxConcurrency, MaxQueue and MaxInflightBytes, as ExecutorOptions
	// define them (MaxQueue also takes Unlimited and None, MaxInflightBytes
	// Unlimited), and closes it when Serve returns; an injected executor is
	// never closed by the transport. Each message is submitted with its
	// line's length as its size, so MaxInflightBytes (default 64 MiB)
	// bounds the input the admitted messages hold; a message over it is
	// answered -32603 "Server execution capacity exhausted", as over
	// MaxConcurrency and MaxQueue.
	Executor         *Executor
	MaxConcurrency   int
	MaxQueue         int
	MaxInflightBytes int

	// Logger receives diagnostics, never protocol output (nil:
	// slog.Default()).
	Logger *slog.Logger

	// Observer, when set, sees every request and the session (observer.go):
	// telemetry plugs in here. Nil costs nothing.
	Observer Observer
}

// Transport serves one newline-delimited JSON-RPC connection: it reads
// Options.Input, hands each admitted message to a Dispatcher through an
// Executor, and writes every answer to Options.Output. Construct it with
// NewTransport, then call Serve once; Notify may be called from any goroutine
// while Serve runs.
type Transport struct {
	opts       Options // validated; read-only after NewTransport
	dispatcher Dispatcher
	executor   *Executor
	ownsExec   bool
	// connect, called once when Serve starts, returns the message source
	// Serve reads (the lines of opts.Input, of standard input, or an
	// in-memory client's messages) and the writer of the frames (to
	// opts.Output, standard output, or an in-memory client). release, when
	// not nil, runs once the connection has shut down, before Serve
	// returns; an error ends Serve before anything is read.
	connect func() (source messageSource, writer *frameWriter, release func(), err error)

	started chan struct{}  // closed when Serve starts
	done    chan struct{}  // closed when Serve returns
	calls   chan *peerCall // Notify's and running requests' calls on the coordinator

	// listens counts the connection's open subscriptions/listen streams
	// (ListenStreams); it bounds nothing (MaxSubscriptions does).
	listens listenCounter

	mu       sync.Mutex
	serving  bool  // Serve was called
	serveErr error // what Serve returned; set before done is closed
}

// NewTransport validates opts and returns a transport that will serve d.
// An invalid option is reported as an error naming it.
func NewTransport(d Dispatcher, opts Options) (*Transport, error) {
	switch {
	case d == nil:
		return nil, errors.New("mcpstdio: nil Dispatcher")
	case opts.Input == nil:
		return nil, errors.New("mcpstdio: Options.Input is nil")
	case opts.Output == nil:
		return nil, errors.New("mcpstdio: Options.Output is nil")
	}
	t, err := newTransport(d, opts)
	if err != nil {
		return nil, err
	}
	t.connect = func() (messageSource, *frameWriter, func(), error) {
		return newLineSource(t.opts.Input, t.opts.MaxLineBytes), newFrameWriter(t.opts.Output, t.opts.WriteTimeout), nil, nil
	}
	return t, nil
}

// newTransport validates opts, all but Input and Output, and returns a
// transport that will serve d; the caller sets its connect.
func newTransport(d Dispatcher, opts Options) (*Transport, error) {
	if d == nil {
		return nil, errors.New("mcpstdio: nil Dispatcher")
	}
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	t := &Transport{
		opts:       opts,
		dispatcher: d,
		executor:   opts.Executor,
		started:    make(chan struct{}),
		done:       make(chan struct{}),
		calls:      make(chan *peerCall),
	}
	if t.executor == nil {
		e, err := NewExecutor(opts.executorOptions())
		if err != nil {
			return nil, err
		}
		t.executor, t.ownsExec = e, true
	}
	return t, nil
}

func (o *Options) normalize() error {
	if err := checkOptions(
		checkOption("Options.WriteTimeout", o.WriteTimeout),
		checkOption("Options.MaxLineBytes", o.MaxLineBytes),
		checkOption("Options.RequestTimeout", o.RequestTimeout, Unlimited),
		checkOption("Options.MaxSubscriptions", o.MaxSubscriptions),
		o.executorOptions().check("Options"),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	if o.Executor != nil && (o.MaxConcurrency != 0 || o.MaxQueue != 0 || o.MaxInflightBytes != 0) {
		return errors.New("mcpstdio: Options.MaxConcurrency, MaxQueue and MaxInflightBytes apply only when the transport creates its executor")
	}
	if err := validateNotificationMethods(o.NotificationMethods); err != nil {
		return err
	}
	o.NotificationMethods = append([]string(nil), o.NotificationMethods...)
	defaultTo(&o.WriteTimeout, DefaultWriteTimeout)
	defaultTo(&o.MaxLineBytes, DefaultMaxLineBytes)
	defaultTo(&o.MaxSubscriptions, DefaultMaxSubscriptions)
	o.Logger = defaultLogger(o.Logger)
	return nil
}

// executorOptions are the options of the executor the transport creates.
func (o Options) executorOptions() ExecutorOptions {
	return ExecutorOptions{MaxConcurrency: o.MaxConcurrency, MaxQueue: o.MaxQueue, MaxInflightBytes: o.MaxInflightBytes}
}

// ListenStreams returns how many subscriptions/listen streams are open on
// the connection now: what an observer's gauge reads.
func (t *Transport) ListenStreams() int { return int(t.listens.open.Load()) }

// Serve runs the connection until it ends, and may be called once.
//
//   - At the end of Input it stops reading, lets every admitted request run to
//     completion (or to its RequestTimeout), writes every answer, and returns
//     nil. Empty input returns nil at once.
//   - When a write fails, or a frame is not taken in time (WriteTimeout), it
//     cancels all work, writes nothing more, and returns an *OutputError
//     (errors.Is(err, ErrOutputFailed)).
//   - When ctx is cancelled it cancels all work, writes nothing more, and
//     returns ctx.Err(); a write in flight is waited for, up to WriteTimeout.
//   - When an injected executor is closed it answers every pending request
//     -32603 "Request worker failed" and returns ErrExecutorClosed.
//
// Serve never closes Input or Output. A Read of Input that never returns keeps
// the reading goroutine alive after Serve has returned.
func (t *Transport) Serve(ctx context.Context) (err error) {
	t.mu.Lock()
	if t.serving {
		t.mu.Unlock()
		return errors.New("mcpstdio: Serve called twice")
	}
	t.serving = true
	t.mu.Unlock()

	// Serving starts before the reader does: a caller that saw input being
	// read must not be told that Serve has not started.
	close(t.started)
	defer func() {
		if t.ownsExec {
			t.executor.Close()
		}
		t.mu.Lock()
		t.serveErr = err
		t.mu.Unlock()
		close(t.done)
	}()
	source, writer, release, err := t.connect()
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	c := newCoordinator(ctx, t, source, writer)
	defer func() { c.shutdown(err) }()
	return c.serve()
}

// Serve serves d on one connection described by opts until it ends; see
// Transport.Serve.
func Serve(ctx context.Context, d Dispatcher, opts Options) error {
	t, err := NewTransport(d, opts)
	if err != nil {
		return err
	}
	return t.Serve(ctx)
}
