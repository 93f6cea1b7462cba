package main

import (
	"context"
	"errors"
	"runtime"
)

// The stdio transport's owner loop: the coordinator drives one connection
// (conn.go) from a source of decoded messages and writes its frames through
// one frameWriter. stdin → reader goroutine → coordinator → executor worker →
// coordinator → stdout, the coordinator writing itself where the output has
// write deadlines (a non-blocking pipe, the in-memory transport's output),
// else through a writing goroutine.

// messageSource is where a coordinator's input comes from, decoded: the
// lines of a byte stream (lineSource), or the messages of an in-process
// client (memorySource). One goroutine, the coordinator, takes its events.
type messageSource interface {
	// events is the channel of input events; after an event with eof or
	// readErr set, nothing more arrives.
	events() <-chan inbound
	// taken is told of each event the coordinator took from events.
	taken(in inbound)
	// close releases the source's goroutine, if any; it never closes the
	// input it reads.
	close()
}

// coordinator owns one stdio connection. Every field is owned by the
// goroutine running serve; other goroutines reach it only through channels.
type coordinator struct {
	ctx    context.Context
	t      *Transport
	conn   *connection
	source messageSource
	input  <-chan inbound // source's events; nil after the end of input
	writer *frameWriter

	changes   *changeBox // from the dispatcher, when it is a ChangeSource
	stopWatch func()
	spun      int // events taken by spinForEvent since the last full select
	// executorDone is closed when an injected executor closes; nil for the
	// transport's own, which closes only after Serve returned.
	executorDone <-chan struct{}
}

func newCoordinator(ctx context.Context, t *Transport, source messageSource, writer *frameWriter) *coordinator {
	c := &coordinator{ctx: ctx, t: t, source: source, input: source.events(), writer: writer, stopWatch: func() {}}
	c.conn = newConnection(connConfig{
		dispatcher:       t.dispatcher,
		out:              c,
		sub:              t.executor.NewSubmitter(),
		log:              t.opts.Logger,
		values:           ctx,
		requestTimeout:   t.opts.RequestTimeout,
		maxSubscriptions: t.opts.MaxSubscriptions,
		sessionID:        newSessionID(),
		calls:            t.calls,
		observer:         t.opts.Observer,
	})
	if !t.ownsExec {
		c.executorDone = t.executor.Done()
	}
	if src, ok := t.dispatcher.(ChangeSource); ok {
		c.changes = newChangeBox()
		c.conn.changes = c.changes
		c.stopWatch = src.WatchChanges(c.changes.put)
	}
	return c
}

// send and answer make the coordinator its connection's outlet: every frame
// goes to the one output, in the order handed over.
func (c *coordinator) send(_ route, frame []byte, done chan<- peerReply) error {
	return c.outputFailed(c.writer.queue(frame, done))
}

func (c *coordinator) answer(_ route, frame []byte) error {
	if frame == nil {
		return nil
	}
	return c.outputFailed(c.writer.queue(frame, nil))
}

