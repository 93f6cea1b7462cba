package main

// The connection core: the state of one MCP connection and what each event
// does to it. Every transport drives it the same way:
//
//   - stdio: the coordinator (coordinator.go) owns one connection for the
//     whole stream;
//   - Streamable HTTP, initialize era: each session's owner goroutine
//     (http_session.go) owns the session's connection;
//   - Streamable HTTP, 2026-07-28: each POST's handler goroutine owns a
//     connection that serves that one request (http_stateless.go).
//
// A connection has no lock: its owner goroutine calls every method, and other
// goroutines (workers, handlers' Peers, the application's Notify) reach it
// through channels the owner selects on. It never waits on a handler, and it
// never writes itself: frames go to the owner's outlet, which never blocks on
// a client.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// route identifies where the frames answering one message go, as the
// transport that delivered the message defines it; the connection hands it
// back to its outlet untouched. It is nil on stdio, where every frame goes
// to the one output; over HTTP it is the POST that carried the message.
type route any

// outlet is how a connection's frames leave it. The owner's transport
// implements it; the connection calls it from the owner goroutine only.
// Neither method blocks on a client: a frame handed over is written later,
// after the frames handed over before it for the same route.
type outlet interface {
	// send hands over frame, a part of the answer to the message of r
	// (a notification or a server-to-client request it sends), or with r
	// nil a frame of the connection itself (a list change, an application
	// notification). done, when not nil, receives exactly one peerReply:
	// nil once the frame is written, or why it was not. An error is
	// terminal for the connection.
	send(r route, frame []byte, done chan<- peerReply) error
	// answer hands over the final frame of the answer to r, nil when there
	// is none (a notification, a cancelled request, a closed subscription):
	// nothing more is sent to r. An error is terminal for the connection.
	answer(r route, frame []byte) error
}

// connConfig is what a connection's transport decides for it.
type connConfig struct {
	dispatcher Dispatcher
	out        outlet
	sub        *Submitter // the connection's own; closed by close
	log        *slog.Logger
	// values is the context whose values handlers' contexts carry (see
	// jobContext.values); its cancellation is not theirs.
	values         context.Context
	requestTimeout time.Duration
	// maxSubscriptions bounds open listen streams and resources/subscribe
	// URIs together (see Options.MaxSubscriptions).
	maxSubscriptions int
	// listenQuota, when not nil, must also admit each listen stream: the
	// share of a client whose requests belong to no connection of their
	// own (2026-07-28 over HTTP).
	listenQuota quota
	// noClientRequests refuses Peer.Request: the transport has no way for
	// the client's response to come back (2026-07-28 over HTTP).
	noClientRequests bool
	sessionID        string
	transport        string // Request.Transport of every message
	// changes, when not nil, is the box the connection's catalog changes
	// arrive in (the owner passes them to onChanges): a listen stream that
	// opens first takes what is in it for the streams open before it, so
	// that it never gets a change older than itself.
	changes *changeBox
	// calls carries the Peer calls of running requests and the
	// application's Notify calls; the owner selects on it and passes each
	// to onPeerCall. Nil makes one (the stdio transport makes it first, for
	// Notify).
	calls chan *peerCall
	// observer, when not nil, sees each request and the session (observer.go).
	observer Observer
}

// quota is a count of something clients hold that a transport bounds across
// connections. take reports whether one more fits (and counts it); release
// gives one back. Safe for concurrent use.
type quota interface {
	take() bool
	release()
}

// connection is the state of one MCP connection. Every field is owned by the
// goroutine that drives it (its owner); see the file comment.
type connection struct {
	connConfig

	// done is closed by close: a Peer or Notify call waiting on the
	// connection gives up then.
	done chan struct{}

	session Session
	header  map[string]string // synthesized request headers; replaced, never mutated

	// Everything admitted and not yet answered: tracked requests by
	// canonical id, other messages (notifications, untracked ids) by
	// execution reference. Their maps are made when first needed.
	byID      executionsByID
	untracked map[ExecutionRef]*execution

	// Messages that arrived while an initialize was admitted and not
	// finished (initializing > 0), oldest first, with the sum of their
	// sizes. They are submitted, in order, once the initialize's outcome is
	// recorded, so that they select their dialect with it; until then their
	// ids count as in flight.
	held         []*execution
	heldBytes    int
	initializing int // admitted initialize requests not finished

	outgoing    map[string]*outgoingRequest // server-to-client requests by canonical id
	outgoingSeq uint64
	subs        map[string]*subscription // open listen streams by canonical id
	resourceSub map[string]bool          // URIs of resources/subscribe (initialize era)

	inputEnded bool // no more messages come: no client response can arrive

	sessionStart time.Time // when the observer was told of the session
}

