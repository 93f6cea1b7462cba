package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// inbound is one event from the reading goroutine: a decoded line, an
// over-long line, the end of input, or a read error.
type inbound struct {
	line     []byte
	env      envelope
	parseErr error
	tooLong  bool
	eof      bool
	readErr  error
}

// execution is an admitted message the coordinator waits for.
type execution struct {
	ref    ExecutionRef
	id     string // canonical id of a tracked request; "" otherwise
	method string
	// request is false for a notification, whose outcome writes nothing.
	request bool
}

// workResult is what a worker hands back through the executor.
type workResult struct {
	frame       []byte   // nil: nothing to write
	initialized *Session // a successful initialize's negotiation
}

// coordinator owns all state of one connection. Every field is owned by the
// goroutine running run; other goroutines reach it only through channels.
type coordinator struct {
	ctx    context.Context
	t      *Transport
	log    *slog.Logger
	sub    *Submitter
	writer *frameWriter

	lines    chan inbound  // from the reading goroutine; nil after end of input
	stopRead chan struct{} // closed at shutdown so the reading goroutine never blocks on send

	session Session
	header  map[string]string // synthesized request headers; replaced, never mutated

	byID  map[string]*execution       // tracked in-flight requests by canonical id
	byRef map[ExecutionRef]*execution // everything admitted and not yet answered
}

func newCoordinator(ctx context.Context, t *Transport) *coordinator {
	c := &coordinator{
		ctx:      ctx,
		t:        t,
		log:      t.opts.Logger,
		sub:      t.executor.NewSubmitter(),
		writer:   newFrameWriter(t.opts.Output, t.opts.WriteTimeout),
		lines:    make(chan inbound),
		stopRead: make(chan struct{}),
		byID:     make(map[string]*execution),
		byRef:    make(map[ExecutionRef]*execution),
	}
	go readLines(newLineReader(t.opts.Input, t.opts.MaxLineBytes, defaultReadChunk), c.lines, c.stopRead)
	return c
}

// readLines reads and decodes lines until the end of input or a read error,
// sending one inbound per event. It returns early once stop is closed.
func readLines(lr *lineReader, out chan<- inbound, stop <-chan struct{}) {
	for {
		var in inbound
		line, err := lr.next()
		switch {
		case err == nil:
			in.line = line
			in.env, in.parseErr = decodeEnvelope(line)
		case errors.Is(err, errLineTooLong):
			in.tooLong = true
		case errors.Is(err, io.EOF):
			in.eof = true
		default:
			in.readErr = err
		}
		select {
		case out <- in:
		case <-stop:
			return
		}
		if in.eof || in.readErr != nil {
			return
		}
	}
}

