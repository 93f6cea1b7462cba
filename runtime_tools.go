package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	// Name is 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is a JSON Schema object with "type": "object", sent
	// verbatim (any JSON Schema 2020-12 keyword is kept); nil means
	// {"type":"object"}. Its "required" list is enforced before the handler
	// runs.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when set, is a JSON Schema object sent verbatim.
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	// Execution, when set, says whether calls may run as tasks (the tasks
	// extension, tasks.go); its taskSupport is sent to 2025-11-25 clients
	// only, the version whose Tool defines it.
	Execution *ToolExecution  `json:"execution,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"` // a JSON object, or nil
	// Inline says the handler returns at once: it never blocks (no I/O, no
	// waiting on locks, channels or the client) and does little work. The
	// connection's owner then runs its calls itself, with no hand-off to an
	// executor worker and back, and so it runs the Runtime's middleware
	// (Runtime.Use) on them: while the call runs, the owner reads nothing
	// from its client, not even a cancellation. Such a call takes no
	// worker, has no RequestTimeout and cannot be cancelled; its progress
	// and log notifications are written before its answer (16 at most), and
	// a request to the client (sampling, elicitation, roots) fails with
	// ErrInlineRequest. A call that holds the owner for more than 5 ms,
	// middleware included, is logged once per tool, at warning level, to
	// RuntimeOptions.Logger, with the tool's name: such a tool should not be
	// Inline. A tool that supports tasks cannot be inline. Never sent to
	// clients.
	Inline bool `json:"-"`
	// A client of an older protocol version is sent only the fields its
	// version defines (dialect.tool): no Icons before 2025-11-25; no Title,
	// OutputSchema or Meta before 2025-06-18; no Annotations before
	// 2025-03-26; no Execution but to 2025-11-25.
}

// ToolAnnotations are hints about a tool's behaviour.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ToolResult is the result of a tool call.
type ToolResult struct {
	Content []Content
	// StructuredContent, when non-nil, is encoded with encoding/json as
	// "structuredContent".
	StructuredContent any
	// IsError reports a failure of the tool itself, for the model to see.
	IsError bool
	Meta    json.RawMessage // a JSON object, or nil
}

// TextResult returns a result of one text content block.
func TextResult(text string) *ToolResult {
	// One allocation holds the result and its block.
	r := &struct {
		result ToolResult
		block  [1]Content
	}{block: [1]Content{TextContent(text)}}
	r.result.Content = r.block[:]
	return &r.result
}

// ToolHandler runs a tool. req.Name is the tool's name and req.Arguments its
// arguments object. An error that is an *RPCError (see errors.As) is sent as
// that JSON-RPC error; any other error becomes a result with isError true and
// the error's text, for the model to see. A nil result with a nil error is an
// empty result.
type ToolHandler func(ctx context.Context, req *HandlerRequest) (*ToolResult, error)

type toolEntry struct {
	tool     Tool
	required []string // inputSchema.required
	handler  ToolHandler
	inline   *inlineCalls // serves its calls on the owner; nil unless tool.Inline
}

// The task support a tool declares (ToolExecution.TaskSupport; the
// execution.taskSupport of a 2025-11-25 tools/list).
const (
	// TaskForbidden (or "") : calls are never tasks.
	TaskForbidden = "forbidden"
	// TaskOptional: a call from a client that declared the extension may
	// become a task; one from any other client runs as an ordinary request.
	TaskOptional = "optional"
	// TaskRequired: only a client that declared the extension on the
	// request may call the tool; any other gets -32021.
	TaskRequired = "required"
)

// ToolExecution is how a tool's calls run (tools/list "execution"). Task
// support is served by the runtime's tasks (RuntimeOptions.Tasks): without
// them AddTool refuses a tool that supports tasks.
type ToolExecution struct {
	// TaskSupport is TaskForbidden (or ""), TaskOptional or TaskRequired.
	TaskSupport string `json:"taskSupport,omitempty"`
	// TaskAfter is how long a call that may become a task runs as an
	// ordinary request first: a handler that returns sooner is answered
	// directly, with no task. 0 (the default) makes every such call a task
	// before its handler starts; Unlimited leaves the decision to the
	// handler (HandlerRequest.StartTask). A handler that asks the client for input
	// before the call became a task stays an ordinary request until it
	// calls StartTask (in 2026-07-28 the question ends the round with
	// input_required, so asks come first and the task after them). A call
	// the store refuses to make a task (a limit) is answered with -32603,
	// its handler cancelled. Not sent to clients.
	TaskAfter time.Duration `json:"-"`
}

