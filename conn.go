package main

// The connection core: the state of one MCP connection and what each event
// does to it. Every transport drives it with the one owner loop
// (serveConnection, conn_loop.go), supplying its side of it:
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
// a client. Its parts: this file (admission), conn_outcome.go (outcomes,
// answers),
// conn_cancel.go (cancellation, messages held behind an initialize),
// conn_subscriptions.go (listen streams, subscriptions, catalog changes),
// conn_peer.go (server-to-client calls), conn_batch.go (2025-03-26 batches)
// and conn_executions.go (the table of executions by id).

import (
	"context"
	"errors"
	"log/slog"
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
	// answer hands over the final frame of the answer to r, with its error
	// code (f.frame nil when there is none: a notification, a cancelled
	// request, a closed subscription): nothing more is sent to r. An error
	// is terminal for the connection.
	answer(r route, f finalFrame) error
}

// finalFrame is the last frame of a message's answer as the connection
// built it, typed: code is the JSON-RPC error code the frame carries, 0 for
// a result (or a batch's array, or no frame). A transport that answers
// errors differently (HTTP statuses) reads code, never the frame.
type finalFrame struct {
	frame []byte
	code  int
}

// noAnswer is the answer of a message that gets none.
var noAnswer = finalFrame{}

// errorAnswer is the error e answered to the request whose canonical id is
// id ("": null).
func errorAnswer(id string, e *RPCError) finalFrame {
	return finalFrame{frame: errorFrame(id, e), code: e.Code}
}

// connConfig is what a connection's transport decides for it.
type connConfig struct {
	dispatcher Dispatcher
	out        outlet
	sub        *submitter // the connection's own; closed by close
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
	// own (2026-07-28 over HTTP), or a counter that admits every stream
	// (stdio's, for Transport.ListenStreams).
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
	// executorDone, when not nil, is closed when an injected executor
	// closes (Executor.Done): the owner loop then answers what is pending
	// and ends.
	executorDone <-chan struct{}
	// beforeChanges, when not nil, runs on the owner each time the changes
	// box signals, before its changes are forwarded: an HTTP session gives
	// back the replay bytes another session's owner asked for through the
	// same signal (httpSession.askShed).
	beforeChanges func()
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
	untracked map[executionRef]*execution

	// Messages that arrived while an initialize was admitted and not
	// finished (initializing > 0), oldest first, with the sum of their
	// sizes. They are submitted, in order, once the initialize's outcome is
	// recorded, so that they select their dialect with it; until then their
	// ids count as in flight.
	held         []*execution
	heldBytes    int
	initializing int // admitted initialize requests not finished
	// heldArrays are the texts of the JSON arrays among held, by their
	// execution: once the initialize's outcome is recorded, each is served
	// as a batch if the version it negotiated takes batches, else refused.
	heldArrays map[*execution][]byte

	// spare is an answered inline request's record, which the next message
	// takes instead of an allocation (see recycle).
	spare *runtimeExecution

	outgoing    map[string]*outgoingRequest // server-to-client requests by canonical id
	outgoingSeq uint64
	subs        map[string]*subscription // open listen streams by canonical id
	resourceSub map[string]bool          // URIs of resources/subscribe (initialize era)

	inputEnded bool // no more messages come: no client response can arrive

	sessionStart time.Time // when the observer was told of the session
	// endErr is what ended the owner loop (serveConnection's result), for
	// the observer's SessionEnded; nil for a normal end.
	endErr error
	// subUnregistered says sub is not registered yet (a
	// lazySubmitterOutlet's; see submitter).
	subUnregistered bool
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
	c.connConfig = cfg
	_, c.subUnregistered = cfg.out.(lazySubmitterOutlet)
	if !c.subUnregistered {
		c.makeChannels()
	}
	c.sessionStarted()
}

// makeChannels makes the channels a worker's Peer reaches the owner by
// (calls, unless the transport made it) and learns of its end by (done). A
// lazySubmitterOutlet's connection makes them with its submitter, before it
// submits a job: an inline request's Peer uses neither.
func (c *connection) makeChannels() {
	if c.calls == nil {
		c.calls = make(chan *peerCall)
	}
	c.done = make(chan struct{})
}

// A lazySubmitterOutlet is an outlet whose connection's submitter is
// registered with its executor (registerSubmitter, on the owner) only when
// the connection first needs it, to submit a job: a 2026 HTTP POST, whose
// one request an Inline tool serves on the owner without a worker, then
// never registers one (no outcome channel, no executor lock) and makes no
// channels for workers' Peers (makeChannels). Until then the submitter's
// outcomes channel and the connection's calls are nil, never ready.
type lazySubmitterOutlet interface {
	registerSubmitter()
}

