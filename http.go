package main

// The Streamable HTTP transport: one endpoint serves MCP over HTTP POST (and,
// for the initialize-era versions, GET and DELETE), sharing the Dispatcher,
// the executor and the admission code with the stdio transport.
//
//   - 2026-07-28 is stateless: every POST carries one request whose _meta names
//     its version; its headers mirror the body (http_headers.go). The answer is
//     one JSON object, or an SSE stream of the request's notifications and then
//     its response when it has notifications to send. Closing the stream
//     cancels the request.
//   - 2025-03-26, 2025-06-18 and 2025-11-25 run in sessions
//     (http_session.go): initialize creates one and names it in
//     Mcp-Session-Id; GET opens its stream of server-initiated messages;
//     DELETE ends it. Streams carry event ids and can be resumed with
//     Last-Event-ID (http_stream.go). A 2025-03-26 session also takes
//     JSON-RPC batches (conn_batch.go).

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTP transport defaults.
const (
	DefaultMaxBodyBytes       = 2_000_000
	DefaultMaxSessions        = 1024
	DefaultMaxListenStreams   = 1024
	DefaultSessionIdleTimeout = 30 * time.Minute
	DefaultKeepAlive          = 20 * time.Second
	DefaultSSERetry           = 2 * time.Second

	DefaultMaxSessionReplayBytes = 4 << 20
	DefaultMaxReplayBytes        = 64 << 20
	DefaultReadBodyTimeout       = 30 * time.Second
)

// CodeHeaderMismatch is the 2026-07-28 error for HTTP headers that do not
// mirror the request body.
const CodeHeaderMismatch = -32020