// supportsTasks reports whether calls of a tool with execution e may be
// tasks.
func (e *ToolExecution) supportsTasks() bool {
	return e != nil && (e.TaskSupport == TaskOptional || e.TaskSupport == TaskRequired)
}

// AddTool registers a tool. It fails for a malformed name or schema, a nil
// handler, a name already registered, or a tool an extension's rule refuses
// (the apps extension, apps.go, refuses a link to an app it does not serve).
func (rt *Runtime) AddTool(tool Tool, handler ToolHandler) error {
	entry, err := newToolEntry(tool, handler)
	if err != nil {
		return fmt.Errorf("adding tool %q: %w", tool.Name, err)
	}
	if entry.tool.Inline {
		entry.inline = &inlineCalls{rt: rt, name: entry.tool.Name}
	}
	tasks := entry.tool.Execution.supportsTasks()
	if tasks && rt.tasks == nil {
		return fmt.Errorf("adding tool %q: execution.taskSupport %q needs RuntimeOptions.Tasks", tool.Name, entry.tool.Execution.TaskSupport)
	}
	rt.mu.Lock()
	if err := rt.checkTool(&entry.tool); err != nil {
		rt.mu.Unlock()
		return fmt.Errorf("adding tool %q: %w", tool.Name, err)
	}
	added := rt.cat.tools.add(tool.Name, entry)
	if added && tasks {
		rt.cat.taskTools++
	}
	if added && namesParamHeaders(entry.tool.InputSchema) {
		rt.cat.headerTools.Add(1)
	}
	rt.mu.Unlock()
	if !added {
		return fmt.Errorf("adding tool %q: a tool of that name is already registered", tool.Name)
	}
	rt.AnnounceListChanged(ToolsChanged)
	return nil
}

// RemoveTool unregisters the named tool and reports whether it was
// registered. Calls already running finish, and so do its tasks.
func (rt *Runtime) RemoveTool(name string) bool {
	rt.mu.Lock()
	if e := rt.cat.tools.byKey[name]; e != nil {
		if e.tool.Execution.supportsTasks() {
			rt.cat.taskTools--
		}
		if namesParamHeaders(e.tool.InputSchema) {
			rt.cat.headerTools.Add(-1)
		}
	}
	removed := rt.cat.tools.remove(name)
	rt.mu.Unlock()
	return rt.announceIf(removed, ToolsChanged)
}

func newToolEntry(tool Tool, handler ToolHandler) (*toolEntry, error) {
	if !isToolName(tool.Name) {
		return nil, errors.New("a tool name is 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'")
	}
	if handler == nil {
		return nil, errors.New("nil handler")
	}
	if tool.InputSchema == nil {
		tool.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var schema struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if !isJSONObjectText(tool.InputSchema) || json.Unmarshal(tool.InputSchema, &schema) != nil || schema.Type != "object" {
		return nil, errors.New(`inputSchema must be a JSON Schema object with "type": "object" and a string array "required", if any`)
	}
	if tool.OutputSchema != nil && !isJSONObjectText(tool.OutputSchema) {
		return nil, errors.New("outputSchema must be a JSON object")
	}
	if tool.Meta != nil && !isJSONObjectText(tool.Meta) {
		return nil, errors.New("_meta must be a JSON object")
	}
	if tool.Inline && tool.Execution.supportsTasks() {
		return nil, errors.New("a tool that supports tasks cannot be Inline")
	}
	if e := tool.Execution; e != nil {
		switch e.TaskSupport {
		case "", TaskForbidden, TaskOptional, TaskRequired:
		default:
			return nil, fmt.Errorf("execution.taskSupport %q is not %q, %q or %q", e.TaskSupport, TaskForbidden, TaskOptional, TaskRequired)
		}
		if err := checkOption("ToolExecution.TaskAfter", e.TaskAfter, Unlimited); err != nil {
			return nil, err
		}
		copied := *e
		tool.Execution = &copied
	}
	tool.InputSchema = slices.Clone(tool.InputSchema)
	tool.OutputSchema = slices.Clone(tool.OutputSchema)
	tool.Meta = slices.Clone(tool.Meta)
	tool.Icons = slices.Clone(tool.Icons)
	if tool.Annotations != nil {
		a := *tool.Annotations
		tool.Annotations = &a
	}
	return &toolEntry{tool: tool, required: schema.Required, handler: handler}, nil
}

// isJSONObjectText reports whether raw is valid JSON text holding an object.
func isJSONObjectText(raw json.RawMessage) bool { return json.Valid(raw) && isJSONObject(raw) }

type listToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
	resultEnvelope
}

