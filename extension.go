package main

// The seam through which the tasks extension (tasks*.go) plugs into the
// runtime. The core defines it and names nothing of the extension, so that a
// copy of the core without the tasks files builds and serves everything but
// tasks.

import (
	"context"
	"encoding/json"
)

// A TaskProvider serves tasks for a Runtime (RuntimeOptions.Tasks).
// TaskOptions (tasks.go) is the one this package has.
type TaskProvider interface {
	// tasksFor is called once, by NewRuntime, with the Runtime the tasks
	// serve. It validates the provider's options and returns rt's tasks, or
	// the error NewRuntime then returns.
	tasksFor(rt *Runtime) (runtimeTasks, error)
}

// runtimeTasks are one Runtime's tasks: what the runtime asks of them. Every
// method is safe for concurrent use, and none is called with a lock of the
// runtime held.
type runtimeTasks interface {
	// extensionName is the key of capabilities.extensions that announces
	// them, advertised while a registered tool supports tasks.
	extensionName() string
	// serves reports whether method is one of the extension's methods,
	// which serve then answers (a client's request of any era).
	serves(method string) bool
	serve(ctx context.Context, c methodCall) Reply
	// runCall serves the tools/call c of entry, a tool whose Execution
	// supports tasks, from a client that declared the extension on c, with
	// req ready for its handler.
	runCall(ctx context.Context, c methodCall, entry *toolEntry, req *HandlerRequest) Reply
	// listenable returns, each once, those of ids (the taskIds of the 2026
	// subscriptions/listen request c, which declared the extension) that c
	// may follow.
	listenable(ctx context.Context, c methodCall, ids []string) []string
}

// The methods above take a methodCall by value, not its pointer: a pointer
// passed to an interface's method escapes, and Dispatch would allocate every
// call's methodCall on the heap.

// declaresExtension reports whether request c declared the named extension:
// in the 2026 _meta clientCapabilities, or in the initialize era in the
// connection's initialize capabilities or the request's own _meta
// clientCapabilities.
func declaresExtension(c *methodCall, name string) bool {
	if capabilitiesDeclare(c.clientCapabilities, name) {
		return true
	}
	return c.era == eraLegacy && capabilitiesDeclare(jsonObject(c.meta).get(metaKeyClientCapabilities), name)
}

// capabilitiesDeclare reports whether caps, a client capabilities value (any
// JSON value, or nil), lists the named extension in its extensions object.
func capabilitiesDeclare(caps json.RawMessage, name string) bool {
	return extensionSettings(caps, name) != nil
}

// extensionSettings returns the settings object caps, a client capabilities
// value (any JSON value, or nil), declares the named extension with in its
// extensions object; nil when it does not declare it.
func extensionSettings(caps json.RawMessage, name string) json.RawMessage {
	if !isJSONObject(caps) {
		return nil
	}
	ext := jsonObject(caps).get("extensions")
	if !isJSONObject(ext) {
		return nil
	}
	if settings := jsonObject(ext).get(name); isJSONObject(settings) {
		return settings
	}
	return nil
}

// extensionNotDeclared is the -32021 for a request that needs the named
// extension and did not declare it.
func extensionNotDeclared(name string) *RPCError {
	return &RPCError{
		Code:    CodeMissingCapability,
		Message: "Missing required client capability: the " + name + " extension",
		Data:    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]struct{}{name: {}}}},
	}
}

// handlerTask is the task a handler's call may become (runtimeTasks.runCall
// sets HandlerRequest.task): while it is one, the handler's questions and
// progress messages go to the task instead of the request.
type handlerTask interface {
	// enterAsk reports whether a question asked now goes to the task (ask),
	// not to the client as the request's.
	enterAsk() bool
	ask(ctx context.Context, key, method string, params json.RawMessage) (json.RawMessage, error)
	// isTask reports whether the call has become a task; its progress
	// message is then the task's status message (setStatusMessage).
	isTask() bool
	setStatusMessage(ctx context.Context, message string) error
}