// newConnection returns the connection cfg describes; its owner must call
// close when it is done with it.
func newConnection(cfg connConfig) *connection {
	c := new(connection)
	c.init(cfg)
	return c
}

// init makes c, a zero connection that may be part of a larger record of its
// owner's (an HTTP POST's), the connection cfg describes, as newConnection
// does.
func (c *connection) init(cfg connConfig) {
	if cfg.calls == nil {
		cfg.calls = make(chan *peerCall)
	}
	c.connConfig, c.done = cfg, make(chan struct{})
	c.sessionStarted()
}

// execution is a message the connection admitted and waits for. It is also
// the job that serves the message: its run method is the work, and job is
// the executor's record of it, so that one allocation serves a message.
type execution struct {
	conn   *connection
	route  route
	id     string // canonical id of a tracked request; "" otherwise
	method string
	// request is false for a notification, whose outcome writes nothing.
	request bool
	// live is true from its admission until it is answered, cancelled or
	// timed out.
	live bool
	// ended is set with live false, for the request's Peer to tell from
	// its own goroutine (see requestPeer).
	ended atomic.Bool
	// gates is set on an admitted initialize request: until its outcome is
	// recorded, later messages are held.
	gates bool
	// outgoing are the ids of its server-to-client requests still waiting.
	outgoing []string
	// header is the message's own request headers (message.header), nil
	// when it has none.
	header map[string]string

	// The executor's record of the job, which holds its execution reference
	// once admitted. The connection submits it unindexed (see
	// Submitter.submit): it refuses duplicate ids itself.
	job job

	// The worker's side: the envelope to admit, the Request admitted from
	// it, the Peer and the result. onMessage sets env and req's Session and
	// Header before the job is submitted; after that the owner never
	// touches env, req or peer. It reads result only after the job's
	// OutcomeCompleted arrived (the channel orders the worker's write before
	// that read), never for a job it cancelled or that timed out.
	env    envelope
	req    Request
	peer   requestPeer
	result workResult
	// span is the request's observed operation (observer.go), nil when
	// there is no observer; set by the owner before the job is submitted
	// and never changed (the worker reads it). spanEnded is the owner's.
	span      OperationSpan
	spanEnded bool
}

// runtimeExecution is an execution with room for the record a
// fastPathDispatcher keeps per request, so that it costs no allocation of its
// own.
type runtimeExecution struct {
	execution
	handlerSpace handlerRequestSpace
}

// newExecution allocates the execution of one admitted message.
func (c *connection) newExecution() *execution {
	if _, ok := c.dispatcher.(fastPathDispatcher); ok {
		rx := new(runtimeExecution)
		rx.req.handlerSpace = &rx.handlerSpace
		return &rx.execution
	}
	return new(execution)
}

// subscription is an open 2026 subscriptions/listen stream.
type subscription struct {
	id     string // the listen request's canonical id, also its subscriptionId
	route  route
	filter *ListenFilter
}

// workResult is what a worker hands back through the executor.
type workResult struct {
	frame []byte // nil: nothing to write
	reply Reply  // the dispatcher's reply, for its effects on the connection
}

// pending counts the executions admitted and not yet answered, and the
// messages held.
func (c *connection) pending() int { return c.byID.len() + len(c.untracked) + len(c.held) }

// close cancels all work still admitted; nothing more is written. Calls
// waiting on the connection fail.
func (c *connection) close() {
	c.abandonOperations()
	c.sessionEnded()
	c.sub.Close()
	close(c.done)
	for _, s := range c.subs {
		c.releaseListen(s)
	}
}

// message is a decoded message for a connection, with what its transport
// knows of it.
type message struct {
	env  envelope
	size int // its length on the wire, what the executor counts
	// route is where its answer goes.
	route route
	// header, when not nil, are the request headers it arrived with
	// (HTTP), lower-case names; the connection adds the negotiated
	// version. Nil: the connection's own synthesized header.
	header map[string]string
	// values, when not nil, is the context whose values its handler's
	// context carries (an HTTP request's); nil: the connection's.
	values context.Context
	// hold, when not nil, is the reservation of the message's bytes (an
	// HTTP body, counted from before it was read), which its job holds
	// instead of counting size.
	hold *Reservation
	// raw is the message's bytes, for a batch to be split into its
	// members (see onBatch); nil where the transport serves no batches.
	raw []byte
}

