package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Cache scopes of 2026 cacheable results.
const (
	CacheScopePrivate = "private"
	CacheScopePublic  = "public"
)

const defaultPageSize = 100

// RuntimeOptions configure a Runtime. A zero value means the default.
type RuntimeOptions struct {
	// ServerInfo identifies the server; Name and Version are required.
	ServerInfo Implementation
	// Instructions, when set, is sent in initialize and server/discover
	// results.
	Instructions string
	// ProtocolVersions are the enabled versions in preference order; nil
	// enables 2026-07-28, 2025-11-25 and 2025-06-18, in that order. A version
	// not listed is never negotiated, discovered or served.
	ProtocolVersions []string
	// PageSize is the number of items per list page; 0 means 100.
	PageSize int
	// CacheTTLMs and CacheScope are the caching hints of 2026 list, read and
	// discover results: ttlMs >= 0 (default 0), scope "private" (default) or
	// "public".
	CacheTTLMs int64
	CacheScope string
	// ClientRequestTimeout bounds the wait for the client's answer to a
	// server-to-client request (initialize era, SPEC §10.1), within the
	// handler's context: 0 means 60s; a negative value leaves only the
	// handler's context.
	ClientRequestTimeout time.Duration
	// RequestStateTTL is how long a 2026 requestState stays valid (SPEC
	// §10.2): 0 means one hour; a negative value means it never expires.
	RequestStateTTL time.Duration
	// StateKey is the secret that signs pagination cursors and 2026
	// requestStates, so that replicas given the same StateKey accept each
	// other's; nil draws a random key, and then only this Runtime accepts
	// them. It must be at least 32 bytes; NewRuntime does not keep it.
	StateKey []byte
	// ToolsListChanged, PromptsListChanged and ResourcesListChanged set
	// listChanged in the advertised capabilities.
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	// Logging advertises the logging capability: handlers send log messages
	// with HandlerRequest.Log, and initialize-era clients may call
	// logging/setLevel.
	Logging bool
	// ResourcesSubscribe advertises resources.subscribe: clients may
	// subscribe to resources (resources/subscribe, or resourceSubscriptions
	// of subscriptions/listen) and get the updates NotifyResourceUpdated
	// announces.
	ResourcesSubscribe bool
	// DefaultLogLevel, when set, is the level of notifications/message sent
	// to an initialize-era connection before it calls logging/setLevel;
	// empty means none are sent until it does.
	DefaultLogLevel string
	// Tasks configure the tasks extension (tasks.go): where tasks are kept
	// and their bounds. It is advertised while a tool declares task support.
	Tasks TaskOptions
	// Logger receives diagnostics (handler panics, results that failed to
	// encode); nil discards them. Never written to the protocol output.
	Logger *slog.Logger
	// Policy, when set, decides which tools, prompts and resources each
	// principal may see and use (policy.go). Results then differ per
	// principal, so CacheScope "public" is refused with it.
	Policy AccessPolicy
}

// Runtime serves the MCP protocol methods of one server: the three dialects
// (SPEC §7) and a catalog of tools, resources, resource templates, prompts
// and completions (SPEC §8). It is a Dispatcher.
//
// A Runtime is safe for concurrent use: Dispatch runs concurrently with
// itself and with registration and removal, which may happen while serving.
type Runtime struct {
	// Asking the client (ask.go); set by NewRuntime, read-only afterwards.
	states               requestStateCodec
	clientRequestTimeout time.Duration

	// Set by NewRuntime; read-only afterwards.
	info           Implementation
	instructions   string
	versions       versionSet
	pageSize       int
	ttlMs          int64
	cacheScope     string
	listChanged    [kindCount]bool
	logger         *slog.Logger
	cursors        cursorCodec
	serverInfoJSON json.RawMessage // info, encoded
	serverInfoMeta json.RawMessage // {"io.modelcontextprotocol/serverInfo": info}

	defaultLogLevel    string
	logging            bool
	resourcesSubscribe bool
	policy             AccessPolicy

	mu  sync.RWMutex
	cat catalog // guarded by mu

	plans planCache // of the types handlers bind and typed tools return

	watchers changeWatchers

	tasks *taskManager // set by NewRuntime

	features features // what features registered (runtime_features.go)
}

