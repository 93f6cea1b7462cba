package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"slices"
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

// linesBuffer is how many decoded lines the reading goroutine may hand over
// ahead of the coordinator, so that under load the coordinator takes several
// lines per wake-up instead of one. It also bounds how many messages are
// held behind an initialize (see coordinator.held).
const linesBuffer = 16

// execution is an admitted message the coordinator waits for. It is also
// the job that serves the message: its run method is the work, and job is
// the executor's record of it, so that one allocation serves a message.
type execution struct {
	c      *coordinator
	id     string // canonical id of a tracked request; "" otherwise
	method string
	// request is false for a notification, whose outcome writes nothing.
	request bool
	// live is true from its admission until it is answered, cancelled or
	// timed out.
	live bool
	// gates is set on an admitted initialize request: until its outcome is
	// recorded, later messages are held (see coordinator.held).
	gates bool
	// outgoing are the ids of its server-to-client requests still waiting.
	outgoing []string

	// The executor's record of the job, which holds its execution
	// reference once admitted. The coordinator submits it unindexed (see
	// Submitter.submit): it refuses duplicate ids itself.
	job job

	// The worker's side: the envelope to admit, the Request admitted from
	// it, the Peer and the result. onMessage sets env and req's Session and
	// Header before the job is submitted; after that the coordinator never
	// touches env, req or peer. It reads result only after the job's
	// OutcomeCompleted arrived (the channel orders the worker's write before
	// that read), never for a job it cancelled or that timed out.
	env    envelope
	req    Request
	peer   requestPeer
	result workResult
}

// runtimeExecution is an execution with room for the HandlerRequest the
// Runtime builds (req.handlerSpace points to it), so that it costs no
// allocation of its own. Only a *Runtime dispatcher uses the room, so other
// dispatchers get a plain execution.
type runtimeExecution struct {
	execution
	handlerSpace handlerRequestSpace
}

// newExecution allocates the execution of one admitted message.
func (c *coordinator) newExecution() *execution {
	if _, ok := c.t.dispatcher.(*Runtime); ok {
		rx := new(runtimeExecution)
		rx.req.handlerSpace = &rx.handlerSpace
		return &rx.execution
	}
	return new(execution)
}

// subscription is an open 2026 subscriptions/listen stream.
type subscription struct {
	id     string // the listen request's canonical id, also its subscriptionId
	filter *ListenFilter
}

// workResult is what a worker hands back through the executor.
type workResult struct {
	frame []byte // nil: nothing to write
	reply Reply  // the dispatcher's reply, for its effects on the connection
}

// coordinator owns all state of one connection. Every field is owned by the
// goroutine running run; other goroutines reach it only through channels.
type coordinator struct {
	ctx    context.Context
	t      *Transport
	log    *slog.Logger
	sub    *Submitter
	writer *frameWriter

	lines     chan inbound  // from the reading goroutine; nil after end of input
	ahead     *lookahead    // shared with the reading goroutine
	done      chan struct{} // closed at shutdown: no goroutine waits on the coordinator after it
	changes   *changeBox    // from the dispatcher, when it is a ChangeSource
	stopWatch func()
	polled    int // events taken by poll since the last full select
	// executorDone is closed when an injected executor closes; nil for the
	// transport's own, which closes only after Serve returned.
	executorDone <-chan struct{}

	session   Session
	sessionID string            // Request.SessionID of every message; read-only
	header    map[string]string // synthesized request headers; replaced, never mutated

	// Everything admitted and not yet answered: tracked requests by
	// canonical id, other messages (notifications, untracked ids) by
	// execution reference.
	byID      map[string]*execution
	untracked map[ExecutionRef]*execution

	// Messages that arrived while an initialize was admitted and not
	// finished (initializing > 0), oldest first, with the sum of their line
	// lengths. They are submitted, in order, once the initialize's outcome is
	// recorded, so that they select their dialect with it; until then their
	// ids count as in flight. Input is not taken while the queue is full
	// (holdFull).
	held         []*execution
	heldBytes    int
	initializing int // admitted initialize requests not finished

	outgoing    map[string]*outgoingRequest // server-to-client requests by canonical id
	outgoingSeq uint64
	subs        map[string]*subscription // open listen streams by canonical id
	resourceSub map[string]bool          // URIs of resources/subscribe (initialize era)
}