// run is the connection's select loop. It returns Serve's result.
func (c *coordinator) run() error {
	for {
		if c.lines == nil && len(c.byRef) == 0 {
			return nil
		}
		var err error
		select {
		case in := <-c.lines:
			err = c.onInbound(in)
		case o := <-c.sub.Outcomes():
			err = c.onOutcome(o)
		case call := <-c.t.calls:
			err = c.onNotify(call)
		case <-c.t.executor.Done():
			return c.onExecutorClosed()
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// shutdown cancels all work still admitted and releases the connection's
// goroutines. Nothing is written.
func (c *coordinator) shutdown() {
	c.sub.Close()
	close(c.stopRead)
	c.writer.close()
}

func (c *coordinator) write(frame []byte) error {
	err := c.writer.write(frame)
	if err != nil {
		c.log.Error("mcpstdio: output failed; closing the connection", "err", err)
	}
	return err
}

func (c *coordinator) onInbound(in inbound) error {
	switch {
	case in.tooLong:
		return c.write(errorFrame("", errLineLimit(c.t.opts.MaxLineBytes)))
	case in.eof:
		c.lines = nil
		return nil
	case in.readErr != nil:
		c.log.Error("mcpstdio: reading input failed; treating it as end of input", "err", in.readErr)
		c.lines = nil
		return c.write(errorFrame("", errReadInput))
	case in.parseErr != nil:
		c.log.Debug("mcpstdio: unparsable line", "err", in.parseErr)
		return c.write(errorFrame("", errParseFrame))
	}
	return c.onMessage(in.env)
}

// onMessage runs steps 3 to 7 of the per-line pipeline (SPEC §4) for a line
// that decoded.
func (c *coordinator) onMessage(env envelope) error {
	if env.kind == kindObject && env.method == nil && (env.result != nil || env.errorV != nil) {
		return nil // a response from the client; no server-to-client request awaits one
	}
	method, methodOK := decodeString(env.method)
	id, tracked := "", false
	if env.id != nil {
		id, tracked = canonicalID(env.id)
	}
	isNotification := env.kind == kindObject && env.id == nil && methodOK
	if isNotification && method == "notifications/cancelled" {
		c.onCancel(env.params)
		return nil
	}
	if tracked {
		if _, busy := c.byID[id]; busy {
			return c.write(errorFrame(id, errDuplicateID))
		}
	} else {
		id = ""
	}
	ex := &execution{id: id, method: method, request: !isNotification}
	ref, err := c.sub.Submit(id, c.t.opts.RequestTimeout, c.work(env, id, c.session, c.header))
	switch {
	case errors.Is(err, ErrOverloaded):
		if !ex.request {
			return nil
		}
		return c.write(errorFrame(id, errCapacity))
	case err != nil: // the executor closed under us
		if ex.request {
			if werr := c.write(errorFrame(id, errWorkerFailed)); werr != nil {
				return werr
			}
		}
		return ErrExecutorClosed
	}
	ex.ref = ref
	c.byRef[ref] = ex
	if id != "" {
		c.byID[id] = ex
	}
	return nil
}

// work returns the job that validates the envelope and dispatches the
// message. It runs on an executor worker and touches no coordinator state: the
// session and header are snapshots.
func (c *coordinator) work(env envelope, id string, session Session, header map[string]string) func(context.Context) any {
	return func(ctx context.Context) any {
		req, rpcErr := admit(env, id)
		if rpcErr != nil {
			return workResult{frame: errorFrame(id, rpcErr)}
		}
		if req == nil {
			return workResult{}
		}
		req.Session, req.Header = session, header
		r := c.t.dispatcher.Dispatch(ctx, req)
		if req.ID == nil {
			return workResult{}
		}
		if r.Error != nil {
			return workResult{frame: errorFrame(id, r.Error)}
		}
		return workResult{frame: resultFrame(id, r.Result), initialized: r.Initialized}
	}
}

func (c *coordinator) onOutcome(o Outcome) error {
	ex, ok := c.byRef[o.Ref]
	if !ok {
		return nil // cancelled: its key was freed and its answer is never written
	}
	c.forget(ex)
	switch o.Kind {
	case OutcomeCompleted:
		res := o.Value.(workResult)
		if res.initialized != nil {
			c.session = *res.initialized
			c.header = map[string]string{"mcp-protocol-version": res.initialized.ProtocolVersion}
		}
		if res.frame == nil {
			return nil
		}
		return c.write(res.frame)
	case OutcomeTimedOut:
		c.log.Warn("mcpstdio: request timed out", "method", ex.method, "id", ex.id)
		if !ex.request {
			return nil
		}
		return c.write(errorFrame(ex.id, errRequestTimedOut))
	case OutcomeFailed:
		c.log.Error("mcpstdio: request worker failed", "method", ex.method, "id", ex.id, "panic", o.Panic)
		if !ex.request {
			return nil
		}
		return c.write(errorFrame(ex.id, errWorkerFailed))
	}
	return nil
}

func (c *coordinator) forget(ex *execution) {
	delete(c.byRef, ex.ref)
	if ex.id != "" {
		delete(c.byID, ex.id)
	}
}

// onCancel handles notifications/cancelled inline (SPEC §6.2): the named
// in-flight request is cancelled and forgotten at once, so nothing is ever
// written for it and its id can be reused by the very next line. Unknown ids
// and malformed params are ignored.
func (c *coordinator) onCancel(params []byte) {
	raw, ok := lookupMember(params, "requestId")
	if !ok {
		return
	}
	if reason, ok := lookupMember(params, "reason"); ok {
		if _, isString := decodeString(reason); !isString {
			return
		}
	}
	id, tracked := canonicalID(raw)
	if !tracked {
		return
	}
	ex, ok := c.byID[id]
	if !ok || ex.method == "initialize" {
		return
	}
	c.sub.Cancel(id)
	c.forget(ex)
}

func (c *coordinator) onNotify(call *notifyCall) error {
	err := c.write(call.frame)
	call.reply <- err
	return err
}

// onExecutorClosed answers every pending request -32603 "Request worker
// failed" and ends the connection.
func (c *coordinator) onExecutorClosed() error {
	c.log.Error("mcpstdio: executor closed with requests pending", "pending", len(c.byRef))
	for _, ex := range c.byRef {
		if !ex.request {
			continue
		}
		if err := c.write(errorFrame(ex.id, errWorkerFailed)); err != nil {
			return err
		}
	}
	return ErrExecutorClosed
}
