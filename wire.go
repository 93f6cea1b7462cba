package main

import "bytes"

// Names the protocol puts on the wire, each spelled once: the methods, the
// HTTP headers of Streamable HTTP and the reserved _meta keys the transports
// read or write. (The _meta keys of the dialects are in dialect.go.)

// The protocol's methods, requests and notifications, each spelled here
// once: what the transports and the connection core treat specially, what
// the runtime serves and what it sends.
const (
	methodInitialize             = "initialize"
	methodPing                   = "ping"
	methodServerDiscover         = "server/discover"
	methodToolsList              = "tools/list"
	methodToolsCall              = "tools/call"
	methodResourcesList          = "resources/list"
	methodResourcesTemplatesList = "resources/templates/list"
	methodResourcesRead          = "resources/read"
	methodResourcesSubscribe     = "resources/subscribe"
	methodResourcesUnsubscribe   = "resources/unsubscribe"
	methodPromptsList            = "prompts/list"
	methodPromptsGet             = "prompts/get"
	methodCompletionComplete     = "completion/complete"
	methodLoggingSetLevel        = "logging/setLevel"
	methodSubscriptionsListen    = "subscriptions/listen"
	methodSamplingCreateMessage  = "sampling/createMessage"
	methodElicitationCreate      = "elicitation/create"
	methodRootsList              = "roots/list"
	// The tasks extension's (tasks.go), which the HTTP transport routes by
	// name too.
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"

	methodInitialized               = "notifications/initialized"
	methodCancelled                 = "notifications/cancelled"
	methodProgress                  = "notifications/progress"
	methodMessage                   = "notifications/message"
	methodResourcesUpdated          = "notifications/resources/updated"
	methodResourcesListChanged      = "notifications/resources/list_changed"
	methodToolsListChanged          = "notifications/tools/list_changed"
	methodPromptsListChanged        = "notifications/prompts/list_changed"
	methodRootsListChanged          = "notifications/roots/list_changed"
	methodSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	methodElicitationComplete       = "notifications/elicitation/complete"
)

// notificationTasks announces a task's new state on a listen stream (the
// tasks extension's, which the connection core routes like the others).
const notificationTasks = "notifications/tasks"

// metaKeySubscriptionID tags every frame of a 2026 subscriptions/listen
// stream with the listen request's id.
const metaKeySubscriptionID = "io.modelcontextprotocol/subscriptionId"

// HTTP headers of Streamable HTTP, in canonical form (net/http's Header
// methods canonicalize any spelling; Request.Header keys are these, lower
// case). The protocol version header is headerProtocolVersion (dialect.go),
// which stdio synthesizes too.
const (
	headerSessionID   = "Mcp-Session-Id"
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	headerParamPrefix = "Mcp-Param-"
	headerLastEventID = "Last-Event-ID"
	// httpHeaderProtocolVersion is headerProtocolVersion as net/http's
	// Header keys spell it, so that looking it up in an http.Header costs
	// no canonicalization (TestHTTPHeaderKeysCanonical checks both).
	httpHeaderProtocolVersion = "Mcp-Protocol-Version"
	// Headers of HTTP itself and of trace propagation that the handler
	// reads on every request, looked up without canonicalization
	// (firstHeader).
	headerOrigin      = "Origin"
	headerContentType = "Content-Type"
	headerAccept      = "Accept"
	headerTraceparent = "Traceparent"
	headerTracestate  = "Tracestate"
)

// namesParamHeaders reports whether a tool's input schema may annotate an
// argument with x-mcp-header, which a 2026-07-28 client mirrors in an
// Mcp-Param-{Name} header: a schema that does not name it annotates none.
func namesParamHeaders(schema []byte) bool {
	return bytes.Contains(schema, []byte(`"x-mcp-header"`))
}