func newCoordinator(ctx context.Context, t *Transport) *coordinator {
	c := &coordinator{
		ctx:         ctx,
		t:           t,
		log:         t.opts.Logger,
		sub:         t.executor.NewSubmitter(),
		writer:      newFrameWriter(t.opts.Output, t.opts.WriteTimeout),
		lines:       make(chan inbound, linesBuffer),
		ahead:       &lookahead{room: make(chan struct{}, 1)},
		sessionID:   newSessionID(),
		done:        make(chan struct{}),
		stopWatch:   func() {},
		byID:        make(map[string]*execution),
		untracked:   make(map[ExecutionRef]*execution),
		outgoing:    make(map[string]*outgoingRequest),
		subs:        make(map[string]*subscription),
		resourceSub: make(map[string]bool),
	}
	if !t.ownsExec {
		c.executorDone = t.executor.Done()
	}
	if src, ok := t.dispatcher.(ChangeSource); ok {
		c.changes = newChangeBox()
		c.stopWatch = src.WatchChanges(c.changes.put)
	}
	go readLines(newLineReader(t.opts.Input, t.opts.MaxLineBytes, defaultReadChunk), c.lines, c.ahead, c.done)
	return c
}

// readLines reads and decodes lines until the end of input or a read error,
// sending one inbound per event, and waits for room in ahead after a long
// line that filled it. It returns early once stop is closed.
func readLines(lr *lineReader, out chan<- inbound, ahead *lookahead, stop <-chan struct{}) {
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
		wait := ahead.reserve(len(in.line))
		select {
		case out <- in:
		case <-stop:
			return
		}
		if in.eof || in.readErr != nil {
			return
		}
		for wait && ahead.full() {
			select {
			case <-ahead.room:
			case <-stop:
				return
			}
		}
	}
}

