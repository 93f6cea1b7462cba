package main

import (
	"context"
	"errors"
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
	lines  <-chan inbound // source's events; nil after the end of input
	writer *frameWriter

	changes   *changeBox // from the dispatcher, when it is a ChangeSource
	stopWatch func()
}

func newCoordinator(ctx context.Context, t *Transport, source messageSource, writer *frameWriter) *coordinator {
	c := &coordinator{ctx: ctx, t: t, source: source, lines: source.events(), writer: writer, stopWatch: func() {}}
	writer.watch(ctx)
	c.conn = newConnection(connConfig{
		dispatcher:       t.dispatcher,
		out:              c,
		sub:              t.executor.newSubmitter(),
		log:              t.opts.Logger,
		values:           ctx,
		requestTimeout:   t.opts.RequestTimeout,
		maxSubscriptions: t.opts.MaxSubscriptions,
		listenQuota:      &t.listens,
		sessionID:        newSessionID(),
		calls:            t.calls,
		observer:         t.opts.Observer,
	})
	if !t.ownsExec {
		// The transport's own executor closes only after Serve returned.
		c.conn.executorDone = t.executor.done
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

func (c *coordinator) answer(_ route, f finalFrame) error {
	if f.frame == nil {
		return nil
	}
	return c.outputFailed(c.writer.queue(f.frame, nil))
}

// lendFrame and takeBackFrame make the coordinator a frameLender: its
// writer's frame buffers are reused once written (see frameWriter.lendFrame).
func (c *coordinator) lendFrame() []byte      { return c.writer.lendFrame() }
func (c *coordinator) takeBackFrame(b []byte) { c.writer.takeBackFrame(b) }

// serve runs the connection's owner loop (serveConnection) and returns
// Serve's result.
func (c *coordinator) serve() error {
	return serveConnection(c.ctx, c.conn, c)
}

// The coordinator is the stdio side of its connection's owner loop: its
// input is the source's events, its own events the frame writer's.

func (c *coordinator) onInput(in inbound) error { return c.onInbound(in) }
func (c *coordinator) events() <-chan error     { return c.writer.pending() }
func (c *coordinator) onEvent(event error) error {
	return c.outputFailed(c.writer.handle(event))
}

// finished ends the loop once the input has ended and every request is
// answered, after the last write.
func (c *coordinator) finished() (bool, error) {
	if c.lines == nil && c.conn.pending() == 0 {
		return true, c.outputFailed(c.writer.wait())
	}
	return false, nil
}

// idle writes the frames taken since the last wait (a direct writer's; a
// writing goroutine has them already), in one write
// (docs/explanation/contract.md, "Framing" lets frames that become ready
// between two waits go out together).
func (c *coordinator) idle() error { return c.outputFailed(c.writer.flush()) }

func (c *coordinator) drain() error { return c.outputFailed(c.writer.wait()) }

// input is the channel of input events, nil (never ready) while the
// connection holds its bound of messages behind an initialize or the output
// has its bound of frames waiting: the reader then blocks, and so does the
// client's writing, until they drain.
func (c *coordinator) input() <-chan inbound {
	if c.conn.holdFull() || c.writer.backlog() >= aheadBytes {
		return nil
	}
	return c.lines
}

// shutdown cancels all work still admitted and releases the connection's
// goroutines; err is what Serve returns. Nothing more is written: the
// frames not written get their acknowledgements (ErrTransportDown).
func (c *coordinator) shutdown(err error) {
	c.stopWatch()
	c.conn.close()
	c.source.close()
	c.writer.close(err)
}

// outputFailed logs a terminal output error, which ends the connection.
func (c *coordinator) outputFailed(err error) error {
	if err != nil && !errors.Is(err, errWriteAborted) {
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
		return c.answer(nil, errorAnswer("", errLineLimit(c.t.opts.MaxLineBytes)))
	case in.eof:
		c.lines = nil
		return c.conn.onInputEnd()
	case in.readErr != nil:
		c.t.opts.Logger.Error("mcpstdio: reading input failed; treating it as end of input", "err", in.readErr)
		c.lines = nil
		if err := c.conn.onInputEnd(); err != nil {
			return err
		}
		return c.answer(nil, errorAnswer("", errReadInput))
	case in.parseErr != nil:
		c.t.opts.Logger.Debug("mcpstdio: unparsable line", "err", in.parseErr)
		return c.answer(nil, errorAnswer("", errParseFrame))
	}
	return c.conn.onMessage(message{env: in.env, size: len(in.line), raw: in.line})
}
