package main

// Middleware: Dispatchers a Runtime passes every message it serves through
// before serving it itself (docs/how-to/middleware.md).

import (
	"context"
	"fmt"
	"slices"
)

// A Middleware wraps the Dispatcher that serves a Runtime's messages: it
// returns a Dispatcher that sees each message (the Request) and may answer it
// itself, with a Reply whose Error is set, or call next.Dispatch and return
// (or replace) its Reply. Runtime.Use installs it.
//
// A middleware's Dispatch has the Dispatcher contract: it runs concurrently
// with itself, must return when ctx is done, and never modifies req (to hand
// next something else, such as a Peer that watches what the handler sends to
// the client, it passes a copy); a panic in it is answered -32603 "Request
// worker failed", as a Dispatcher's is. What it reads:
//
//   - req.Method, req.ID (nil for a notification), req.Params;
//   - req.Header (HeaderValue): every header of an HTTP request, the
//     negotiated mcp-protocol-version on stdio;
//   - req.Session and req.SessionID: what the connection negotiated, and
//     which connection or HTTP session it is;
//   - the principal the request speaks for: PrincipalFromContext(ctx);
//   - req.Peer: how the handler reaches the client (server-to-client
//     requests and notifications of the initialize era).
//
// The Request and the Reply are the middleware's to keep: it may hold either,
// and the Result's bytes, after it returns (for a log written later, say),
// though neither may be modified.
type Middleware func(next Dispatcher) Dispatcher

// Use installs middleware around everything the Runtime serves: every request
// and notification its Dispatch receives passes through each middleware,
// outermost first. Within one call the first given is the outermost, and the
// middleware of an earlier call wrap those of a later one. Each Middleware
// function is called once, by Use, to build its Dispatcher.
//
// What passes through is every message a transport dispatches: the requests
// of both eras (initialize, ping, tools/*, resources/*, prompts/*,
// completion/complete, logging/setLevel, subscriptions/listen,
// server/discover, the tasks extension's tasks/* methods, the methods of
// features such as skills), each member of a JSON-RPC batch, and the client's
// notifications (notifications/initialized, notifications/roots/list_changed,
// ...), whose Reply is discarded. What does not: notifications/cancelled,
// which the connection's owner handles before anything is dispatched (it
// cancels the request's context, which a middleware sees); the client's
// responses to server-to-client requests, which go to the handler that is
// waiting for them; and messages the transport refuses before dispatch
// (unparsable, duplicate ids, over capacity, refused HTTP requests). Work a
// request leaves running after its answer (a task) runs outside the
// middleware; the tasks/* requests that follow it pass through.
//
// An Inline tool's call runs on its connection's owner (see Tool.Inline), and
// so does its middleware: on that call a middleware must not block either,
// and its context is never cancelled. A call that holds the owner longer than
// a few milliseconds is logged once per tool, with the tool's name, to the
// Runtime's Logger.
//
// Use is safe to call at any time, also while the Runtime serves: a message
// that arrives after Use returned passes through what it installed; one that
// arrived before may or may not (and then, over HTTP, may lack its
// headers). Installing middleware changes nothing else a
// transport gets from the Runtime: catalog change notifications, listen
// streams, tasks and inline tools work as without it. Use panics if a
// Middleware is nil or returns a nil Dispatcher; then it installs none of
// those given.
func (rt *Runtime) Use(mw ...Middleware) {
	rt.useMu.Lock()
	defer rt.useMu.Unlock()
	var layers []Dispatcher
	if old := rt.middleware.Load(); old != nil {
		layers = slices.Clone(*old)
	}
	for i, m := range mw {
		if m == nil {
			panic(fmt.Sprintf("mcpstdio: Runtime.Use: middleware %d is nil", i))
		}
		d := m(&middlewareNext{rt: rt, depth: len(layers) + 1})
		if d == nil {
			panic(fmt.Sprintf("mcpstdio: Runtime.Use: middleware %d returned a nil Dispatcher", i))
		}
		layers = append(layers, d)
	}
	if len(layers) > 0 {
		rt.middleware.Store(&layers)
	}
}

// usesMiddleware reports whether Use installed any middleware.
func (rt *Runtime) usesMiddleware() bool { return rt.middleware.Load() != nil }

// dispatchThroughMiddleware hands req to the outermost of layers, the
// middleware installed. They get a Request of their own, which they may
// keep: the transport's may live in a record it reuses for its next
// message, and its answer frame may be built in a buffer the transport
// lends and takes back once it is written, so the copy borrows no frame
// buffer either.
func (rt *Runtime) dispatchThroughMiddleware(ctx context.Context, layers []Dispatcher, req *Request) Reply {
	own := new(Request)
	*own = *req
	own.frameSpace = nil
	return layers[0].Dispatch(ctx, own)
}

// middlewareNext is the next Dispatcher of the middleware at depth-1: the
// one at depth, as Use installed it when the message gets there, or below the
// last one the Runtime's own dispatch. Each Middleware is thus called once,
// whatever Use adds after it.
type middlewareNext struct {
	rt    *Runtime
	depth int
}

func (n *middlewareNext) Dispatch(ctx context.Context, req *Request) Reply {
	if layers := n.rt.middleware.Load(); layers != nil && n.depth < len(*layers) {
		return (*layers)[n.depth].Dispatch(ctx, req)
	}
	return n.rt.dispatch(ctx, req)
}
