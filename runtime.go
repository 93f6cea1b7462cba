package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// RuntimeOptions configure a Runtime. A zero value means the default, and a
// field says when it also takes Unlimited (see Unlimited for the rule every
// options struct follows).
type RuntimeOptions struct {
	// ServerInfo identifies the server; Name and Version are required.
	ServerInfo Implementation
	// Instructions, when set, is sent in initialize and server/discover
	// results.
	Instructions string
	// ProtocolVersions are the enabled versions in preference order; nil
	// enables all five, 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and
	// 2024-11-05, in that order. A version not listed is never negotiated,
	// discovered or served.
	ProtocolVersions []string
	// PageSize is the number of items per list page; 0 means 100.
	PageSize int
	// CacheTTLMs and CacheScope are the caching hints of 2026 list, read and
	// discover results: ttlMs >= 0 (default 0), scope "private" (default) or
	// "public".
	CacheTTLMs int64
	CacheScope string
	// ClientRequestTimeout bounds the wait for the client's answer to a
	// server-to-client request (initialize era), within the handler's
	// context: 0 means 60s; Unlimited leaves only the handler's context.
	ClientRequestTimeout time.Duration
	// RequestStateTTL is how long a 2026 requestState stays valid: 0 means
	// one hour; Unlimited means it never expires.
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
	// Tasks, when set, serve the tasks extension: TaskOptions (tasks.go)
	// say where tasks are kept and their bounds. It is advertised while a
	// tool declares task support. Nil serves no tasks: AddTool then refuses
	// a tool whose Execution supports them.
	Tasks TaskProvider
	// Logger receives diagnostics (handler panics, results that failed to
	// encode, and those of the tasks and skills served); nil:
	// slog.Default(). Never written to the protocol output.
	Logger *slog.Logger
	// Policy, when set, decides which tools, prompts and resources each
	// principal may see and use (policy.go). Results then differ per
	// principal, so CacheScope "public" is refused with it.
	Policy AccessPolicy
}

// Runtime serves the MCP protocol methods of one server: every protocol
// version and a catalog of tools, resources, resource templates, prompts and
// completions. It is a Dispatcher.
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

	// mu guards cat: registration writes it while Dispatch reads it from
	// many goroutines, and a read-write lock lets the reads, the common
	// case, run together. It is held only to read or replace entries, never
	// while calling out (a handler, the tasks, a change watcher: emit runs
	// after it is released).
	mu  sync.RWMutex
	cat catalog // guarded by mu

	plans planCache // of the types handlers bind and typed tools return

	watchers changeWatchers

	tasks runtimeTasks // set by NewRuntime; nil without RuntimeOptions.Tasks

	features features // what features registered (runtime_features.go)

	// middleware holds the Dispatchers Use installed, outermost first; nil
	// until it installs one. Use replaces the slice under useMu, never
	// modifies one it stored.
	middleware atomic.Pointer[[]Dispatcher]
	useMu      sync.Mutex

	// now is the clock that times inline calls (runtime_inline.go); set by
	// NewRuntime, replaced only by tests before serving.
	now func() time.Time
}

var _ fastPathDispatcher = (*Runtime)(nil)

// fillsRequestSpace marks the Runtime as a fastPathDispatcher: Dispatch builds
// its HandlerRequest in Request.handlerSpace when the transport provides it.
func (*Runtime) fillsRequestSpace() {}

// NewRuntime validates opts and returns an empty Runtime. The error names the
// first invalid option.
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	if err := validateRuntimeOptions(&opts); err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
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
		now:          time.Now,
	}
	rt.defaultLogLevel = opts.DefaultLogLevel
	rt.logging, rt.resourcesSubscribe = opts.Logging, opts.ResourcesSubscribe
	rt.policy = opts.Policy
	rt.listChanged[listTools] = opts.ToolsListChanged
	rt.listChanged[listPrompts] = opts.PromptsListChanged
	rt.listChanged[listResources] = opts.ResourcesListChanged
	rt.states, rt.clientRequestTimeout = states, opts.ClientRequestTimeout
	if rt.serverInfoJSON, err = marshalJSON(rt.info); err != nil {
		return nil, fmt.Errorf("mcpstdio: RuntimeOptions.ServerInfo: encoding it: %w", err)
	}
	if rt.serverInfoMeta, err = marshalJSON(map[string]json.RawMessage{metaKeyServerInfo: rt.serverInfoJSON}); err != nil {
		return nil, fmt.Errorf("mcpstdio: RuntimeOptions.ServerInfo: encoding it: %w", err)
	}
	if opts.Tasks != nil {
		if rt.tasks, err = opts.Tasks.tasksFor(rt); err != nil {
			return nil, fmt.Errorf("mcpstdio: %w", err)
		}
	}
	return rt, nil
}