var _ fastPathDispatcher = (*Runtime)(nil)

// fillsRequestSpace marks the Runtime as a fastPathDispatcher: Dispatch builds
// its HandlerRequest in Request.handlerSpace when the transport provides it.
func (*Runtime) fillsRequestSpace() {}

// NewRuntime validates opts and returns an empty Runtime. The error names the
// first invalid option.
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	if err := validateRuntimeOptions(&opts); err != nil {
		return nil, fmt.Errorf("runtime options: %w", err)
	}
	cursors, err := newCursorCodec(opts.StateKey)
	if err != nil {
		return nil, err
	}
	states, err := newRequestStateCodec(opts.StateKey, opts.RequestStateTTL)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		info:         cloneImplementation(opts.ServerInfo),
		instructions: opts.Instructions,
		versions:     versionSet(slices.Clone(opts.ProtocolVersions)),
		pageSize:     opts.PageSize,
		ttlMs:        opts.CacheTTLMs,
		cacheScope:   opts.CacheScope,
		logger:       opts.Logger,
		cursors:      cursors,
		cat:          newCatalog(),
	}
	rt.defaultLogLevel = opts.DefaultLogLevel
	rt.logging, rt.resourcesSubscribe = opts.Logging, opts.ResourcesSubscribe
	rt.policy = opts.Policy
	rt.listChanged[listTools] = opts.ToolsListChanged
	rt.listChanged[listPrompts] = opts.PromptsListChanged
	rt.listChanged[listResources] = opts.ResourcesListChanged
	rt.states, rt.clientRequestTimeout = states, opts.ClientRequestTimeout
	if rt.serverInfoJSON, err = marshalJSON(rt.info); err != nil {
		return nil, fmt.Errorf("runtime options: encoding ServerInfo: %w", err)
	}
	if rt.serverInfoMeta, err = marshalJSON(map[string]json.RawMessage{metaKeyServerInfo: rt.serverInfoJSON}); err != nil {
		return nil, fmt.Errorf("runtime options: encoding ServerInfo: %w", err)
	}
	if rt.tasks, err = newTaskManager(opts.Tasks, opts.Logger, rt.emit); err != nil {
		return nil, fmt.Errorf("runtime options: %w", err)
	}
	return rt, nil
}