// onMessage runs steps 3 to 7 of the per-line pipeline (SPEC §4) for m.
// While an initialize is in flight the message is held instead of
// submitted.
func (c *connection) onMessage(m message) error {
	env, r := m.env, m.route
	if c.acceptsBatch(m) {
		return c.onBatch(m)
	}
	if env.isResponse() {
		c.onClientResponse(env)
		return c.answer(r, nil)
	}
	method, methodOK := decodeMethod(env.method)
	id, tracked := "", false
	if env.id != nil {
		id, tracked = canonicalID(env.id)
	}
	isNotification := env.kind == kindObject && env.id == nil && methodOK
	if isNotification && method == methodCancelled {
		c.onCancel(env.params)
		return c.answer(r, nil)
	}
	if tracked {
		if c.inFlight(id) {
			return c.answer(r, errorFrame(id, errDuplicateID))
		}
	} else {
		id = ""
	}
	ex := c.newExecution()
	ex.conn, ex.route, ex.id, ex.method, ex.request = c, r, id, method, !isNotification
	ex.env, ex.header = env, m.header
	ex.job.key, ex.job.work, ex.job.hold = id, ex, m.hold
	if m.hold == nil {
		ex.job.size = m.size
	}
	ex.job.ctx.values = c.values
	if m.values != nil {
		ex.job.ctx.values = m.values
	}
	if c.initializing > 0 {
		c.held = append(c.held, ex)
		c.heldBytes += m.size
		return nil
	}
	return c.submit(ex)
}

// submit hands ex to the executor with the connection's session and header
// as they are now, and tracks it; over capacity it is answered (a request)
// or dropped (a notification).
func (c *connection) submit(ex *execution) error {
	ex.req.Session, ex.req.Header, ex.req.SessionID, ex.req.Transport = c.session, c.header, c.sessionID, c.transport
	if ex.header != nil {
		ex.req.Header = ex.header
		if v := c.session.ProtocolVersion; v != "" && ex.method != methodInitialize {
			ex.header[headerProtocolVersion] = v
		}
	}
	c.startOperation(ex)
	ref, err := c.sub.submit(&ex.job, c.requestTimeout)
	switch {
	case errors.Is(err, ErrOverloaded):
		ex.endOperation(OperationEnd{Outcome: OperationRefused, ErrorCode: errCapacity.Code, ErrorMessage: errCapacity.Message, RefusedReason: "capacity"})
		return c.answer(ex.route, ex.errorFrame(errCapacity))
	case err != nil: // the executor closed under us
		ex.endOperation(OperationEnd{Outcome: OperationFailed, ErrorCode: errWorkerFailed.Code, ErrorMessage: errWorkerFailed.Message})
		if werr := c.answer(ex.route, ex.errorFrame(errWorkerFailed)); werr != nil {
			return werr
		}
		return ErrExecutorClosed
	}
	ex.live = true
	if ex.id != "" {
		c.byID.put(ex)
	} else {
		if c.untracked == nil {
			c.untracked = make(map[ExecutionRef]*execution)
		}
		c.untracked[ref] = ex
	}
	if ex.request && ex.method == methodInitialize {
		ex.gates = true
		c.initializing++
	}
	return nil
}

// errorFrame is the error answer to ex: the frame of e for a request, nil for
// a notification, which is never answered.
func (ex *execution) errorFrame(e *RPCError) []byte {
	if !ex.request {
		return nil
	}
	return errorFrame(ex.id, e)
}

// inFlight reports whether id names a running or held request or an open
// subscription.
func (c *connection) inFlight(id string) bool {
	running := c.byID.get(id) != nil
	_, listening := c.subs[id]
	return running || listening || len(c.held) > 0 && c.heldIndex(id) >= 0
}

// execute is the job's work: it validates the envelope and dispatches the
// message. It runs on an executor worker and touches no connection state:
// the session and header are snapshots, kept in ex with env, and of ex it
// writes only the worker's side. It returns nil: its result is ex.result.
func (ex *execution) execute(ctx context.Context) any {
	c := ex.conn
	ex.peer = requestPeer{calls: c.calls, done: c.done, ex: ex}
	ctx = ex.observedContext(ctx)
	ex.result = serveEnvelope(ctx, c.dispatcher, &ex.req, ex.env, ex.id, &ex.peer)
	return nil
}

