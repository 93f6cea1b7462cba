package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Shutting an HTTPHandler down: what it serves finishes or ends, bounded
// however slow the clients are, with nothing wired into the http.Server
// that serves it. The handler counts its calls and the messages it serves,
// and knows the POST bodies being read, so that it can end those once
// nothing waits for them.

// drainState is what Shutdown needs to know of the handler's calls. Safe for
// concurrent use. Every call changes the counts, so they are atomic, and mu
// is taken only for a body being read (where the connection takes a
// deadline) or by a drain.
type drainState struct {
	// calls counts the ServeHTTP calls that have not returned.
	calls inflight
	// messages counts the POSTed messages being served, from after their
	// body is read until they are answered (a 2026 listen stream, until it
	// ends).
	messages inflight

	mu sync.Mutex
	// reading are the POSTs reading their body, each with its
	// ResponseWriter; guarded by mu.
	reading map[*http.Request]http.ResponseWriter
	// cut is set by a drain that found no message in flight: the bodies
	// being read end at once, and none starts; guarded by mu.
	cut bool
}

// inflight counts what is in flight, for a drain to wait until nothing is.
// Every call changes the count, so it is atomic; mu is taken only by a
// drain, and by the last one out while a drain waits.
type inflight struct {
	n        atomic.Int64
	draining atomic.Bool
	mu       sync.Mutex
	zero     chan struct{} // made by drain, closed once n is 0; guarded by mu
}

func (c *inflight) begin() { c.n.Add(1) }

func (c *inflight) end() {
	if c.n.Add(-1) != 0 || !c.draining.Load() {
		return // drain reads the count after it sets draining: it sees this one
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero != nil && c.n.Load() == 0 {
		close(c.zero)
		c.zero = nil
	}
}

// drain marks the drain begun and returns a channel closed once the count
// is 0, with the count now.
func (c *inflight) drain() (zero <-chan struct{}, now int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining.Store(true)
	n := c.n.Load()
	if n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch, 0
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	return c.zero, int(n)
}

// startRead records that r's body is being read, under a read deadline w's
// connection took; endRead must follow. It reports false, and records
// nothing, once a drain cut the reads: the body is then not read.
func (d *drainState) startRead(w http.ResponseWriter, r *http.Request) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return false
	}
	if d.reading == nil {
		d.reading = make(map[*http.Request]http.ResponseWriter)
	}
	d.reading[r] = w
	return true
}

// endRead records that r's body was read, or its reading failed; it
// reports whether a drain cut it.
func (d *drainState) endRead(r *http.Request) (cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.reading, r)
	return d.cut
}

// cutReads ends the reads of the bodies being read (their deadline is now)
// and refuses those to come.
func (d *drainState) cutReads() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	now := time.Now()
	for _, w := range d.reading {
		// Under mu its ServeHTTP call is still in readBody: the controller
		// is used while its call lasts, as it must be.
		http.NewResponseController(w).SetReadDeadline(now)
	}
	return len(d.reading)
}

// Shutdown drains the handler, in this order:
//
//  1. Long-lived streams (GET streams and 2026 subscriptions/listen
//     streams) end, and new ones end at once. From now on an initialize,
//     and any request of a session or of 2026-07-28, is answered -32603
//     "Server shutting down"; notifications and a client's responses to
//     the server's requests are still taken.
//  2. Shutdown waits until no message is in flight: each request admitted
//     runs to its answer, within its RequestTimeout.
//  3. Then no POST body is read any more: those being read end at once,
//     as do those that arrive later, answered 503 "Server shutting down"
//     with the connection closed (where the connection takes read
//     deadlines, as net/http's do), so that a client trickling a body
//     holds nothing up.
//  4. Shutdown waits until every ServeHTTP call has returned: the answers
//     being written are written (each write within WriteTimeout).
//  5. Close: sessions end, the executor the handler created closes.
//
// When ctx ends first, Close runs at once, cancelling the work still
// running, and ctx's error is returned; otherwise Shutdown returns nil.
// Logger is told when the drain starts, with the calls and messages in
// flight.
//
// Shutdown closes no connection and needs nothing of the http.Server. Call
// the server's Shutdown after it (or together with it): that stops
// accepting (with an HTTPListener, closing the connections no request
// arrived on yet), closes connections as they go idle and waits for the
// active ones, which are idle once h is drained; it keeps waiting for a
// client still sending a next request's headers (until ReadHeaderTimeout),
// so bound it with a context and then call the server's Close. Called
// after the handler's, it lets clients reach the handler during the drain,
// to answer the server's questions to requests in flight (elicitation,
// sampling) on new connections too. Safe to call more than once and
// concurrently with anything; each call returns once the drain is done or
// its ctx ended.
func (h *HTTPHandler) Shutdown(ctx context.Context) error {
	h.endStreams()
	defer h.Close()
	calls, callsNow := h.drain.calls.drain()
	messages, messagesNow := h.drain.messages.drain()
	h.opts.Logger.Info("mcpstdio: HTTP drain started", "callsInFlight", callsNow, "messagesInFlight", messagesNow)
	select {
	case <-messages:
	case <-ctx.Done():
		return ctx.Err()
	}
	if n := h.drain.cutReads(); n > 0 {
		h.opts.Logger.Info("mcpstdio: HTTP drain cut the bodies being read", "bodies", n)
	}
	select {
	case <-calls:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