// validateRuntimeOptions checks opts and fills in defaults.
func validateRuntimeOptions(opts *RuntimeOptions) error {
	if opts.ServerInfo.Name == "" {
		return errors.New("ServerInfo.Name is required")
	}
	if opts.ServerInfo.Version == "" {
		return errors.New("ServerInfo.Version is required")
	}
	if opts.ProtocolVersions == nil {
		opts.ProtocolVersions = defaultProtocolVersions()
	}
	if err := validateVersions(opts.ProtocolVersions); err != nil {
		return fmt.Errorf("ProtocolVersions: %w", err)
	}
	switch {
	case opts.PageSize < 0:
		return fmt.Errorf("PageSize %d is negative", opts.PageSize)
	case opts.PageSize == 0:
		opts.PageSize = defaultPageSize
	}
	if opts.CacheTTLMs < 0 {
		return fmt.Errorf("CacheTTLMs %d is negative", opts.CacheTTLMs)
	}
	switch opts.CacheScope {
	case "":
		opts.CacheScope = CacheScopePrivate
	case CacheScopePrivate, CacheScopePublic:
	default:
		return fmt.Errorf("CacheScope %q is neither %q nor %q", opts.CacheScope, CacheScopePrivate, CacheScopePublic)
	}
	if opts.Policy != nil && opts.CacheScope == CacheScopePublic {
		return errors.New(`CacheScope "public" cannot go with a Policy: results differ per principal`)
	}
	if opts.StateKey != nil && len(opts.StateKey) < minStateKeyBytes {
		return fmt.Errorf("StateKey is %d bytes, want at least %d", len(opts.StateKey), minStateKeyBytes)
	}
	if opts.DefaultLogLevel != "" && logSeverity(opts.DefaultLogLevel) < 0 {
		return fmt.Errorf("DefaultLogLevel %q is not an MCP log level", opts.DefaultLogLevel)
	}
	defaultTo(&opts.ClientRequestTimeout, defaultClientRequestTimeout)
	defaultTo(&opts.RequestStateTTL, defaultRequestStateTTL)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func cloneImplementation(i Implementation) Implementation {
	i.Icons = slices.Clone(i.Icons)
	return i
}

// ProtocolVersions returns the enabled protocol versions in preference order.
func (rt *Runtime) ProtocolVersions() []string { return slices.Clone(rt.versions) }

// methodCall is one request being dispatched: the transport's request, its params
// decoded one level deep, and what dialect selection learned.
type methodCall struct {
	rt     *Runtime
	req    *Request
	params paramsObject
	dialectInfo
	logThreshold string
	// principal is whom the request's token speaks for (its context's
	// Principal), nil without one.
	principal *Principal
}

// binding is what the cursors and requestStates issued to c are bound to.
func (c *methodCall) binding() string { return principalBinding(c.principal) }

// Dispatch serves one admitted message. Notifications (req.ID == nil) get an
// empty Reply. For a request it selects the dialect (SPEC §7), then serves
// the method; handler panics are recovered and answered -32603 "Internal
// error". Dispatch returns when the handler it calls returns, so handlers
// must honour ctx.
func (rt *Runtime) Dispatch(ctx context.Context, req *Request) Reply {
	if req.ID == nil {
		return Reply{}
	}
	// c is filled in place: its parts are large enough that copying them
	// shows in the profile.
	c := &methodCall{rt: rt, req: req, principal: PrincipalFromContext(ctx)}
	if rerr := decodeParams(req, &c.params); rerr != nil {
		return Reply{Error: rerr}
	}
	if rerr := rt.versions.resolve(req, &c.params, &c.dialectInfo); rerr != nil {
		return Reply{Error: rerr}
	}
	c.logThreshold = rt.logThreshold(c)
	switch {
	case c.era != eraStateless && req.Method == "initialize":
		return rt.initialize(c)
	case c.era != eraStateless && req.Method == "ping":
		return rt.resultReply(c, emptyResult{})
	case c.era == eraUnnegotiated:
		return Reply{Error: missingMetaError(c.meta != nil)}
	case c.era == eraStateless && req.Method == "server/discover":
		return rt.discover(c)
	case c.era == eraStateless && req.Method == "subscriptions/listen":
		return rt.listen(ctx, c)
	case c.era == eraLegacy && req.Method == "logging/setLevel" && rt.logging:
		return rt.setLogLevel(c)
	case c.era == eraLegacy && req.Method == "resources/subscribe" && rt.resourcesSubscribe && rt.servesResources():
		return rt.subscribeResource(c, true)
	case c.era == eraLegacy && req.Method == "resources/unsubscribe" && rt.resourcesSubscribe && rt.servesResources():
		return rt.subscribeResource(c, false)
	}
	return rt.serveCatalog(ctx, c)
}

// serveCatalog serves the methods both dialects share.
func (rt *Runtime) serveCatalog(ctx context.Context, c *methodCall) Reply {
	switch c.req.Method {
	case "tools/list":
		return rt.listTools(c)
	case "tools/call":
		return rt.callTool(ctx, c)
	case "resources/list":
		return rt.listResources(c)
	case "resources/templates/list":
		return rt.listResourceTemplates(c)
	case "resources/read":
		return rt.readResource(ctx, c)
	case "prompts/list":
		return rt.listPrompts(c)
	case "prompts/get":
		return rt.getPrompt(ctx, c)
	case "completion/complete":
		return rt.complete(ctx, c)
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		return rt.serveTasks(ctx, c)
	}
	if h := rt.featureMethodFor(c.req.Method); h != nil {
		return h(ctx, *c)
	}
	return Reply{Error: methodNotFound(c.req.Method)}
}

// HandlerRequest is what a tool, prompt, resource or completion handler
// learns about the request it serves. Handlers must not modify it.
type HandlerRequest struct {
	// Method is the protocol method, e.g. "tools/call".
	Method string
	// ProtocolVersion is the version the request is served under.
	ProtocolVersion string
	// ClientInfo and ClientCapabilities are the client's Implementation and
	// capabilities objects: from initialize in the legacy era, from the
	// request's _meta in 2026-07-28. ClientInfo is nil when the client sent
	// none.
	ClientInfo         json.RawMessage
	ClientCapabilities json.RawMessage
	// Meta is the request's params._meta as sent, nil when absent.
	Meta json.RawMessage
	// SessionID identifies the connection or HTTP session the request
	// arrived on ("" for a 2026-07-28 request over HTTP); see
	// Request.SessionID.
	SessionID string
	// Principal is whom the request's access token speaks for (see
	// PrincipalFromContext); nil when the request carries none.
	Principal *Principal
	// Name is the tool or prompt name (for a completion, the prompt name).
	Name string
	// URI is the resource URI being read (for a completion, the template).
	URI string
	// Arguments is the arguments object of tools/call or prompts/get ({}
	// when the request had none).
	Arguments json.RawMessage
	// ask is the asking state of a tools/call, prompts/get or
	// resources/read (ask.go), inline so that it costs no allocation;
	// ask.enabled is false for other methods.
	ask askState
	// Variables are the values a resource template's variables matched,
	// percent-decoded; nil for a static resource.
	Variables map[string]string

	// validArguments is Arguments as Dispatch validated them (strict JSON,
	// see decodeEnvelope); nil for a HandlerRequest built outside
	// Dispatch. See argumentsValidated.
	validArguments json.RawMessage

	rt            *Runtime        // nil for a HandlerRequest built outside Dispatch
	peer          Peer            // nil when there is no client to reach
	task          *taskRun        // a tools/call that may become a task; else nil
	progressToken json.RawMessage // the request's _meta.progressToken, nil when absent
	logThreshold  string          // see Runtime.logThreshold
	progress      progressState
}

// Bind decodes Arguments into v, a non-nil pointer, as encoding/json does
// except that a member binds only to the field whose json name (or Go name,
// when untagged) is exactly its key, case included; members that match no
// field are ignored (bind.go has the details). A value that does not fit
// gives an *ArgumentError whose message names the argument, such as
// `Invalid arguments: "ms" must be an integer`; the detail goes to the
// runtime's Logger at debug level. A tool handler returns that error as is:
// the client sees a result with isError true and that message.
func (r *HandlerRequest) Bind(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		err := &ArgumentError{Problem: "cannot be bound", cause: fmt.Sprintf("Bind needs a non-nil pointer, got %T", v)}
		r.logBindFailure(err)
		return err
	}
	var plans *planCache
	if r.rt != nil {
		plans = &r.rt.plans
	}
	args, b := r.Arguments, binder{validated: r.argumentsValidated()}
	if !b.validated {
		args = bytes.TrimRight(args[skipJSONSpace(args, 0):], " \t\r\n")
		if len(args) > 0 && !json.Valid(args) {
			err := &ArgumentError{Problem: "must be a JSON object", cause: "Arguments is not valid JSON text"}
			r.logBindFailure(err)
			return err
		}
	}
	return r.bindValue(args, rv.Elem(), plans.planFor(rv.Type().Elem()), b)
}