// submitter returns the connection's submitter, registered.
func (c *connection) submitter() *submitter {
	if c.subUnregistered {
		c.subUnregistered = false
		c.makeChannels()
		c.out.(lazySubmitterOutlet).registerSubmitter()
	}
	return c.sub
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
	// gates is set on an admitted initialize request: until its outcome is
	// recorded, later messages are held.
	gates bool
	// ended is set with live false, for the request's Peer to tell from
	// its own goroutine (see requestPeer).
	ended atomic.Bool
	// outgoing are the ids of its server-to-client requests still waiting.
	outgoing []string
	// header is the message's own request headers (message.header), nil
	// when it has none.
	header map[string]string

	// The executor's record of the job, which holds its execution reference
	// once admitted. The connection submits it unindexed (see
	// submitter.submit): it refuses duplicate ids itself.
	job job

	// The worker's side: the envelope to admit, the Request admitted from
	// it, the Peer and the result. onMessage sets env and req's Session and
	// Header before the job is submitted; after that the owner never
	// touches env, req or peer. It reads result only after the job's
	// outcomeCompleted arrived (the channel orders the worker's write before
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
	// inline is set by the owner before an inline request runs (see
	// conn_inline.go).
	inline bool
	// answerClaimed and answerRefused are the worker's, read like result:
	// the dispatcher admitted its answer's bytes before building it
	// (claimAnswer), or was refused them and answered the overload error.
	answerClaimed, answerRefused bool
	// notes keeps what an inline request's handler sends while it runs,
	// when it has no side record.
	notes inlineNotes
	// own is the record newExecution allocated ex in, which the connection
	// may recycle; nil for a record of the transport's (message.space).
	own *runtimeExecution
}

// runtimeExecution is an execution with room for the record a
// fastPathDispatcher keeps per request, so that it costs no allocation of its
// own.
type runtimeExecution struct {
	execution
	handlerSpace handlerRequestSpace
}

// newExecution returns the execution of one admitted message: space, a
// zero record of the transport's (message.space), when not nil, else a new
// one.
func (c *connection) newExecution(space *runtimeExecution) *execution {
	_, fast := c.dispatcher.(fastPathDispatcher)
	var own *runtimeExecution
	switch {
	case space == nil && !fast:
		return new(execution)
	case space == nil && c.spare != nil:
		own, c.spare = c.spare, nil
		*own = runtimeExecution{}
	case space == nil:
		own = new(runtimeExecution)
	}
	if own != nil {
		space = own
		space.own = own
	}
	if fast {
		space.req.handlerSpace = &space.handlerSpace
	}
	return &space.execution
}

// recycle keeps ex's record for the connection's next message, when
// newExecution allocated it. The caller has answered ex, an inline request:
// nothing holds the record any more, as its handler was given only what is
// in its side record (inlineSide), and the executor never had it.
func (c *connection) recycle(ex *execution) {
	if ex.own != nil && !ex.own.handlerSpace.claimed.Load() {
		c.spare = ex.own
	}
}

// workResult is what a worker hands back through the executor.
type workResult struct {
	answer finalFrame // its frame nil: nothing to write
	reply  Reply      // the dispatcher's reply, for its effects on the connection
}

// pending counts the executions admitted and not yet answered, and the
// messages held.
func (c *connection) pending() int { return c.byID.len() + len(c.untracked) + len(c.held) }

// dropEmptyMaps lets go of the maps of executions and server-to-client
// requests when they hold none: an empty map keeps what it grew to, which
// a connection that waits long for its next message (a parked HTTP
// session) need not hold. The next message makes them again.
func (c *connection) dropEmptyMaps() {
	if c.byID.len() == 0 {
		c.byID.m = nil
	}
	if len(c.untracked) == 0 {
		c.untracked = nil
	}
	if len(c.outgoing) == 0 {
		c.outgoing = nil
	}
}

// close cancels all work still admitted; nothing more is written. Calls
// waiting on the connection fail.
func (c *connection) close() {
	c.abandonOperations()
	c.sessionEnded()
	if !c.subUnregistered {
		c.sub.close()
		close(c.done)
	}
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
	hold *reservation
	// raw is the message's bytes, for a batch to be split into its
	// members (see onBatch); nil where the transport serves no batches.
	raw []byte
	// space, when not nil, is a zero record the message's execution may
	// take instead of an allocation of its own, part of a larger record
	// of the transport's for this one message (an HTTP POST's); the
	// connection keeps it as long as the execution. A batch's members get
	// none.
	space *runtimeExecution
}