// HTTPOptions configure an HTTPHandler. A zero value means the default, and
// a field says when it also takes Unlimited or None (see Unlimited for the
// rule every options struct follows).
type HTTPOptions struct {
	// MaxBodyBytes limits one POST body (default 2,000,000); a longer one
	// is refused 413 without being read whole.
	MaxBodyBytes int
	// RequestTimeout is each request's deadline, counted from when it starts
	// running; 0 means the executor's default (30s), Unlimited none.
	RequestTimeout time.Duration
	// MaxSubscriptions limits what one client keeps subscribed (default
	// 32), as Options.MaxSubscriptions does on stdio: in a session, its
	// resources/subscribe URIs; without one (2026-07-28), the open
	// subscriptions/listen streams of one client, a client being the host of
	// the remote address. MaxListenStreams limits those of all clients
	// together (default 1024). A listen stream beyond either is answered
	// -32603 "Server subscription capacity exhausted".
	MaxSubscriptions int
	MaxListenStreams int
	// MaxSessions limits live initialize-era sessions (default 1024), which
	// clients share work-conservingly: a client alone may create them all.
	// At the cap an initialize takes the place of an idle session (no
	// request running, no stream open): the longest-idle one of the client
	// holding the most sessions, if that client holds at least two more
	// than the newcomer's, else the newcomer's own client's longest-idle
	// one. The session taken has ended: its client's next request is
	// answered 404, as after SessionIdleTimeout. When no session can be
	// taken the initialize is refused 503 with -32603 "Server session
	// capacity exhausted".
	MaxSessions int
	// MaxClientSessions is one client's share of MaxSessions (0, the
	// default: all of them). It binds only at the cap, and only what a
	// client takes from the others: a client holding fewer is waiting for
	// room, and its initialize may take another client's idle session; one
	// holding this many or more takes only its own idle sessions' places.
	// The client is as for the executor's shares (see ClientKey):
	// ClientKey's answer, else the principal, else the client address.
	MaxClientSessions int
	// SessionIdleTimeout ends a session with no request and no open stream
	// for this long (default 30 minutes).
	SessionIdleTimeout time.Duration
	// KeepAlive is the period of SSE comments on long-lived streams (GET
	// streams and subscriptions/listen), default 20s.
	KeepAlive time.Duration
	// WriteTimeout bounds each write of an answer, a JSON body or an SSE
	// event (default 5s, as Options.WriteTimeout): a response whose client
	// takes none of it for that long fails, and its request is then served
	// as one whose client left.
	WriteTimeout time.Duration
	// SSERetry is the reconnection delay an initialize-era SSE stream
	// announces in its retry field (default 2s).
	SSERetry time.Duration
	// MaxSessionReplayBytes bounds the bytes of the SSE events one session
	// keeps for Last-Event-ID replay (default 4 MiB); MaxReplayBytes bounds
	// those of all sessions together (default 64 MiB). The bytes counted are
	// the events' JSON frames, from when an event is sent (or queued for a
	// GET stream not connected) until its stream is dropped: its response
	// was delivered, or it ended and is no longer among the ended streams a
	// session keeps (docs/reference/bounds.md).
	// Beyond a bound the oldest ended streams go first, then the oldest
	// events (beyond MaxReplayBytes, those of the session keeping the
	// most); the event being sent is always kept. A Last-Event-ID whose
	// successors were dropped is refused 400, as an unknown one, and a
	// connection replaying a stream whose next events are dropped under it
	// ends, for the client to resume and learn so.
	MaxSessionReplayBytes int
	MaxReplayBytes        int
	// ReadBodyTimeout bounds reading one POST body, from when the handler
	// starts reading it (default 30s); a body that takes longer is answered
	// 408. It is a per-request read deadline, lifted once the body is read,
	// so long-lived response streams are not cut.
	ReadBodyTimeout time.Duration

	// AllowedHosts are Host header values (host or host:port, matched
	// case-insensitively) accepted besides loopback names; AllowedOrigins
	// are Origin values (scheme://host[:port]) accepted besides loopback
	// origins. Anything else is refused 403 (DNS-rebinding protection).
	AllowedHosts   []string
	AllowedOrigins []string

	// Executor runs the work. When nil the handler creates one with
	// MaxConcurrency, MaxQueue and MaxInflightBytes, as ExecutorOptions
	// define them (MaxQueue also takes Unlimited and None, MaxInflightBytes
	// Unlimited), and each client's share of them, and closes it in Close;
	// an injected executor is never closed by the handler. A POST's body
	// counts against MaxInflightBytes (and its client's share) from before
	// it is read until its answer is written: a body that does not fit is
	// refused 503 unread, with a -32603 "Server execution capacity
	// exhausted" error without id; a request over MaxConcurrency and
	// MaxQueue (or its client's share of them) is answered that error with
	// its id.
	Executor         *Executor
	MaxConcurrency   int
	MaxQueue         int
	MaxInflightBytes int
	// A client's share of MaxConcurrency, MaxQueue and MaxInflightBytes,
	// exactly as in ExecutorOptions: work-conserving, so a client alone may
	// use the whole executor, and a share binds only while other clients
	// wait. 0 (the default) means the whole limit. Only for the executor
	// the handler creates.
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int
	// ClientKey names the client a POST belongs to, for its share of the
	// executor; it is called before the body is read. When it is nil or
	// returns "", a POST belongs to the principal it was authorized as
	// (with Auth), else to the live session its Mcp-Session-Id names, else
	// to its client address (ClientAddress: the stateless requests of one
	// host share one client).
	ClientKey func(r *http.Request) string
	// TrustedProxies are the reverse proxies whose forwarded client address
	// is believed (Forwarded, X-Forwarded-For; see ClientAddress). Empty
	// (the default): none, and every request is its remote address.
	TrustedProxies []netip.Prefix

	// Logger receives diagnostics (nil: slog.Default()).
	Logger *slog.Logger

	// Observer, when set, sees every request and session (observer.go).
	Observer Observer

	// Auth, when set, makes the endpoint an OAuth 2.1 resource server
	// (auth.go): every request needs a valid access token, a bearer token
	// or (with AuthOptions.DPoP) a DPoP-bound one with its proof.
	Auth *AuthOptions
}

