package main

import (
	"bytes"
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
		in:    make(chan inbound, linesBuffer),
		turn:  make(chan struct{}, 1),
		ready: make(chan struct{}, 1),
		room:  make(chan struct{}, 1),
	}
	t, err := newTransport(d, opts)
	if err != nil {
		return nil, nil, err
	}
	c.maxLine, c.served = t.opts.MaxLineBytes, t.done
	t.connect = func() (messageSource, *frameWriter, func(), error) {
		return (*memorySource)(c), newMessageWriter((*memoryOutput)(c), t.opts.WriteTimeout), nil, nil
	}
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

	// The server's messages not yet received, oldest first, and their
	// length: at most memoryOutputBytes, or one message, as a pipe holds
	// what its reader has not read yet. ready (capacity 1) is signalled
	// when a message is queued, room when one is received. mu guards
	// outbox and outboxBytes, between the server's writer (the
	// coordinator) and Receive's goroutines; it is held for a few steps at
	// a time, never while anyone waits.
	mu          sync.Mutex
	outbox      []json.RawMessage
	outboxBytes int
	ready, room chan struct{}
}

// memoryOutputBytes is how much of the server's output a MemoryClient holds
// before the server's write waits for Receive: a Linux pipe's capacity.
const memoryOutputBytes = 64 << 10

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
// (ctx.Err()), or Serve has returned and every message it wrote was
// received (io.EOF). What the server wrote and the client has not received
// yet is held up to 64 KiB, as a pipe holds it; beyond that the server's
// write waits for Receive, and fails as it would on a pipe nobody reads if
// nothing is received within Options.WriteTimeout.
func (c *MemoryClient) Receive(ctx context.Context) (json.RawMessage, error) {
	for {
		if m, ok := c.take(); ok {
			return m, nil
		}
		select {
		case <-c.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.served:
			// Serve has returned: nothing more is written, and what was
			// written before is queued already.
			if m, ok := c.take(); ok {
				return m, nil
			}
			return nil, io.EOF
		}
	}
}

// take removes the oldest message of the outbox, if any.
func (c *MemoryClient) take() (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.outbox) == 0 {
		return nil, false
	}
	m := c.outbox[0]
	c.outbox[0] = nil
	c.outbox = c.outbox[1:]
	c.outboxBytes -= len(m)
	if len(c.outbox) > 0 {
		// One wake-up may stand for several messages queued while no
		// Receive waited: pass it on to the next.
		wake(c.ready)
	}
	wake(c.room)
	return m, true
}

// put adds m to the outbox if it fits, and reports whether it did.
func (c *MemoryClient) put(m json.RawMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.outbox) > 0 && c.outboxBytes+len(m) > memoryOutputBytes {
		return false
	}
	c.outbox = append(c.outbox, m)
	c.outboxBytes += len(m)
	wake(c.ready)
	return true
}

// wake wakes the waiter of ch (capacity 1), if any, or the next one; a
// signal already pending stands for this one.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// memorySource is the client's side of the pair as the coordinator's
// message source.
type memorySource MemoryClient

func (s *memorySource) events() <-chan inbound { return s.in }
func (s *memorySource) taken(inbound)          {}
func (s *memorySource) close()                 {}

// memoryOutput is the server's output: the coordinator hands it each frame
// as one message (messageOutput), which is queued for Receive. A message
// that finds the outbox full waits for Receive until its deadline, as a
// write to a full pipe does.
type memoryOutput MemoryClient

func (o *memoryOutput) sendMessage(msg []byte, deadline time.Time, abort <-chan struct{}) error {
	c := (*MemoryClient)(o)
	m := json.RawMessage(bytes.Clone(msg))
	var expired <-chan time.Time // armed when the outbox is first found full
	for !c.put(m) {
		if expired == nil {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-c.room:
		case <-expired:
			return os.ErrDeadlineExceeded
		case <-abort:
			return errWriteAborted
		}
	}
	return nil
}

var _ messageOutput = (*memoryOutput)(nil)
