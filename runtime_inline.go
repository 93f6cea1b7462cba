package main

// What the Runtime serves inline: the calls of an Inline tool, which the
// connection's owner runs itself (conn_inline.go), middleware included, and
// the watch for such a call that blocks its owner.

import (
	"context"
	"sync/atomic"
	"time"
)

// inlineBlockThreshold is how long an inline call (its middleware and its
// handler) may hold its connection's owner before the Runtime logs its tool:
// a few milliseconds, long past what a call that does not block takes, and
// already enough for a connection's other messages, and its cancellations,
// to wait noticeably behind it.
const inlineBlockThreshold = 5 * time.Millisecond

// inlineCalls is the Dispatcher the owner serves an Inline tool's calls with
// (inlineFor): the Runtime, timed. The first call that holds the owner for
// longer than inlineBlockThreshold is logged, once for the tool's
// registration.
type inlineCalls struct {
	rt     *Runtime
	name   string
	logged atomic.Bool
}

func (t *inlineCalls) Dispatch(ctx context.Context, req *Request) Reply {
	start := t.rt.now()
	reply := t.rt.Dispatch(ctx, req)
	if held := t.rt.now().Sub(start); held > inlineBlockThreshold && t.logged.CompareAndSwap(false, true) {
		t.rt.logger.WarnContext(ctx, "mcpstdio: an Inline tool's call blocked its connection; the tool should not be Inline",
			"tool", t.name, "held", held, "threshold", inlineBlockThreshold)
	}
	return reply
}

// inlineFor returns the Dispatcher that serves a request of method with
// params on the connection's owner (inlineDispatcher): a tools/call of an
// Inline tool, its name looked up as tools/call finds it when it has no
// escapes (one with escapes runs on a worker); nil for any other request.
func (rt *Runtime) inlineFor(method string, params []byte) Dispatcher {
	if method != methodToolsCall {
		return nil
	}
	raw, ok := lookupMember(params, "name")
	if !ok {
		return nil
	}
	rt.mu.RLock()
	entry := rt.cat.tools.byKey[string(plainStringContent(raw))]
	rt.mu.RUnlock()
	if entry == nil || entry.inline == nil {
		return nil
	}
	return entry.inline
}
