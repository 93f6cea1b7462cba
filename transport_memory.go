package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// NewMemoryTransport returns a Transport that serves d to an in-process
// client, and that client: a connected pair of endpoints that pass messages,
// with no pipe and no bytes in between. It is meant for tests of a server
// (a Runtime with the tools, resources and prompts of an application) that
// want the real connection behaviour (admission, cancellation, ordering,
// backpressure, timeouts) without a subprocess.
//
// opts configure the transport as for NewTransport, except that Input and
// Output must be nil: the client's Send is the input, and what the server
// writes arrives at the client's Receive, one message at a time. Serve the
// transport as any other (it returns nil once the client closed its input
// and every admitted request was answered); the client outlives it.
func NewMemoryTransport(d Dispatcher, opts Options) (*Transport, *MemoryClient, error) {
	if opts.Input != nil || opts.Output != nil {
		return nil, nil, errors.New("mcpstdio: NewMemoryTransport: Options.Input and Output must be nil")
	}
	c := &MemoryClient{
		in:   make(chan inbound, linesBuffer),
		turn: make(chan struct{}, 1),
		out:  make(chan json.RawMessage),
	}
	opts.Input, opts.Output = memoryInput{}, (*memoryOutput)(c)
	t, err := NewTransport(d, opts)
	if err != nil {
		return nil, nil, err
	}
	c.maxLine, c.served = t.opts.MaxLineBytes, t.done
	t.newSource = func() messageSource { return (*memorySource)(c) }
	return t, c, nil
}

// MemoryClient is the client end of a NewMemoryTransport pair. Its methods
// are safe for concurrent use.
type MemoryClient struct {
	maxLine int
	served  <-chan struct{} // closed when the transport's Serve returned

	// in carries the client's messages to the server, decoded as the
	// server decodes a line; turn (capacity 1) is held while a Send or
	// Close hands one over, so that nothing follows the end of input.
	in     chan inbound
	turn   chan struct{}
	closed bool // set under turn

	// out carries the server's messages to Receive. deadline is the write
	// deadline the server's writer set last (see memoryOutput).
	out        chan json.RawMessage
	deadlineMu sync.Mutex
	deadline   time.Time
}

// Send hands msg, one JSON-RPC message, to the server, which reads it as it
// reads a line of input: over MaxLineBytes (counting the newline a line
// would have) it is refused -32600, unparsable -32700. Send keeps no
// reference to msg. It blocks while the server takes no input (as a pipe
// would), until ctx ends (ctx.Err()); after Close, or once Serve returned, it
// fails with ErrClosed.
func (c *MemoryClient) Send(ctx context.Context, msg []byte) error {
	var in inbound
	if len(msg)+1 > c.maxLine {
		in.tooLong = true
	} else {
		in.line = append([]byte(nil), msg...)
		in.env, in.parseErr = decodeEnvelope(in.line)
	}
	return c.deliver(ctx, in)
}

// Close ends the client's input, as end of file ends a stdio server's: the
// server answers what it admitted and Serve returns nil. It blocks while the
// server takes no input, as Send does; later calls return nil at once.
func (c *MemoryClient) Close() error {
	err := c.deliver(context.Background(), inbound{eof: true})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// deliver hands in to the server in turn with the other calls.
func (c *MemoryClient) deliver(ctx context.Context, in inbound) error {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.served:
		return ErrClosed
	}
	defer func() { <-c.turn }()
	if c.closed {
		return ErrClosed
	}
	select {
	case c.in <- in:
		c.closed = in.eof
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.served:
		return ErrClosed
	}
}

// Receive returns the next message the server wrote, a complete JSON-RPC
// message without a trailing newline. It blocks until one arrives, ctx ends
// (ctx.Err()), or Serve has returned and nothing more can arrive (io.EOF).
// A server whose messages are not received in time fails its write as it
// would on a pipe nobody reads (Options.WriteTimeout).
func (c *MemoryClient) Receive(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-c.served:
		return nil, io.EOF // a Serve that ended normally wrote everything first
	default:
	}
	select {
	case m := <-c.out:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.served:
		return nil, io.EOF
	}
}

// memorySource is the client's side of the pair as the coordinator's
// message source.
type memorySource MemoryClient

func (s *memorySource) events() <-chan inbound { return s.in }
func (s *memorySource) taken(inbound)          {}
func (s *memorySource) close()                 {}

// memoryOutput is the server's output: each frame a Write carries is handed
// to Receive as one message. It takes write deadlines, as a non-blocking
// pipe does, so that a write the client never receives returns once the
// writer gave up on it.
type memoryOutput MemoryClient

func (o *memoryOutput) SetWriteDeadline(t time.Time) error {
	o.deadlineMu.Lock()
	defer o.deadlineMu.Unlock()
	o.deadline = t
	return nil
}

func (o *memoryOutput) Write(p []byte) (int, error) {
	o.deadlineMu.Lock()
	d := o.deadline
	o.deadlineMu.Unlock()
	var timer <-chan time.Time
	if !d.IsZero() {
		t := time.NewTimer(time.Until(d))
		defer t.Stop()
		timer = t.C
	}
	n := 0
	for len(p) > n {
		end := n
		for end < len(p) && p[end] != '\n' {
			end++
		}
		msg := json.RawMessage(append([]byte(nil), p[n:end]...))
		select {
		case o.out <- msg:
		case <-timer:
			return n, os.ErrDeadlineExceeded
		case <-o.served:
			return n, ErrClosed
		}
		n = min(end+1, len(p))
	}
	return n, nil
}

// memoryInput stands in for Options.Input, which a memory transport never
// reads.
type memoryInput struct{}

func (memoryInput) Read([]byte) (int, error) { return 0, io.EOF }

var _ deadlineWriter = (*memoryOutput)(nil)