// setArguments sets Arguments to args, a JSON object Dispatch validated
// (strict JSON, see decodeEnvelope, without surrounding whitespace).
func (r *HandlerRequest) setArguments(args json.RawMessage) {
	r.Arguments, r.validArguments = args, args
}

// argumentsValidated reports whether Arguments are the very bytes
// setArguments was given, so that binding them need not check them again.
// Arguments a handler replaced do not qualify.
func (r *HandlerRequest) argumentsValidated() bool {
	return len(r.Arguments) > 0 && len(r.validArguments) == len(r.Arguments) && &r.validArguments[0] == &r.Arguments[0]
}

// bindValue binds args, validated JSON text without surrounding whitespace,
// to v following p, with b's rules; empty args are {}. A failure is logged
// and returned as an *ArgumentError.
func (r *HandlerRequest) bindValue(args json.RawMessage, v reflect.Value, p *typePlan, b binder) error {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := b.bind(args, v, p); err != nil {
		r.logBindFailure(err)
		return err
	}
	return nil
}

func (r *HandlerRequest) logBindFailure(err *ArgumentError) {
	r.logger().Debug("arguments did not bind", "method", r.Method, "name", r.Name, "argument", err.Path, "problem", err.Problem, "cause", err.cause)
}

// logger returns the runtime's logger, or one that discards.
func (r *HandlerRequest) logger() *slog.Logger {
	if r.rt == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.rt.logger
}

