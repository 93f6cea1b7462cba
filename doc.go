// This package is the mcpstdio library: a Model Context Protocol (MCP)
// server core in Go, standard library only. It serves every MCP version from
// 2024-11-05 to the stateless 2026-07-28 over stdio, Streamable HTTP or an
// in-memory pair, and bounds every resource a client can make it hold. It is
// meant to be copied into a package of your own module (copy.sh in the
// mcpstdio repository, whose docs/ folder has the tutorial, how-to guides
// and reference pages); this comment is the map of the copy.
//
// # Where to start
//
// A [Runtime] is the server: create it with [NewRuntime], register tools
// ([AddTypedTool], [Runtime.AddTool]), resources ([Runtime.AddResource],
// [Runtime.AddResourceTemplate]) and prompts ([Runtime.AddPrompt]), then
// serve it:
//
//   - on stdio, or any io.Reader and io.Writer: [NewTransport] and
//     [Transport.Serve], or [Serve] for both at once;
//   - over Streamable HTTP: NewHTTPHandler, an http.Handler, served with
//     NewHTTPListener and stopped with HTTPHandler.Shutdown;
//   - in memory, for tests: [NewMemoryTransport].
//
// A handler gets a context and a [HandlerRequest], through which it binds
// its arguments ([HandlerRequest.Bind]), reports progress
// ([HandlerRequest.ReportProgress]), logs to the client
// ([HandlerRequest.Logger]) and asks the client for input
// ([HandlerRequest.Elicit], [HandlerRequest.CreateMessage],
// [HandlerRequest.ListRoots]). Every option struct ([Options],
// [RuntimeOptions], HTTPOptions, ...) means "the default" when zero, and
// its constructor refuses an invalid value with an error naming the field.
//
// # The path of a message
//
// A line of input is read by a reading goroutine (reader.go), decoded once
// and handed to the connection's owner (coordinator.go on stdio, conn*.go
// for every transport), the one goroutine that touches the connection's
// state. The owner answers cancellations at once and submits everything
// else to an [Executor] (executor*.go), which bounds the work running, the
// work waiting and the bytes they hold, and shares itself fairly between
// clients. On a worker, the [Dispatcher] (a [Runtime]: runtime.go,
// runtime_tools.go, dialect.go) serves the method and returns a [Reply];
// the owner writes its frame (writer.go), whole frames only, each bounded
// by the write timeout. Handlers never write to the output themselves.
//
// # The core and the features
//
// The core (the files the repository's testdata/core_files.txt lists)
// serves every protocol version over stdio and names nothing of the
// features, which plug into interfaces it defines. A copy may leave out any
// feature, each a file prefix (go doc shows only the features copied):
//
//   - http: Streamable HTTP (NewHTTPHandler); needs auth.
//   - auth: the OAuth 2.1 resource server (AuthOptions, NewJWTVerifier,
//     NewIntrospectionVerifier); with the core's [AccessPolicy] and
//     [Principal].
//   - tasks: the tasks extension (TaskOptions in [RuntimeOptions].Tasks,
//     [ToolExecution]).
//   - skills: the skills extension (Runtime.AddSkills).
//   - telemetry: OpenTelemetry spans and metrics over OTLP/HTTP
//     (NewTelemetry, an [Observer]).
//   - sqlstore: a TaskStore on database/sql shared by replicas
//     (NewSQLTaskStore); needs tasks.
//
// The package is also the repository's reference command (its main.go and
// main_*.go files, never copied): go generate there rewrites the generated
// parts of the documentation.
//
//go:generate go test -run ^TestDocs -update
package main