// validateRuntimeOptions checks opts and fills in defaults. Its error
// names the first invalid field as RuntimeOptions.Field.
func validateRuntimeOptions(opts *RuntimeOptions) error {
	if opts.ServerInfo.Name == "" {
		return errors.New("RuntimeOptions.ServerInfo.Name is required")
	}
	if opts.ServerInfo.Version == "" {
		return errors.New("RuntimeOptions.ServerInfo.Version is required")
	}
	if opts.ProtocolVersions == nil {
		opts.ProtocolVersions = defaultProtocolVersions()
	}
	if err := validateVersions(opts.ProtocolVersions); err != nil {
		return fmt.Errorf("RuntimeOptions.ProtocolVersions: %w", err)
	}
	if err := checkOptions(
		checkOption("RuntimeOptions.PageSize", opts.PageSize),
		checkOption("RuntimeOptions.CacheTTLMs", opts.CacheTTLMs),
		checkOption("RuntimeOptions.ClientRequestTimeout", opts.ClientRequestTimeout, Unlimited),
		checkOption("RuntimeOptions.RequestStateTTL", opts.RequestStateTTL, Unlimited),
	); err != nil {
		return err
	}
	switch opts.CacheScope {
	case "":
		opts.CacheScope = CacheScopePrivate
	case CacheScopePrivate, CacheScopePublic:
	default:
		return fmt.Errorf("RuntimeOptions.CacheScope %q is neither %q nor %q", opts.CacheScope, CacheScopePrivate, CacheScopePublic)
	}
	if opts.Policy != nil && opts.CacheScope == CacheScopePublic {
		return errors.New(`RuntimeOptions.CacheScope "public" cannot go with a Policy: results differ per principal`)
	}
	if opts.StateKey != nil && len(opts.StateKey) < minStateKeyBytes {
		return fmt.Errorf("RuntimeOptions.StateKey is %d bytes, want at least %d", len(opts.StateKey), minStateKeyBytes)
	}
	if opts.DefaultLogLevel != "" && logSeverity(opts.DefaultLogLevel) < 0 {
		return fmt.Errorf("RuntimeOptions.DefaultLogLevel %q is not an MCP log level", opts.DefaultLogLevel)
	}
	defaultTo(&opts.PageSize, defaultPageSize)
	defaultTo(&opts.ClientRequestTimeout, defaultClientRequestTimeout)
	defaultTo(&opts.RequestStateTTL, defaultRequestStateTTL)
	opts.Logger = defaultLogger(opts.Logger)
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

// Dispatch serves one admitted message, through the middleware Use
// installed. Notifications (req.ID == nil) get an empty Reply. For a request
// it selects the dialect of the request's protocol version, then serves the
// method; handler panics are recovered and answered -32603 "Internal error".
// Dispatch returns when the handler it calls returns, so handlers must honour
// ctx.
func (rt *Runtime) Dispatch(ctx context.Context, req *Request) Reply {
	if layers := rt.middleware.Load(); layers != nil {
		return rt.dispatchThroughMiddleware(ctx, *layers, req)
	}
	return rt.dispatch(ctx, req)
}

// dispatch is Dispatch below the middleware.
func (rt *Runtime) dispatch(ctx context.Context, req *Request) Reply {
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
	case c.era != eraStateless && req.Method == methodInitialize:
		return rt.initialize(c)
	case c.era != eraStateless && req.Method == methodPing:
		return rt.resultReply(c, emptyResult{})
	case c.era == eraUnnegotiated:
		return Reply{Error: missingMetaError(c.meta != nil)}
	case c.era == eraStateless && req.Method == methodServerDiscover:
		return rt.discover(c)
	case c.era == eraStateless && req.Method == methodSubscriptionsListen:
		return rt.listen(ctx, c)
	case c.era == eraLegacy && req.Method == methodLoggingSetLevel && rt.logging:
		return rt.setLogLevel(c)
	case c.era == eraLegacy && req.Method == methodResourcesSubscribe && rt.resourcesSubscribe && rt.servesResources():
		return rt.subscribeResource(c, true)
	case c.era == eraLegacy && req.Method == methodResourcesUnsubscribe && rt.resourcesSubscribe && rt.servesResources():
		return rt.subscribeResource(c, false)
	}
	return rt.serveCatalog(ctx, c)
}

// serveCatalog serves the methods both dialects share.
func (rt *Runtime) serveCatalog(ctx context.Context, c *methodCall) Reply {
	switch c.req.Method {
	case methodToolsList:
		return rt.listTools(c)
	case methodToolsCall:
		return rt.callTool(ctx, c)
	case methodResourcesList:
		return rt.listResources(c)
	case methodResourcesTemplatesList:
		return rt.listResourceTemplates(c)
	case methodResourcesRead:
		return rt.readResource(ctx, c)
	case methodPromptsList:
		return rt.listPrompts(c)
	case methodPromptsGet:
		return rt.getPrompt(ctx, c)
	case methodCompletionComplete:
		return rt.complete(ctx, c)
	}
	if rt.tasks != nil && rt.tasks.serves(c.req.Method) {
		return rt.tasks.serve(ctx, *c)
	}
	if h := rt.featureMethodFor(c.req.Method); h != nil {
		return h(ctx, *c)
	}
	return Reply{Error: methodNotFound(c.req.Method)}
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
	var tasksName string
	if rt.tasks != nil {
		tasksName = rt.tasks.extensionName()
	}
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
	if rt.cat.taskTools > 0 { // AddTool refused them without rt.tasks
		if caps.Extensions == nil {
			caps.Extensions = map[string]json.RawMessage{}
		}
		caps.Extensions[tasksName] = json.RawMessage(`{}`)
	}
	return caps
}