func (rt *Runtime) listTools(c *methodCall) Reply {
	d := dialectOf(c.version)
	tools, next, rerr := listPage(rt, c, &rt.cat.tools, listTools, true, (*toolEntry).item, func(e *toolEntry) Tool {
		return d.tool(e.tool)
	})
	if rerr != nil {
		return Reply{Error: rerr}
	}
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return listToolsResult{Tools: tools, NextCursor: next, resultEnvelope: env}
	})
}

type callToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
	resultEnvelope
}

func (rt *Runtime) callTool(ctx context.Context, c *methodCall) Reply {
	rt.mu.RLock()
	registered := len(rt.cat.tools.list) > 0
	// A registered name sent without escapes is found without decoding it.
	entry := rt.cat.tools.byKey[string(plainStringContent(c.params.name))]
	rt.mu.RUnlock()
	if !registered {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	var name string
	if entry != nil {
		name = entry.tool.Name
	} else {
		var ok bool
		if name, ok = decodeString(c.params.name); !ok {
			return Reply{Error: invalidParams("Invalid params: tools/call requires a string name")}
		}
	}
	if entry == nil {
		rt.mu.RLock()
		entry = rt.cat.tools.byKey[name]
		rt.mu.RUnlock()
	}
	if entry != nil {
		if rerr := rt.checkAccess(c, entry.item()); rerr != nil {
			return Reply{Error: rerr}
		}
	}
	args, rerr := argumentsParam(c.params.arguments)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	if entry == nil {
		return Reply{Error: invalidParams("Unknown tool: " + name)}
	}
	asTask := false
	if e := entry.tool.Execution; e.supportsTasks() { // so rt.tasks is set (AddTool)
		name := rt.tasks.extensionName()
		if asTask = declaresExtension(c, name); !asTask && e.TaskSupport == TaskRequired {
			return Reply{Error: extensionNotDeclared(name)}
		}
	}
	if missing := missingMembers(jsonObject(args), entry.required); len(missing) > 0 {
		return rt.toolResultReply(c, &ToolResult{
			Content: []Content{TextContent(fmt.Sprintf("Invalid arguments for tool %s: missing required argument(s): %s", name, strings.Join(missing, ", ")))},
			IsError: true,
		})
	}
	req := c.handlerRequest()
	req.Name = name
	req.setArguments(args)
	if rerr = rt.startAsking(c, &req.ask, name); rerr != nil {
		return Reply{Error: rerr}
	}
	if asTask {
		return rt.tasks.runCall(ctx, *c, entry, req)
	}
	res, err := runHandler(rt, c, name, func() (*ToolResult, error) { return entry.handler(ctx, req) })
	return rt.toolCallReply(c, req, res, err)
}

// toolCallReply answers the call c of a tool whose handler (with request req)
// returned res and err.
func (rt *Runtime) toolCallReply(c *methodCall, req *HandlerRequest, res *ToolResult, err error) Reply {
	name := req.Name
	if err != nil {
		if reply, ok := rt.inputRequired(c, &req.ask, err); ok {
			return reply
		}
		if _, isRPC := errors.AsType[*RPCError](err); isRPC {
			return rt.handlerErrorReply(c, name, err)
		}
		if _, panicked := errors.AsType[*panicError](err); panicked {
			return Reply{Error: internalError()}
		}
		res = &ToolResult{Content: []Content{TextContent(err.Error())}, IsError: true}
	}
	return rt.toolResultReply(c, res)
}

func (rt *Runtime) toolResultReply(c *methodCall, res *ToolResult) Reply {
	if res == nil {
		res = &ToolResult{}
	}
	if size, ok := rt.plainToolResultSize(c, res); ok {
		if !c.req.claimAnswer(resultFrameCap(c.req, size)) {
			return Reply{Error: errCapacity} // never built: it does not fit in the byte budget
		}
		frame := startResultFrame(c.req, size)
		start := len(frame)
		frame, err := rt.appendPlainToolResult(frame, c, res)
		if err != nil {
			rt.logger.Error("encoding a result failed", "method", c.req.Method, "err", err)
			return Reply{Error: internalError()}
		}
		return framedResult(frame, start)
	}
	d := dialectOf(c.version)
	content := d.contents(res.Content)
	if content == nil {
		content = []Content{}
	}
	structured := res.StructuredContent
	if !d.structuredContent {
		structured = nil
	}
	return rt.envelopeReply(c, false, res.Meta, func(env resultEnvelope) any {
		return callToolResult{Content: content, StructuredContent: structured, IsError: res.IsError, resultEnvelope: env}
	})
}

// cursorParam reads params.cursor, raw; "" when absent.
func cursorParam(raw json.RawMessage) (string, *RPCError) {
	if raw == nil {
		return "", nil
	}
	cursor, ok := decodeString(raw)
	if !ok {
		return "", invalidParams("Invalid params: cursor must be a string")
	}
	return cursor, nil
}

// argumentsParam reads params.arguments, raw, which must be an object when
// present; absent arguments are {}.
func argumentsParam(raw json.RawMessage) (json.RawMessage, *RPCError) {
	if raw == nil {
		return json.RawMessage(`{}`), nil
	}
	if !isJSONObject(raw) {
		return nil, invalidParams("Invalid params: arguments must be an object")
	}
	return raw, nil
}

// missingMembers returns the names in required that obj lacks, in order.
func missingMembers(obj jsonObject, required []string) []string {
	var missing []string
	for _, name := range required {
		if _, ok := obj.lookup(name); !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

// missingKeys returns the names in required that present lacks, in order.
func missingKeys[V any](present map[string]V, required []string) []string {
	var missing []string
	for _, name := range required {
		if _, ok := present[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

// appendPlainToolResult appends the encoding of res, which
// plainToolResultSize accepts, as toolResultReply's encoding/json path would
// produce it (marshalJSON of callToolResult). It is compact, pure ASCII and,
// unless the text needs more than a few escapes, plainToolResultSize bytes
// at most. It fails only when a typed tool's structured content does not
// encode.
func (rt *Runtime) appendPlainToolResult(dst []byte, c *methodCall, res *ToolResult) ([]byte, error) {
	dst = append(dst, `{"content":[`...)
	var first encodedString // the first block's text, which structured content often repeats
	for i, block := range res.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		start := len(dst)
		dst = appendJSONString(dst, block.Text)
		if i == 0 {
			first = encodedString{text: block.Text, start: start, end: len(dst)}
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if s, ok := res.StructuredContent.(*structuredOutput); ok {
		known := &first
		if len(res.Content) == 0 {
			known = nil
		}
		dst = append(dst, `,"structuredContent":`...)
		var err error
		if dst, err = s.appendJSONReusing(dst, known); err != nil {
			return dst, err
		}
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if c.era == eraStateless {
		dst = append(dst, `,"resultType":"complete","_meta":`...)
		dst = append(dst, rt.serverInfoMeta...)
	}
	return append(dst, '}'), nil
}

// plainToolResultSize reports whether res has the common shape
// appendPlainToolResult writes directly: content blocks that are all plain
// text (no annotations, no _meta), no structuredContent other than a typed
// tool's (which has none in a version without structuredContent, see
// typedTool.result), and no handler _meta. If so it returns how many bytes
// the encoding takes at most when each block's text needs no more than a few
// escapes of ASCII characters (its non-ASCII characters are counted).
func (rt *Runtime) plainToolResultSize(c *methodCall, res *ToolResult) (int, bool) {
	if res.Meta != nil {
		return 0, false
	}
	size := len(`{"content":[]}`) + len(`,"isError":true`)
	if res.StructuredContent != nil {
		s, ok := res.StructuredContent.(*structuredOutput)
		if !ok {
			return 0, false
		}
		size += len(`,"structuredContent":`) + s.sizeHint()
	}
	for _, block := range res.Content {
		if block.Type != ContentText || block.Annotations != nil || block.Meta != nil {
			return 0, false
		}
		size += len(`,{"type":"text","text":""}`) + len(block.Text) + escapeGrowth(block.Text) + 16
	}
	if c.era == eraStateless {
		size += len(`,"resultType":"complete","_meta":`) + len(rt.serverInfoMeta)
	}
	return size, true
}

// ToolInputSchema returns the input schema of the tool name, nil when there
// is no such tool: the Runtime is a ToolSchemaSource, so the HTTP transport
// checks a tools/call's Mcp-Param headers against it.
func (rt *Runtime) ToolInputSchema(name string) json.RawMessage {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if e, ok := rt.cat.tools.byKey[name]; ok {
		return e.tool.InputSchema
	}
	return nil
}

// paramHeaderTools returns how many registered tools' input schemas name an
// x-mcp-header: while none does, the HTTP transport looks up no schema to
// check a tools/call's Mcp-Param headers (paramHeaderCounter).
func (rt *Runtime) paramHeaderTools() int { return int(rt.cat.headerTools.Load()) }
