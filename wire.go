package main

// Names the protocol puts on the wire, each spelled once: the methods the
// transports act on themselves, the HTTP headers of Streamable HTTP and the
// reserved _meta keys the transports read or write. (The _meta keys of the
// dialects are in dialect.go.)

// Methods the transports and the connection core treat specially.
const (
	methodInitialize                = "initialize"
	methodCancelled                 = "notifications/cancelled"
	methodSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	methodToolsCall                 = "tools/call"
	methodPromptsGet                = "prompts/get"
	methodResourcesRead             = "resources/read"
	methodSubscriptionsListen       = "subscriptions/listen"
)

// The methods of the tasks extension (tasks.go), which the HTTP transport
// routes by name too.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
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
)