func (o *HTTPOptions) normalize() error {
	if err := checkOptions(
		checkOption("HTTPOptions.MaxBodyBytes", o.MaxBodyBytes),
		checkOption("HTTPOptions.RequestTimeout", o.RequestTimeout, Unlimited),
		checkOption("HTTPOptions.MaxSubscriptions", o.MaxSubscriptions),
		checkOption("HTTPOptions.MaxListenStreams", o.MaxListenStreams),
		checkOption("HTTPOptions.MaxSessions", o.MaxSessions),
		checkOption("HTTPOptions.MaxClientSessions", o.MaxClientSessions),
		checkOption("HTTPOptions.SessionIdleTimeout", o.SessionIdleTimeout),
		checkOption("HTTPOptions.KeepAlive", o.KeepAlive),
		checkOption("HTTPOptions.WriteTimeout", o.WriteTimeout),
		checkOption("HTTPOptions.SSERetry", o.SSERetry),
		checkOption("HTTPOptions.MaxSessionReplayBytes", o.MaxSessionReplayBytes),
		checkOption("HTTPOptions.MaxReplayBytes", o.MaxReplayBytes),
		checkOption("HTTPOptions.ReadBodyTimeout", o.ReadBodyTimeout),
		o.executorOptions().check("HTTPOptions"),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	if o.Executor != nil && (o.MaxConcurrency != 0 || o.MaxQueue != 0 || o.MaxInflightBytes != 0 ||
		o.MaxClientConcurrency != 0 || o.MaxClientQueue != 0 || o.MaxClientInflightBytes != 0) {
		return errors.New("mcpstdio: HTTPOptions.MaxConcurrency, MaxQueue, MaxInflightBytes and the client shares apply only when the handler creates its executor")
	}
	for _, origin := range o.AllowedOrigins {
		if u, err := url.Parse(origin); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("mcpstdio: HTTPOptions.AllowedOrigins: %q is not scheme://host[:port]", origin)
		}
	}
	o.AllowedHosts = append([]string(nil), o.AllowedHosts...)
	o.AllowedOrigins = append([]string(nil), o.AllowedOrigins...)
	o.TrustedProxies = append([]netip.Prefix(nil), o.TrustedProxies...)
	defaultTo(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	defaultTo(&o.MaxSubscriptions, DefaultMaxSubscriptions)
	defaultTo(&o.MaxSessions, DefaultMaxSessions)
	defaultTo(&o.MaxListenStreams, DefaultMaxListenStreams)
	defaultTo(&o.SessionIdleTimeout, DefaultSessionIdleTimeout)
	defaultTo(&o.KeepAlive, DefaultKeepAlive)
	defaultTo(&o.WriteTimeout, DefaultWriteTimeout)
	defaultTo(&o.SSERetry, DefaultSSERetry)
	defaultTo(&o.MaxSessionReplayBytes, DefaultMaxSessionReplayBytes)
	defaultTo(&o.MaxReplayBytes, DefaultMaxReplayBytes)
	defaultTo(&o.ReadBodyTimeout, DefaultReadBodyTimeout)
	o.Logger = defaultLogger(o.Logger)
	return nil
}

// HTTPHandler serves one MCP server over Streamable HTTP. Construct it with
// NewHTTPHandler and mount it where clients are to reach it: it serves MCP
// at whatever path the mux routes to it (mux.Handle("/mcp", h),
// http.StripPrefix), never comparing the path with one of its own. With
// HTTPOptions.Auth, mount ProtectedResourceMetadata's handler beside it. It
// is safe for concurrent use, as http.Handler requires. When the server
// shuts down, call Shutdown (with, or before, the http.Server's), or Close
// to stop at once.
//
// Each initialize-era session is a connection owned by one goroutine at a
// time, which runs only while the session has work (http_session.go,
// http_session_run.go); each 2026-07-28 POST is a connection owned by the
// POST's goroutine (http_stateless.go). What the handler itself shares
// between them is below, each part with its own lock and the reason for it.
type HTTPHandler struct {
	opts       HTTPOptions // validated; read-only after NewHTTPHandler
	dispatcher Dispatcher
	executor   *Executor
	ownsExec   bool
	auth       *authGate // nil without HTTPOptions.Auth
	// runtime is dispatcher when it is a *Runtime itself (not a type that
	// embeds one), which reads fewer request headers while it has no
	// middleware (see messageHeader); nil otherwise.
	runtime *Runtime
	// headerValues are the answers' header values (read-only).
	headerValues *responseHeaderValues
	// posts keeps 2026 POST records for reuse (takePost, recyclePost).
	posts sync.Pool

	sessions  sessionTable
	clients   clientTable  // of the POSTs, by key
	replay    replayBudget // of the sessions' SSE events
	listens   clientQuota  // open 2026 subscriptions/listen streams, per client
	changes   changeHub    // the boxes of sessions and listen streams
	stopWatch func()

	quit      chan struct{} // closed by endStreams: long-lived streams end
	quitOnce  sync.Once
	closeOnce sync.Once

	drain drainState // calls, messages and body reads in flight, for Shutdown (http_drain.go)
}

// NewHTTPHandler validates opts and returns a handler that serves d. An
// invalid option is reported as an error naming it.
func NewHTTPHandler(d Dispatcher, opts HTTPOptions) (*HTTPHandler, error) {
	if d == nil {
		return nil, errors.New("mcpstdio: nil Dispatcher")
	}
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	h := &HTTPHandler{
		opts:       opts,
		dispatcher: d,
		executor:   opts.Executor,
		stopWatch:  func() {},
		quit:       make(chan struct{}),

		headerValues: newResponseHeaderValues(),
	}
	h.runtime, _ = d.(*Runtime)
	if opts.Auth != nil {
		gate, err := newAuthGate(opts.Auth, h.forwardedOrigin)
		if err != nil {
			return nil, err
		}
		h.auth = gate
	}
	h.sessions = sessionTable{max: opts.MaxSessions, perClient: cmp.Or(opts.MaxClientSessions, opts.MaxSessions), epoch: time.Now(), owners: newOwnerPool(), byID: make(map[string]*httpSession), byClient: make(map[clientName]int)}
	h.replay = replayBudget{total: int64(opts.MaxReplayBytes), kept: make(map[*httpSession]int64)}
	h.listens = clientQuota{perClient: opts.MaxSubscriptions, total: opts.MaxListenStreams, held: make(map[string]int)}
	h.changes.boxes = make(map[changeReceiver]struct{})
	if h.executor == nil {
		e, err := NewExecutor(opts.executorOptions())
		if err != nil {
			return nil, fmt.Errorf("mcpstdio: %w", err)
		}
		h.executor, h.ownsExec = e, true
	} else {
		go h.sessions.wakeOnClose(h.executor.done)
	}
	h.clients.init(h.executor)
	if src, ok := d.(ChangeSource); ok {
		h.stopWatch = src.WatchChanges(h.changes.put)
	}
	return h, nil
}

// endStreams ends every long-lived stream (GET streams and 2026
// subscriptions/listen streams) and makes new ones end at once, and from
// then on requests are answered "Server shutting down" (closing); requests
// in flight go on. Idempotent.
func (h *HTTPHandler) endStreams() {
	h.quitOnce.Do(func() { close(h.quit) })
}

// Close stops the handler at once: it ends all streams and sessions, cancels
// the work still running, stops watching the dispatcher's changes and closes
// the executor the handler created; calls still in flight are answered
// "Server shutting down" or end as their client left. Shutdown calls it
// when drained. Idempotent.
func (h *HTTPHandler) Close() {
	h.endStreams()
	h.closeOnce.Do(func() {
		h.stopWatch()
		for _, s := range h.sessions.all() {
			s.stop()
		}
		h.sessions.owners.close()
		if h.ownsExec {
			h.executor.Close()
		}
	})
}

// ServeHTTP serves MCP at r's path, whatever it is.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.drain.calls.begin()
	defer h.drain.calls.end()
	if !h.allowedHost(r.Host) {
		httpError(w, http.StatusForbidden, "Forbidden: Host header is not allowed")
		return
	}
	if origin := firstHeader(r.Header, headerOrigin); origin != "" && !h.allowedOrigin(origin) {
		httpError(w, http.StatusForbidden, "Forbidden: Origin header is not allowed")
		return
	}
	if h.auth != nil {
		if r = h.auth.admit(w, r); r == nil {
			return
		}
	}
	if refuseRepeatedRoutingHeader(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r)
	case http.MethodGet:
		h.serveGet(w, r)
	case http.MethodDelete:
		h.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// httpError answers status with a JSON-RPC error without id, as the spec
// allows for HTTP-level refusals.
func httpError(w http.ResponseWriter, status int, message string) {
	writeJSONFrame(w, status, httpErrorFrame(status, message))
}

// httpErrorFrame is the body of an HTTP-level refusal: a JSON-RPC error
// without id, -32603 for a server error, else -32600.
func httpErrorFrame(status int, message string) []byte {
	code := CodeInvalidRequest
	if status >= 500 {
		code = CodeInternalError
	}
	return errorFrame("", &RPCError{Code: code, Message: message})
}

// writeJSONFrame answers status with one frame as application/json.
func writeJSONFrame(w http.ResponseWriter, status int, frame []byte) {
	w.Header().Set("Content-Type", mediaTypeJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(frame)))
	w.WriteHeader(status)
	w.Write(frame)
}