// serve is the connection's select loop. It returns Serve's result.
func (c *coordinator) serve() error {
	for {
		if c.input == nil && c.conn.pending() == 0 {
			return c.outputFailed(c.writer.wait())
		}
		if handled, err := c.spinForEvent(); handled {
			if err != nil {
				return c.stopped(err)
			}
			continue
		}
		// Nothing is ready: the frames taken since the last wait go out
		// before this one (a direct writer's; a writing goroutine has
		// them already).
		if err := c.outputFailed(c.writer.flush()); err != nil {
			return c.stopped(err)
		}
		var err error
		select {
		case in := <-c.inputReady():
			err = c.onInbound(in)
		case o := <-c.conn.sub.Outcomes():
			err = c.conn.onOutcome(o)
		case call := <-c.conn.calls:
			err = c.conn.onPeerCall(call)
		case <-c.changeSignal():
			err = c.conn.onChanges(c.changes.take())
		case event := <-c.writer.pending():
			err = c.outputFailed(c.writer.handle(event))
		case <-c.executorDone:
			err = ErrExecutorClosed
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
		if err != nil {
			return c.stopped(err)
		}
	}
}

// stopped ends serving after err: when the executor closed, every pending
// request is answered -32603 "Request worker failed" first.
func (c *coordinator) stopped(err error) error {
	if !errors.Is(err, ErrExecutorClosed) {
		return err
	}
	if err := c.conn.onExecutorClosed(); err != nil {
		return err
	}
	if err := c.outputFailed(c.writer.wait()); err != nil {
		return err
	}
	return ErrExecutorClosed
}

// maxSpun bounds how many events in a row serve takes through spinForEvent
// before its full select gives every other source (cancellation, calls,
// changes) its turn, and a direct writer's frames taken meanwhile go out.
const maxSpun = 64

// maxYields is how many times in a row spinForEvent yields the processor
// waiting for an event.
const maxYields = 2

// spinForEvent takes, without blocking, an event from the sources that are
// busy under load: executor outcomes, input lines and the writer's events.
// While an answer or a write is outstanding and no event is ready, it yields
// the processor (maxYields times at most): the worker or writer just handed
// something usually produces the next event meanwhile, which is then taken
// here instead of after parking in the select, whose wake-up costs more
// than a yield (without yielding, the binary answered about a third fewer
// calls at window 64 on two cores). With nothing outstanding only input can
// come, and the coordinator does not yield: the frames it took are written
// and it waits. It reports whether it took an event.
func (c *coordinator) spinForEvent() (bool, error) {
	if c.spun >= maxSpun {
		c.spun = 0
		return false, nil
	}
	c.spun++
	for yields := 0; ; yields++ {
		// One channel at a time: a receive that finds its channel empty
		// takes no lock, where a select of several locks them all. The
		// writer's events come first, so that a writing goroutine is kept
		// busy, then answers, then input.
		select {
		case event := <-c.writer.pending():
			return true, c.outputFailed(c.writer.handle(event))
		default:
		}
		select {
		case o := <-c.conn.sub.Outcomes():
			return true, c.conn.onOutcome(o)
		default:
		}
		select {
		case in := <-c.inputReady():
			return true, c.onInbound(in)
		default:
		}
		if yields == maxYields || c.conn.pending() == 0 && !c.writer.writing() {
			break
		}
		runtime.Gosched()
	}
	c.spun = 0
	return false, nil
}

// inputReady is the channel of input events, nil (never ready) while the
// connection holds its bound of messages behind an initialize or the output
// has its bound of frames waiting: the reader then blocks, and so does the
// client's writing, until they drain.
func (c *coordinator) inputReady() <-chan inbound {
	if c.conn.holdFull() || c.writer.backlog() >= aheadBytes {
		return nil
	}
	return c.input
}

// shutdown cancels all work still admitted and releases the connection's
// goroutines. Nothing more is written.
func (c *coordinator) shutdown() {
	c.stopWatch()
	c.conn.close()
	c.source.close()
	c.writer.close()
}

// changeSignal is the channel that says changes are waiting; nil (never
// ready) when the dispatcher reports none.
func (c *coordinator) changeSignal() <-chan struct{} {
	if c.changes == nil {
		return nil
	}
	return c.changes.signal
}

// outputFailed logs a terminal output error, which ends the connection.
func (c *coordinator) outputFailed(err error) error {
	if err != nil {
		c.t.opts.Logger.Error("mcpstdio: output failed; closing the connection", "err", err)
	}
	return err
}

// onInbound answers what the source could not decode and hands each message
// to the connection.
func (c *coordinator) onInbound(in inbound) error {
	c.source.taken(in)
	switch {
	case in.tooLong:
		return c.answer(nil, errorFrame("", errLineLimit(c.t.opts.MaxLineBytes)))
	case in.eof:
		c.input = nil
		return c.conn.onInputEnd()
	case in.readErr != nil:
		c.t.opts.Logger.Error("mcpstdio: reading input failed; treating it as end of input", "err", in.readErr)
		c.input = nil
		if err := c.conn.onInputEnd(); err != nil {
			return err
		}
		return c.answer(nil, errorFrame("", errReadInput))
	case in.parseErr != nil:
		c.t.opts.Logger.Debug("mcpstdio: unparsable line", "err", in.parseErr)
		return c.answer(nil, errorFrame("", errParseFrame))
	}
	return c.conn.onMessage(message{env: in.env, size: len(in.line), raw: in.line})
}