// serveEnvelope admits env, a decoded message whose canonical id is id,
// into req, dispatches it to d with peer as the Peer of a request, and builds
// the frame to write (nil for a notification).
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
		return workResult{frame: errorFrame(id, r.Error), reply: r}
	case r.Listen != nil:
		return workResult{reply: r}
	}
	return workResult{frame: replyFrame(id, &r), reply: r}
}

// onOutcome settles the execution the outcome o is of. Outcomes are matched
// by execution reference, never by id: a cancelled id may name a newer
// request already, and the cancelled one was answered when it was cancelled.
func (c *connection) onOutcome(o Outcome) error {
	var ex *execution
	if o.Key != "" {
		ex = c.byID.get(o.Key)
	} else {
		ex = c.untracked[o.Ref]
	}
	if ex == nil || ex.job.ref != o.Ref {
		return nil
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
// answers it.
func (c *connection) settle(ex *execution, o Outcome) error {
	switch o.Kind {
	case OutcomeCompleted:
		res := ex.result
		ex.endAnswered(&res)
		if res.reply.Listen != nil {
			return c.openSubscription(ex, res.reply.Listen)
		}
		if res.reply.Subscribe != "" {
			if rpcErr := c.admitSubscribe(res.reply.Subscribe); rpcErr != nil {
				return c.answer(ex.route, errorFrame(ex.id, rpcErr))
			}
		}
		c.applyReply(res.reply)
		return c.answer(ex.route, res.frame)
	case OutcomeTimedOut:
		ex.endOperation(OperationEnd{Outcome: OperationTimedOut, ErrorCode: errRequestTimedOut.Code, ErrorMessage: errRequestTimedOut.Message})
		c.log.Warn("mcpstdio: request timed out", "method", ex.method, "id", ex.id)
		return c.answer(ex.route, ex.errorFrame(errRequestTimedOut))
	case OutcomeFailed:
		ex.endOperation(OperationEnd{Outcome: OperationFailed, ErrorCode: errWorkerFailed.Code, ErrorMessage: errWorkerFailed.Message})
		c.log.Error("mcpstdio: request worker failed", "method", ex.method, "id", ex.id, "panic", o.Panic)
		return c.answer(ex.route, ex.errorFrame(errWorkerFailed))
	}
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	return c.answer(ex.route, nil)
}

// applyReply records what a successful reply changes on the connection,
// before the reply is written, so every later message sees it.
func (c *connection) applyReply(r Reply) {
	if r.Initialized != nil {
		c.session = *r.Initialized
		c.header = map[string]string{headerProtocolVersion: r.Initialized.ProtocolVersion}
	}
	if r.LogLevel != "" {
		c.session.LogLevel = r.LogLevel
	}
	if r.Subscribe != "" {
		if c.resourceSub == nil {
			c.resourceSub = make(map[string]bool)
		}
		c.resourceSub[r.Subscribe] = true
	}
	if r.Unsubscribe != "" {
		delete(c.resourceSub, r.Unsubscribe)
	}
}

// subscriptions counts what MaxSubscriptions bounds: open listen streams and
// URIs subscribed with resources/subscribe, in one budget, since both are
// state the connection keeps for the client until it lets go.
func (c *connection) subscriptions() int { return len(c.subs) + len(c.resourceSub) }

// admitSubscribe decides a successful resources/subscribe of uri here, where
// the count is known (the worker that answered could not know it): nil when
// uri is subscribed already (it does not count twice) or fits, otherwise the
// -32602 that is written instead of the dispatcher's success.
func (c *connection) admitSubscribe(uri string) *RPCError {
	if err := subscriptionURIError(uri); err != nil {
		return err
	}
	if c.resourceSub[uri] || c.subscriptions() < c.maxSubscriptions {
		return nil
	}
	return errSubscriptionLimit(c.maxSubscriptions)
}

// forget drops a finished, cancelled or timed-out execution: its id is free
// and its server-to-client requests still waiting fail at once.
func (c *connection) forget(ex *execution) {
	ex.live = false
	ex.ended.Store(true)
	if ex.gates {
		c.initializing--
	}
	if ex.id != "" {
		c.byID.remove(ex.id)
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

// onInputEnd records that no more messages come: open subscriptions close
// without a final message, and server-to-client requests fail, since no
// response can arrive any more. Admitted requests go on and are answered.
func (c *connection) onInputEnd() error {
	c.inputEnded = true
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		if err := c.closeSubscription(id, nil); err != nil {
			return err
		}
	}
	for id, out := range c.outgoing {
		delete(c.outgoing, id)
		out.reply <- peerReply{err: ErrNoClientInput}
	}
	return nil
}

// onCancel handles notifications/cancelled inline (SPEC §6.2): the named
// in-flight request is cancelled and forgotten at once, so nothing is ever
// written for it and its id can be reused by the very next message; a named
// subscription closes without a final message. An initialize cannot be
// cancelled. Unknown ids and malformed params are ignored.
func (c *connection) onCancel(params []byte) error {
	id, ok := cancelledID(params)
	if !ok {
		return nil
	}
	if _, ok := c.subs[id]; ok {
		return c.closeSubscription(id, nil)
	}
	if i := c.heldIndex(id); i >= 0 {
		if ex := c.held[i]; ex.method != methodInitialize {
			ex.endOperation(OperationEnd{Outcome: OperationCancelled})
			c.dropHeld(i)
			return c.answer(ex.route, nil)
		}
		return nil
	}
	ex := c.byID.get(id)
	if ex == nil || ex.method == methodInitialize {
		return nil
	}
	return c.cancel(ex)
}

// cancelRoute cancels the requests whose answers go to r (one, or the
// members of a batch), as a notifications/cancelled naming them would (an
// initialize too: its client is gone): nothing more is sent to r.
func (c *connection) cancelRoute(r route) {
	c.held = slices.DeleteFunc(c.held, func(ex *execution) bool {
		if rootRoute(ex.route) != r {
			return false
		}
		ex.endOperation(OperationEnd{Outcome: OperationCancelled})
		c.heldBytes -= ex.job.size
		return true
	})
	for ex := range c.byID.all() {
		if rootRoute(ex.route) == r {
			c.stop(ex)
		}
	}
	for _, ex := range c.untracked {
		if rootRoute(ex.route) == r {
			c.stop(ex)
		}
	}
}

// stop cancels and forgets ex; what it held behind it goes on.
func (c *connection) stop(ex *execution) {
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	c.sub.cancelJob(&ex.job)
	c.forget(ex)
	if ex.gates {
		c.releaseHeld()
	}
}

// cancel stops ex, forgets it and ends its answer without a response.
func (c *connection) cancel(ex *execution) error {
	ex.endOperation(OperationEnd{Outcome: OperationCancelled})
	c.sub.cancelJob(&ex.job)
	c.forget(ex)
	return c.answer(ex.route, nil)
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

// onPeerCall writes a running request's notification or an application's
// (Notify), or sends a running request's server-to-client request, unless
// the request has ended.
func (c *connection) onPeerCall(call *peerCall) error {
	switch {
	case call.ex != nil && !call.ex.live:
		call.reply <- peerReply{err: ErrRequestEnded}
		return nil
	case call.frame != nil:
		return c.send(call.ex.routeOrNil(), call.frame, call.reply)
	case c.noClientRequests:
		call.reply <- peerReply{err: errNoClientRequests}
		return nil
	case c.inputEnded:
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
	if c.outgoing == nil {
		c.outgoing = make(map[string]*outgoingRequest)
	}
	c.outgoing[id] = &outgoingRequest{ex: call.ex, reply: call.reply}
	call.ex.outgoing = append(call.ex.outgoing, id)
	return c.send(call.ex.route, frame, nil)
}

// routeOrNil is ex's route, nil for no execution (an application's Notify).
func (ex *execution) routeOrNil() route {
	if ex == nil {
		return nil
	}
	return ex.route
}

// errNoClientRequests is what Peer.Request returns where the client's
// response has no way back (2026-07-28 over HTTP): that version asks the
// client with input_required results instead.
var errNoClientRequests = errors.New("mcpstdio: a 2026-07-28 request cannot send server-to-client requests; return an input_required result")

// onClientResponse routes the client's response to the server-to-client
// request waiting for it; any other response is dropped.
func (c *connection) onClientResponse(env envelope) {
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

// openSubscription turns the listen request ex into an open stream and
// acknowledges it, or refuses it over MaxSubscriptions (or the client's
// quota).
func (c *connection) openSubscription(ex *execution, filter *ListenFilter) error {
	if c.subscriptions() >= c.maxSubscriptions || c.listenQuota != nil && !c.listenQuota.take() {
		return c.answer(ex.route, errorFrame(ex.id, errSubscriptionCapacity))
	}
	if c.changes != nil {
		if err := c.onChanges(c.changes.take()); err != nil {
			return err
		}
	}
	s := &subscription{id: ex.id, route: ex.route, filter: filter}
	if c.inputEnded {
		c.releaseListen(s)
		return c.answer(ex.route, nil) // it would be closed at once
	}
	if c.subs == nil {
		c.subs = make(map[string]*subscription)
	}
	c.subs[ex.id] = s
	params := filter.Notifications
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	frame, err := notificationFrame(methodSubscriptionsAcknowledged, subscriptionParams(`{"notifications":`+string(params), ex.id))
	if err != nil {
		return err
	}
	return c.send(ex.route, frame, nil)
}

// closeSubscription closes the listen stream id with final, its final
// response (nil: none, as after a cancel); its id is free again.
func (c *connection) closeSubscription(id string, final []byte) error {
	s := c.subs[id]
	delete(c.subs, id)
	c.releaseListen(s)
	return c.answer(s.route, final)
}

// releaseListen gives a closed listen stream's place back to the client's
// quota.
func (c *connection) releaseListen(*subscription) {
	if c.listenQuota != nil {
		c.listenQuota.release()
	}
}

// onChanges forwards catalog changes: in the initialize era as list_changed
// and resources/updated notifications, on 2026 listen streams as tagged
// notifications to the streams that asked for them.
func (c *connection) onChanges(changes []Change) error {
	for _, change := range changes {
		if err := c.forwardChange(change); err != nil {
			return err
		}
	}
	return nil
}

func (c *connection) forwardChange(change Change) error {
	if change.Kind == SubscriptionsEnded {
		for _, id := range slices.Sorted(maps.Keys(c.subs)) {
			if err := c.closeSubscription(id, subscriptionEndFrame(id)); err != nil {
				return err
			}
		}
		return nil
	}
	prefix, ok := changeParamsPrefix(change)
	if !ok {
		return nil
	}
	legacy := c.session.ProtocolVersion != "" && (change.Kind != ResourceUpdated || c.resourceSub[change.URI])
	if legacy {
		if frame, err := legacyChangeFrame(change, prefix); err == nil {
			if err := c.send(nil, frame, nil); err != nil {
				return err
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.subs)) {
		s := c.subs[id]
		if !s.filter.wants(change) {
			continue
		}
		frame, err := notificationFrame(change.method(), subscriptionParams(prefix, id))
		if err != nil {
			continue
		}
		if err := c.send(s.route, frame, nil); err != nil {
			return err
		}
	}
	return nil
}

// onExecutorClosed answers every pending request -32603 "Request worker
// failed"; the connection cannot serve any more.
func (c *connection) onExecutorClosed() error {
	pending := slices.AppendSeq(slices.Collect(c.byID.all()), maps.Values(c.untracked))
	pending = append(pending, c.held...)
	c.log.Error("mcpstdio: executor closed with requests pending", "pending", len(pending))
	for _, ex := range pending {
		if err := c.answer(ex.route, ex.errorFrame(errWorkerFailed)); err != nil {
			return err
		}
	}
	return nil
}

// heldIndex is the position of the held request with canonical id in
// c.held, or -1.
func (c *connection) heldIndex(id string) int {
	for i, ex := range c.held {
		if ex.id == id {
			return i
		}
	}
	return -1
}

// dropHeld removes c.held[i] without answering it.
func (c *connection) dropHeld(i int) {
	c.heldBytes -= c.held[i].job.size
	c.held = slices.Delete(c.held, i, i+1)
}

// releaseHeld submits the held messages in arrival order, now that no
// initialize is in flight, until one of them is an initialize again: the
// rest then wait for that one.
func (c *connection) releaseHeld() error {
	for c.initializing == 0 && len(c.held) > 0 {
		ex := c.held[0]
		c.dropHeld(0)
		if err := c.submit(ex); err != nil {
			return err
		}
	}
	return nil
}

// holdFull reports whether the messages held behind an initialize reached
// their bound (linesBuffer messages or aheadBytes): the owner takes no more
// input until the initialize finishes.
func (c *connection) holdFull() bool {
	return len(c.held) >= linesBuffer || c.heldBytes >= aheadBytes
}