// HasClientCapability reports whether the client declared the named
// top-level capability (e.g. "sampling", "elicitation", "roots") as an
// object.
func (r *HandlerRequest) HasClientCapability(name string) bool {
	var caps map[string]json.RawMessage
	if json.Unmarshal(r.ClientCapabilities, &caps) != nil {
		return false
	}
	return isJSONObject(caps[name])
}

// RequireClientCapability returns nil when the client declared the named
// capability, else an *RPCError -32021 whose data.requiredCapabilities names
// it. A handler returns that error as is to refuse the request.
func (r *HandlerRequest) RequireClientCapability(name string) error {
	if r.HasClientCapability(name) {
		return nil
	}
	return &RPCError{
		Code:    CodeMissingCapability,
		Message: "Missing required client capability: " + name,
		Data:    map[string]any{"requiredCapabilities": map[string]struct{}{name: {}}},
	}
}

// handlerRequestSpace is room for one HandlerRequest, kept with a message's
// other per-message state. It is used at most once: the first Dispatch of the
// Request that refers to it claims it, and a HandlerRequest built there is
// never reused, so a handler may keep it as it may keep one it was given
// fresh.
type handlerRequestSpace struct {
	claimed atomic.Bool
	req     HandlerRequest
}

// newHandlerRequest returns a zero HandlerRequest: the one in req's
// handlerSpace the first time, a new one afterwards (a Request dispatched
// twice, or a copy of it) and when there is none.
func (req *Request) newHandlerRequest() *HandlerRequest {
	if s := req.handlerSpace; s != nil && s.claimed.CompareAndSwap(false, true) {
		return &s.req
	}
	return new(HandlerRequest)
}

// handlerRequest starts the HandlerRequest of c. It sets the fields one by
// one on the zero HandlerRequest: assigning a whole one would copy all of it.
func (c *methodCall) handlerRequest() *HandlerRequest {
	r := c.req.newHandlerRequest()
	r.Method, r.ProtocolVersion = c.req.Method, c.version
	r.ClientInfo, r.ClientCapabilities, r.Meta = c.clientInfo, c.clientCapabilities, c.meta
	r.peer, r.progressToken, r.logThreshold = c.req.Peer, c.progressToken, c.logThreshold
	r.rt, r.SessionID, r.Principal = c.rt, c.req.SessionID, c.principal
	return r
}

// panicError is the error a recovered handler panic becomes.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.value) }

// runHandler calls fn, turning a panic into a *panicError after logging it
// with its stack.
func runHandler[T any](rt *Runtime, c *methodCall, subject string, fn func() (T, error)) (res T, err error) {
	defer func() {
		if v := recover(); v != nil {
			rt.logger.Error("handler panicked", "method", c.req.Method, "subject", subject, "panic", v, "stack", string(debug.Stack()))
			err = &panicError{value: v}
		}
	}()
	return fn()
}

// handlerErrorReply answers a handler's failure for methods whose failures are
// JSON-RPC errors: an *RPCError is sent as is; anything else (a panic
// included) is logged and answered -32603 "Internal error".
func (rt *Runtime) handlerErrorReply(c *methodCall, subject string, err error) Reply {
	if rerr, ok := errors.AsType[*RPCError](err); ok {
		return Reply{Error: rerr}
	}
	var p *panicError
	if !errors.As(err, &p) {
		rt.logger.Error("handler failed", "method", c.req.Method, "subject", subject, "err", err)
	}
	return Reply{Error: internalError()}
}