// run is the connection's select loop. It returns Serve's result.
func (c *coordinator) run() error {
	for {
		if c.lines == nil && c.pending() == 0 {
			return c.outputFailed(c.writer.wait())
		}
		if handled, err := c.poll(); handled {
			if err != nil {
				return err
			}
			continue
		}
		var err error
		select {
		case in := <-c.input():
			err = c.onInbound(in)
		case o := <-c.sub.Outcomes():
			err = c.onOutcome(o)
		case call := <-c.t.calls:
			err = c.onPeerCall(call)
		case <-c.changeSignal():
			err = c.onChanges(c.changes.take())
		case event := <-c.writer.pending():
			err = c.outputFailed(c.writer.handle(event))
		case <-c.executorDone:
			return c.onExecutorClosed()
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// maxPolled bounds how many events in a row run takes through poll before
// its full select gives every other source (cancellation, calls, changes)
// its turn.
const maxPolled = 64

// poll takes, without blocking, an event from the sources that are busy
// under load: executor outcomes, input lines and the writer's events. Each
// time none is ready it yields the processor (twice at most): the worker or
// writer just handed something usually produces the next event meanwhile,
// which is then taken here instead of after parking in the select, whose
// wake-up costs far more than a yield. It reports whether it took an event.
func (c *coordinator) poll() (bool, error) {
	if c.polled >= maxPolled {
		c.polled = 0
		return false, nil
	}
	c.polled++
	for range 2 {
		select {
		case o := <-c.sub.Outcomes():
			return true, c.onOutcome(o)
		case in := <-c.input():
			return true, c.onInbound(in)
		case event := <-c.writer.pending():
			return true, c.outputFailed(c.writer.handle(event))
		default:
		}
		runtime.Gosched()
	}
	c.polled = 0
	return false, nil
}

// shutdown cancels all work still admitted and releases the connection's
// goroutines. Nothing is written.
func (c *coordinator) shutdown() {
	c.stopWatch()
	c.sub.Close()
	close(c.done)
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

// write hands frame to the writer without waiting for it to be written; a
// failure is reported by this call if the previous frame failed, else later,
// when run takes the result.
func (c *coordinator) write(frame []byte) error {
	return c.outputFailed(c.writer.write(frame))
}

// writeAndWait writes frame and returns when it has been written, has failed
// or has timed out.
func (c *coordinator) writeAndWait(frame []byte) error {
	return c.outputFailed(c.writer.writeAndWait(frame))
}

// outputFailed logs a terminal output error, which ends the connection.
func (c *coordinator) outputFailed(err error) error {
	if err != nil {
		c.log.Error("mcpstdio: output failed; closing the connection", "err", err)
	}
	return err
}

func (c *coordinator) onInbound(in inbound) error {
	c.ahead.taken(len(in.line))
	switch {
	case in.tooLong:
		return c.write(errorFrame("", errLineLimit(c.t.opts.MaxLineBytes)))
	case in.eof:
		c.onEOF()
		return nil
	case in.readErr != nil:
		c.log.Error("mcpstdio: reading input failed; treating it as end of input", "err", in.readErr)
		c.onEOF()
		return c.write(errorFrame("", errReadInput))
	case in.parseErr != nil:
		c.log.Debug("mcpstdio: unparsable line", "err", in.parseErr)
		return c.write(errorFrame("", errParseFrame))
	}
	return c.onMessage(in.env, len(in.line))
}

// onMessage runs steps 3 to 7 of the per-line pipeline (SPEC §4) for a line
// of size bytes that decoded. While an initialize is in flight the message
// is held instead of submitted (see coordinator.held).
func (c *coordinator) onMessage(env envelope, size int) error {
	if env.kind == kindObject && env.method == nil && (env.result != nil || env.errorV != nil) {
		c.onClientResponse(env)
		return nil
	}
	method, methodOK := decodeMethod(env.method)
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
		if c.inFlight(id) {
			return c.write(errorFrame(id, errDuplicateID))
		}
	} else {
		id = ""
	}
	ex := c.newExecution()
	ex.c, ex.id, ex.method, ex.request = c, id, method, !isNotification
	ex.env = env
	ex.job.key, ex.job.work, ex.job.size = id, ex, size
	if c.initializing > 0 {
		c.held = append(c.held, ex)
		c.heldBytes += size
		return nil
	}
	return c.submit(ex)
}

// submit hands ex to the executor with the connection's session and header
// as they are now, and tracks it; over capacity it is answered (a request)
// or dropped (a notification).
func (c *coordinator) submit(ex *execution) error {
	ex.req.Session, ex.req.Header, ex.req.SessionID = c.session, c.header, c.sessionID
	ex.job.ctx.values = c.ctx
	ref, err := c.sub.submit(&ex.job, c.t.opts.RequestTimeout)
	switch {
	case errors.Is(err, ErrOverloaded):
		if !ex.request {
			return nil
		}
		return c.write(errorFrame(ex.id, errCapacity))
	case err != nil: // the executor closed under us
		if ex.request {
			if werr := c.writeAndWait(errorFrame(ex.id, errWorkerFailed)); werr != nil {
				return werr
			}
		}
		return ErrExecutorClosed
	}
	ex.live = true
	if ex.id != "" {
		c.byID[ex.id] = ex
	} else {
		c.untracked[ref] = ex
	}
	if ex.request && ex.method == "initialize" {
		ex.gates = true
		c.initializing++
	}
	return nil
}

// pending counts the executions admitted and not yet answered, and the
// messages held.
func (c *coordinator) pending() int { return len(c.byID) + len(c.untracked) + len(c.held) }

// inFlight reports whether id names a running or held request or an open
// subscription.
func (c *coordinator) inFlight(id string) bool {
	_, running := c.byID[id]
	_, listening := c.subs[id]
	return running || listening || len(c.held) > 0 && c.heldIndex(id) >= 0
}

// run is the job's work: it validates the envelope and dispatches the
// message. It runs on an executor worker and touches no coordinator state:
// the session and header are snapshots, kept in ex with env, and of ex it
// writes only the worker's side. It returns nil: its result is ex.result.
func (ex *execution) run(ctx context.Context) any {
	ex.result = ex.c.serve(ctx, ex)
	return nil
}

// serve is the body of run: it admits the message,
// dispatches it and builds the frame to write.
func (c *coordinator) serve(ctx context.Context, ex *execution) workResult {
	ex.peer = requestPeer{calls: c.t.calls, done: c.done, ex: ex}
	return serveEnvelope(ctx, c.t.dispatcher, &ex.req, ex.env, ex.id, &ex.peer)
}

// serveEnvelope admits env, a decoded message whose canonical id is id,
// into req, dispatches it to d with peer as the Peer of a request, and builds
// the frame to write (nil for a notification). Every transport serves a
// message through it.
func serveEnvelope(ctx context.Context, d Dispatcher, req *Request, env envelope, id string, peer Peer) workResult {
	ok, rpcErr := admit(req, env, id)
	if rpcErr != nil {
		return workResult{frame: errorFrame(id, rpcErr)}
	}
	if !ok {
		return workResult{}
	}
	if req.ID != nil {
		req.Peer = peer
	}
	r := d.Dispatch(ctx, req)
	switch {
	case req.ID == nil:
		return workResult{}
	case r.Error != nil:
		return workResult{frame: errorFrame(id, r.Error)}
	case r.Listen != nil:
		return workResult{reply: r}
	}
	return workResult{frame: replyFrame(id, &r), reply: r}
}

func (c *coordinator) onOutcome(o Outcome) error {
	var ex *execution
	if o.Key != "" {
		ex = c.byID[o.Key]
	} else {
		ex = c.untracked[o.Ref]
	}
	// Matched by reference, never by id: a cancelled id may name a newer
	// request already.
	if ex == nil || ex.job.ref != o.Ref {
		return nil // cancelled: its key was freed and its answer is never written
	}
	c.forget(ex)
	err := c.settle(ex, o)
	if ex.gates && err == nil {
		// The initialize's outcome is recorded (a success set the session
		// and header): what arrived behind it can select its dialect now.
		return c.releaseHeld()
	}
	return err
}

// settle records what the outcome o of ex changes on the connection and
// writes its answer, if any.
func (c *coordinator) settle(ex *execution, o Outcome) error {
	switch o.Kind {
	case OutcomeCompleted:
		res := ex.result
		if res.reply.Listen != nil {
			return c.openSubscription(ex.id, res.reply.Listen)
		}
		if res.reply.Subscribe != "" {
			if rpcErr := c.admitSubscribe(res.reply.Subscribe); rpcErr != nil {
				return c.write(errorFrame(ex.id, rpcErr))
			}
		}
		c.applyReply(res.reply)
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

// applyReply records what a successful reply changes on the connection,
// before the reply is written, so every later message sees it.
func (c *coordinator) applyReply(r Reply) {
	if r.Initialized != nil {
		c.session = *r.Initialized
		c.header = map[string]string{"mcp-protocol-version": r.Initialized.ProtocolVersion}
	}
	if r.LogLevel != "" {
		c.session.LogLevel = r.LogLevel
	}
	if r.Subscribe != "" {
		c.resourceSub[r.Subscribe] = true
	}
	if r.Unsubscribe != "" {
		delete(c.resourceSub, r.Unsubscribe)
	}
}

// subscriptions counts what MaxSubscriptions bounds: open listen streams and
// URIs subscribed with resources/subscribe, in one budget, since both are
// state the connection keeps for the client until it lets go.
func (c *coordinator) subscriptions() int { return len(c.subs) + len(c.resourceSub) }

// admitSubscribe decides a successful resources/subscribe of uri here, where
// the count is known (the worker that answered could not know it): nil when
// uri is subscribed already (it does not count twice) or fits, otherwise the
// -32602 that is written instead of the dispatcher's success.
func (c *coordinator) admitSubscribe(uri string) *RPCError {
	if err := subscriptionURIError(uri); err != nil {
		return err
	}
	if c.resourceSub[uri] || c.subscriptions() < c.t.opts.MaxSubscriptions {
		return nil
	}
	return errSubscriptionLimit(c.t.opts.MaxSubscriptions)
}

// forget drops a finished, cancelled or timed-out execution: its id is free
// and its server-to-client requests still waiting fail at once.
func (c *coordinator) forget(ex *execution) {
	ex.live = false
	if ex.gates {
		c.initializing--
	}
	if ex.id != "" {
		delete(c.byID, ex.id)
	} else {
		delete(c.untracked, ex.job.ref)
	}
	for _, id := range ex.outgoing {
		if out, ok := c.outgoing[id]; ok {
			delete(c.outgoing, id)
			out.reply <- peerReply{err: ErrRequestEnded}
		}
	}
}

// onEOF stops reading: open subscriptions close without a final message, and
// server-to-client requests fail, since no response can arrive any more.
func (c *coordinator) onEOF() {
	c.lines = nil
	clear(c.subs)
	for id, out := range c.outgoing {
		delete(c.outgoing, id)
		out.reply <- peerReply{err: ErrNoClientInput}
	}
}

// onCancel handles notifications/cancelled inline (SPEC §6.2): the named
// in-flight request is cancelled and forgotten at once, so nothing is ever
// written for it and its id can be reused by the very next line. Unknown ids
// and malformed params are ignored.
func (c *coordinator) onCancel(params []byte) {
	id, ok := cancelledID(params)
	if !ok {
		return
	}
	if _, ok := c.subs[id]; ok {
		delete(c.subs, id)
		return
	}
	if i := c.heldIndex(id); i >= 0 {
		if c.held[i].method != "initialize" {
			c.dropHeld(i)
		}
		return
	}
	ex, ok := c.byID[id]
	if !ok || ex.method == "initialize" {
		return
	}
	c.sub.cancelJob(&ex.job)
	c.forget(ex)
}

// cancelledID returns the canonical id that the params of
// notifications/cancelled name, or false when they are malformed (no
// trackable requestId, or a reason that is not a string).
func cancelledID(params []byte) (string, bool) {
	raw, ok := lookupMember(params, "requestId")
	if !ok {
		return "", false
	}
	if reason, ok := lookupMember(params, "reason"); ok {
		if _, isString := decodeString(reason); !isString {
			return "", false
		}
	}
	return canonicalID(raw)
}

// onPeerCall writes an application notification (Notify), or a running
// request's notification, or sends its server-to-client request, unless the
// request has ended.
func (c *coordinator) onPeerCall(call *peerCall) error {
	switch {
	case call.ex != nil && !call.ex.live:
		call.reply <- peerReply{err: ErrRequestEnded}
		return nil
	case call.frame != nil:
		err := c.writeAndWait(call.frame)
		call.reply <- peerReply{err: err}
		return err
	case c.lines == nil:
		call.reply <- peerReply{err: ErrNoClientInput}
		return nil
	}
	c.outgoingSeq++
	id := outgoingID(c.outgoingSeq)
	frame, err := requestFrame(id, call.method, call.params)
	if err != nil {
		call.reply <- peerReply{err: err}
		return nil
	}
	c.outgoing[id] = &outgoingRequest{ex: call.ex, reply: call.reply}
	call.ex.outgoing = append(call.ex.outgoing, id)
	return c.write(frame)
}

// onClientResponse routes the client's response to the server-to-client
// request waiting for it; any other response is dropped.
func (c *coordinator) onClientResponse(env envelope) {
	id, ok := canonicalID(env.id)
	if !ok {
		return
	}
	out, ok := c.outgoing[id]
	if !ok {
		return
	}
	delete(c.outgoing, id)
	out.ex.outgoing = slices.DeleteFunc(out.ex.outgoing, func(s string) bool { return s == id })
	out.reply <- clientResponse(env)
}

// openSubscription turns a listen request into an open stream and
// acknowledges it, or refuses it over MaxSubscriptions.
func (c *coordinator) openSubscription(id string, filter *ListenFilter) error {
	if c.subscriptions() >= c.t.opts.MaxSubscriptions {
		return c.write(errorFrame(id, errSubscriptionCapacity))
	}
	if c.lines == nil {
		return nil // end of input: it would be closed at once
	}
	c.subs[id] = &subscription{id: id, filter: filter}
	params := filter.Notifications
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	frame, err := notificationFrame("notifications/subscriptions/acknowledged", subscriptionParams(`{"notifications":`+string(params), id))
	if err != nil {
		return err
	}
	return c.write(frame)
}

// subscriptionParams closes the params object prefix with the _meta that tags
// a listen stream's frames.
func subscriptionParams(prefix, id string) json.RawMessage {
	if prefix == "{" {
		return json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}`)
	}
	return json.RawMessage(prefix + `,"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}`)
}

// onChanges forwards catalog changes: in the initialize era as list_changed
// and resources/updated notifications, on 2026 listen streams as tagged
// notifications to the streams that asked for them.
func (c *coordinator) onChanges(changes []Change) error {
	for _, change := range changes {
		if err := c.forwardChange(change); err != nil {
			return err
		}
	}
	return nil
}

func (c *coordinator) forwardChange(change Change) error {
	if change.Kind == SubscriptionsEnded {
		return c.endSubscriptions()
	}
	prefix, ok := changeParamsPrefix(change)
	if !ok {
		return nil
	}
	legacy := c.session.ProtocolVersion != "" && (change.Kind != ResourceUpdated || c.resourceSub[change.URI])
	if legacy {
		frame, err := legacyChangeFrame(change, prefix)
		if err == nil {
			if err := c.write(frame); err != nil {
				return err
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		if !c.subs[id].filter.wants(change) {
			continue
		}
		frame, err := notificationFrame(change.method(), subscriptionParams(prefix, id))
		if err != nil {
			continue
		}
		if err := c.write(frame); err != nil {
			return err
		}
	}
	return nil
}

// endSubscriptions ends every open listen stream from the server side with
// its final response, which carries its subscriptionId; the ids are free
// again.
func (c *coordinator) endSubscriptions() error {
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		delete(c.subs, id)
		if err := c.write(subscriptionEndFrame(id)); err != nil {
			return err
		}
	}
	return nil
}

// changeParamsPrefix returns the params of change's notification without
// their closing brace: "{" for a list change, `{"uri":…` for a resource
// update, `{"taskId":…` for a task's status; false when the URI cannot be
// encoded.
func changeParamsPrefix(change Change) (string, bool) {
	if change.Kind == TaskStatus {
		return change.taskParams, true
	}
	if change.Kind != ResourceUpdated {
		return "{", true
	}
	uri, err := marshalJSON(change.URI)
	if err != nil {
		return "", false
	}
	return `{"uri":` + string(uri), true
}

// legacyChangeFrame returns the initialize-era notification of change, whose
// params start with prefix (from changeParamsPrefix).
func legacyChangeFrame(change Change, prefix string) ([]byte, error) {
	if change.Kind == TaskStatus {
		return nil, errors.New("task status changes have no initialize-era notification")
	}
	var params json.RawMessage
	if prefix != "{" {
		params = json.RawMessage(prefix + "}")
	}
	return notificationFrame(change.method(), params)
}

// subscriptionEndFrame returns the final response that ends listen stream id
// from the server side; it carries the stream's subscriptionId.
func subscriptionEndFrame(id string) []byte {
	return resultFrame(id, json.RawMessage(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`}}`))
}

// onExecutorClosed answers every pending request -32603 "Request worker
// failed" and ends the connection.
func (c *coordinator) onExecutorClosed() error {
	pending := slices.AppendSeq(slices.Collect(maps.Values(c.byID)), maps.Values(c.untracked))
	pending = append(pending, c.held...)
	c.log.Error("mcpstdio: executor closed with requests pending", "pending", len(pending))
	for _, ex := range pending {
		if !ex.request {
			continue
		}
		if err := c.write(errorFrame(ex.id, errWorkerFailed)); err != nil {
			return err
		}
	}
	if err := c.outputFailed(c.writer.wait()); err != nil {
		return err
	}
	return ErrExecutorClosed
}
