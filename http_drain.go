package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Shutting an HTTPHandler down with the http.Server that serves it, bounded
// however slow the clients are. net/http's own Shutdown waits for every
// connection to go idle: up to 5s for one that never carried a request (a
// client's spare), until ReadBodyTimeout for a client trickling a body, and
// for as long as a client keeps its next request's headers coming.

// drainState is what Shutdown needs to know of the handler's connections and
// requests. Safe for concurrent use. Every request changes the counts, so
// they are atomic, and mu is taken only where a connection is new or not yet
// used, or a drain waits: a request of a busy server takes no lock here.
type drainState struct {
	mu sync.Mutex
	// unused are the connections that have not carried a request yet, as
	// ConnState reports them; guarded by mu. unusedCount is its size, read
	// without mu: 0 says no connection needs looking up.
	unused      map[net.Conn]struct{}
	unusedCount atomic.Int64
	// draining is set by Shutdown (under mu): a connection accepted from
	// then on is closed at once.
	draining atomic.Bool
	// inflight counts the POSTed messages being served, from before they
	// are submitted until they are answered.
	inflight atomic.Int64
	// quiet, made by Shutdown, is closed once inflight is 0; guarded by mu.
	quiet chan struct{}
}

// ConnState records which connections have not carried a request yet, so
// that Shutdown closes them at once instead of waiting for them. Install it
// as the server's hook before serving (srv.ConnState = h.ConnState, or call
// it from a hook of your own); without it Shutdown is still bounded, but
// waits for such connections up to its grace period.
func (h *HTTPHandler) ConnState(c net.Conn, state http.ConnState) {
	d := &h.drain
	if state != http.StateNew && d.unusedCount.Load() == 0 {
		// Not in unused: its StateNew, which comes before (from the
		// goroutine that accepted it), was counted or closed it.
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case state == http.StateNew && d.draining.Load():
		c.Close()
	case state == http.StateNew:
		if d.unused == nil {
			d.unused = make(map[net.Conn]struct{})
		}
		d.unused[c] = struct{}{}
		d.unusedCount.Store(int64(len(d.unused)))
	default:
		delete(d.unused, c)
		d.unusedCount.Store(int64(len(d.unused)))
	}
}

// beginExchange counts a POSTed message as in flight until endExchange.
func (d *drainState) beginExchange() {
	d.inflight.Add(1)
}

func (d *drainState) endExchange() {
	if d.inflight.Add(-1) != 0 || !d.draining.Load() {
		return // start reads the count after it sets draining: it sees this one
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.quiet != nil && d.inflight.Load() == 0 {
		close(d.quiet)
		d.quiet = nil
	}
}

// start marks the drain begun, closes the connections that never carried a
// request, and returns a channel closed once no message is in flight, with
// the number of connections closed and of messages in flight.
func (d *drainState) start() (quiet <-chan struct{}, closed, inflight int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining.Store(true)
	for c := range d.unused {
		c.Close()
	}
	closed = len(d.unused)
	clear(d.unused)
	d.unusedCount.Store(0)
	ch := make(chan struct{})
	n := d.inflight.Load()
	if n == 0 {
		close(ch)
	} else {
		d.quiet = ch
	}
	return ch, closed, int(n)
}

// Shutdown stops srv, which serves h, and then h, in this order:
//
//  1. CloseStreams: GET and listen streams end; no new one opens.
//  2. The connections that never carried a request are closed (those
//     ConnState saw; Logger is told how many, and how many messages are in
//     flight), and srv.Shutdown starts: the listeners close and idle
//     connections are closed as they become idle. A message that arrives
//     from now on is answered -32603 "Server shutting down".
//  3. Once no message is in flight (each admitted request answered, or
//     cancelled by its client), the clients still connected get a grace
//     period of WriteTimeout plus one second: time to receive an answer
//     being written and to be refused a request being read. Then srv.Close
//     cuts what is left: a body still trickling in, headers of a next
//     request, an answer nobody reads.
//  4. Close: sessions end, remaining work is cancelled, the handler's own
//     executor closes.
//
// Requests in flight run to completion within their RequestTimeout; ctx
// bounds the whole drain: when it ends first, srv.Close cuts every
// connection at once, h is closed and ctx's error is returned. Shutdown
// returns nil otherwise. Call it once, instead of srv.Shutdown, after
// srv.Serve started; srv.Serve then returns http.ErrServerClosed.
func (h *HTTPHandler) Shutdown(ctx context.Context, srv *http.Server) error {
	h.CloseStreams()
	defer h.Close()
	quiet, closed, inflight := h.drain.start()
	h.opts.Logger.Info("mcpstdio: HTTP drain started", "closedUnusedConnections", closed, "messagesInFlight", inflight)
	stopped := make(chan struct{})
	stopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		srv.Shutdown(stopCtx) // its only errors are stopCtx's and the listeners' close
		close(stopped)
	}()
	cut := func() {
		srv.Close()
		cancel()
		<-stopped
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		cut()
		return ctx.Err()
	case <-quiet:
	}
	grace := time.NewTimer(h.opts.WriteTimeout + time.Second)
	defer grace.Stop()
	select {
	case <-stopped:
		return nil
	case <-grace.C:
		cut()
		return nil
	case <-ctx.Done():
		cut()
		return ctx.Err()
	}
}