// allowedHost reports whether the Host header names a loopback host or one
// of AllowedHosts.
func (h *HTTPHandler) allowedHost(hostport string) bool {
	if isLoopbackHost(hostport) {
		return true
	}
	host := hostWithoutPort(hostport)
	for _, allowed := range h.opts.AllowedHosts {
		if strings.EqualFold(allowed, hostport) || strings.EqualFold(allowed, host) {
			return true
		}
	}
	return false
}

// allowedOrigin reports whether origin is a loopback origin or one of
// AllowedOrigins.
func (h *HTTPHandler) allowedOrigin(origin string) bool {
	for _, allowed := range h.opts.AllowedOrigins {
		if strings.EqualFold(allowed, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Host)
}

func hostWithoutPort(hostport string) string {
	// An IPv4 address or a name with a port, as most are, is cut at its
	// one colon without SplitHostPort.
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.ContainsAny(hostport[:i], ":[]") {
		return hostport[:i]
	}
	if strings.Contains(hostport, ":") { // else SplitHostPort fails, at the cost of an error value
		if host, _, err := net.SplitHostPort(hostport); err == nil {
			return host
		}
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopbackHost reports whether hostport names localhost or a loopback IP.
func isLoopbackHost(hostport string) bool {
	host := hostWithoutPort(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	// As net.ParseIP (which refuses zones) and IP.IsLoopback, without the
	// slice ParseIP makes.
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// statelessStatus is the HTTP status of a 2026-07-28 response whose error
// code is code: the one table of where HTTP answers a JSON-RPC outcome
// differently from stdio. Every other answer of the connection core is sent
// 200 (a session's, whatever it holds, as the initialize-era transport says)
// or 202 (a notification's, a response's); the statuses of HTTP's own
// refusals (403, 404, 405, 406, 409, 413, 415, 503) are the handler's, before
// a message reaches a connection.
func statelessStatus(code int) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeInvalidParams, CodeHeaderMismatch, CodeMissingCapability, CodeUnsupportedVersion, CodeParseError, CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// errShuttingDown answers requests that arrive once Shutdown or Close was
// called.
var errShuttingDown = &RPCError{Code: CodeInternalError, Message: "Server shutting down"}

// closing reports whether Shutdown or Close was called (endStreams).
func (h *HTTPHandler) closing() bool {
	select {
	case <-h.quit:
		return true
	default:
		return false
	}
}