// onMessage runs steps 3 to 7 of the per-line pipeline
// (docs/explanation/contract.md, "The per-line pipeline") for m. While an
// initialize is in flight the message is held instead of submitted.
func (c *connection) onMessage(m message) error {
	env, r := m.env, m.route
	if c.acceptsBatch(m) {
		return c.onBatch(m)
	}
	if env.isResponse() {
		c.onClientResponse(env)
		return c.answer(r, noAnswer)
	}
	method, methodOK := decodeMethod(env.method)
	id, tracked := "", false
	if env.id != nil {
		id, tracked = canonicalID(env.id)
	}
	isNotification := env.isNotification(methodOK)
	if isNotification && method == methodCancelled {
		c.onCancel(env.params)
		return c.answer(r, noAnswer)
	}
	if tracked {
		if c.inFlight(id) {
			return c.refuseDuplicate(r, method, id, env.params, m.values)
		}
	} else {
		id = ""
	}
	ex := c.newExecution(m.space)
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
		if env.kind == kindArray && m.raw != nil {
			if c.heldArrays == nil {
				c.heldArrays = make(map[*execution][]byte)
			}
			c.heldArrays[ex] = m.raw
		}
		return nil
	}
	return c.submit(ex)
}

// submit hands ex to the executor with the connection's session and header
// as they are now, and tracks it; over capacity it is answered (a request)
// or dropped (a notification).
func (c *connection) submit(ex *execution) error {
	ex.req.Session, ex.req.Header, ex.req.SessionID, ex.req.Transport = c.session, c.header, c.sessionID, c.transport
	ex.req.answers = ex
	if ex.header != nil {
		ex.req.Header = ex.header
		if v := c.session.ProtocolVersion; v != "" && ex.method != methodInitialize {
			ex.header[headerProtocolVersion] = v
		}
	}
	c.startOperation(ex)
	if d := c.inlineDispatcherFor(ex); d != nil {
		return c.runInline(ex, d)
	}
	ref, err := c.submitter().submit(&ex.job, c.requestTimeout)
	switch {
	case errors.Is(err, errOverloaded):
		ex.endOperation(OperationEnd{Outcome: OperationRefused, ErrorCode: errCapacity.Code, ErrorMessage: errCapacity.Message, RefusedReason: "capacity"})
		return c.answer(ex.route, ex.errorAnswer(errCapacity))
	case err != nil: // the executor closed under us
		ex.endOperation(OperationEnd{Outcome: OperationFailed, ErrorCode: errWorkerFailed.Code, ErrorMessage: errWorkerFailed.Message})
		if werr := c.answer(ex.route, ex.errorAnswer(errWorkerFailed)); werr != nil {
			return werr
		}
		return ErrExecutorClosed
	}
	ex.live = true
	if ex.id != "" {
		c.byID.put(ex)
	} else {
		if c.untracked == nil {
			c.untracked = make(map[executionRef]*execution)
		}
		c.untracked[ref] = ex
	}
	if ex.request && ex.method == methodInitialize {
		ex.gates = true
		c.initializing++
	}
	return nil
}

// errorAnswer is the error answer to ex: e for a request, none for a
// notification, which is never answered.
func (ex *execution) errorAnswer(e *RPCError) finalFrame {
	if !ex.request {
		return noAnswer
	}
	return errorAnswer(ex.id, e)
}

// refuseDuplicate answers the request of r, whose tracked id names one in
// flight, "Duplicate in-flight request id" (step 6 of the per-line
// pipeline).
func (c *connection) refuseDuplicate(r route, method, id string, params []byte, values context.Context) error {
	c.observeRefused(method, id, params, values, errDuplicateID, "duplicate_id")
	return c.answer(r, errorAnswer(id, errDuplicateID))
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
	ex.serve(ctx, c.dispatcher, &ex.peer)
	return nil
}

// serve dispatches ex's message to d with ctx and peer (its own Peer, or an
// inline request's) and keeps the result.
func (ex *execution) serve(ctx context.Context, d Dispatcher, peer *requestPeer) {
	ex.result = serveEnvelope(ex.observedContext(ctx), d, &ex.req, ex.env, ex.id, peer)
}

// serveEnvelope admits env, a decoded message whose canonical id is id,
// into req, dispatches it to d with peer as the Peer of a request, and builds
// the frame to write (nil for a notification).
func serveEnvelope(ctx context.Context, d Dispatcher, req *Request, env envelope, id string, peer Peer) workResult {
	ok, rpcErr := admit(req, env, id)
	if rpcErr != nil {
		return workResult{answer: errorAnswer(id, rpcErr)}
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
		return workResult{answer: errorAnswer(id, r.Error), reply: r}
	case r.Listen != nil:
		return workResult{reply: r}
	}
	return workResult{answer: finalFrame{frame: replyFrame(id, &r)}, reply: r}
}