// resultReply encodes v. A failure to encode is logged and answered -32603.
func (rt *Runtime) resultReply(c *methodCall, v any) Reply {
	b, err := marshalJSON(v)
	if err != nil {
		rt.logger.Error("encoding a result failed", "method", c.req.Method, "err", err)
		return Reply{Error: internalError()}
	}
	return Reply{Result: b}
}

// envelope returns the envelope fields of a result of c: nothing but the
// handler's _meta in the legacy era; in 2026 resultType "complete", _meta
// with serverInfo merged into the handler's _meta, and for a cacheable
// result ttlMs and cacheScope. handlerMeta, when set, must be a JSON object.
func (rt *Runtime) envelope(c *methodCall, cacheable bool, handlerMeta json.RawMessage) (resultEnvelope, error) {
	if c.era != eraStateless {
		if len(handlerMeta) > 0 && !isJSONObject(handlerMeta) {
			return resultEnvelope{}, errors.New("result _meta is not a JSON object")
		}
		return resultEnvelope{Meta: handlerMeta}, nil
	}
	env := resultEnvelope{ResultType: "complete", Meta: rt.serverInfoMeta}
	if len(handlerMeta) > 0 {
		var merged map[string]json.RawMessage
		if !isJSONObject(handlerMeta) || json.Unmarshal(handlerMeta, &merged) != nil {
			return resultEnvelope{}, errors.New("result _meta is not a JSON object")
		}
		merged[metaKeyServerInfo] = rt.serverInfoJSON
		var err error
		if env.Meta, err = marshalJSON(merged); err != nil {
			return resultEnvelope{}, err
		}
	}
	if cacheable {
		ttl := rt.ttlMs
		env.TTLMs = &ttl
		env.CacheScope = rt.cacheScope
	}
	return env, nil
}

// envelopeReply builds the envelope of c and hands it to build, which returns
// the complete result to encode.
func (rt *Runtime) envelopeReply(c *methodCall, cacheable bool, handlerMeta json.RawMessage, build func(resultEnvelope) any) Reply {
	env, err := rt.envelope(c, cacheable, handlerMeta)
	if err != nil {
		rt.logger.Error("building a result failed", "method", c.req.Method, "err", err)
		return Reply{Error: internalError()}
	}
	return rt.resultReply(c, build(env))
}

func invalidParams(msg string) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: msg}
}

func methodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

func internalError() *RPCError {
	return &RPCError{Code: CodeInternalError, Message: "Internal error"}
}

// serverCapabilities is what the runtime advertises: exactly the kinds that
// are registered.
type serverCapabilities struct {
	Completions *struct{}       `json:"completions,omitempty"`
	Logging     *struct{}       `json:"logging,omitempty"`
	Prompts     *listCapability `json:"prompts,omitempty"`
	Resources   *listCapability `json:"resources,omitempty"`
	Tools       *listCapability `json:"tools,omitempty"`
	// Extensions lists the extensions served, each with its settings
	// object: the tasks extension while a tool declares task support, and
	// those features declare (runtime_features.go).
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

type listCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// capabilities reports what the catalog serves now.
func (rt *Runtime) capabilities() serverCapabilities {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	var caps serverCapabilities
	if rt.logging {
		caps.Logging = &struct{}{}
	}
	if rt.cat.completers > 0 {
		caps.Completions = &struct{}{}
	}
	if len(rt.cat.prompts.list) > 0 {
		caps.Prompts = &listCapability{ListChanged: rt.listChanged[listPrompts]}
	}
	if len(rt.cat.resources.list) > 0 || len(rt.cat.templates.list) > 0 {
		caps.Resources = &listCapability{Subscribe: rt.resourcesSubscribe, ListChanged: rt.listChanged[listResources]}
	}
	if len(rt.cat.tools.list) > 0 {
		caps.Tools = &listCapability{ListChanged: rt.listChanged[listTools]}
	}
	caps.Extensions = rt.declaredExtensions()
	if rt.cat.taskTools > 0 {
		if caps.Extensions == nil {
			caps.Extensions = map[string]json.RawMessage{}
		}
		caps.Extensions[TasksExtension] = json.RawMessage(`{}`)
	}
	return caps
}
