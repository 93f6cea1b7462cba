package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Shutting an HTTPHandler down with the http.Server that serves it, bounded
// however slow the clients are. net/http's own Shutdown waits for every
// connection to go idle: up to 5s for one that never carried a request (a
// client's spare), until ReadBodyTimeout for a client trickling a body, and
// for as long as a client keeps its next request's headers coming.

// drainState is what Shutdown needs to know of the handler's connections and
// requests. Safe for concurrent use; every field is guarded by mu.
type drainState struct {
	mu sync.Mutex
	// unused are the connections that have not carried a request yet, as
	// ConnState reports them.
	unused map[net.Conn]struct{}
	// draining is set by Shutdown: a connection accepted from then on is
	// closed at once.
	draining bool
	// inflight counts the POSTed messages being served (runExchange), from
	// before they are submitted until they are answered.
	inflight int
	// quiet, made by Shutdown, is closed once inflight is 0.
	quiet chan struct{}
}

// ConnState records which connections have not carried a request yet, so
// that Shutdown closes them at once instead of waiting for them. Install it
// as the server's hook before serving (srv.ConnState = h.ConnState, or call
// it from a hook of your own); without it Shutdown is still bounded, but
// waits for such connections up to its grace period.
func (h *HTTPHandler) ConnState(c net.Conn, state http.ConnState) {
	d := &h.drain
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case state == http.StateNew && d.draining:
		c.Close()
	case state == http.StateNew:
		if d.unused == nil {
			d.unused = make(map[net.Conn]struct{})
		}
		d.unused[c] = struct{}{}
	default:
		delete(d.unused, c)
	}
}

// beginExchange counts a POSTed message as in flight until endExchange.
func (d *drainState) beginExchange() {
	d.mu.Lock()
	d.inflight++
	d.mu.Unlock()
}

func (d *drainState) endExchange() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inflight--
	if d.inflight == 0 && d.quiet != nil {
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
	d.draining = true
	for c := range d.unused {
		c.Close()
	}
	closed = len(d.unused)
	clear(d.unused)
	ch := make(chan struct{})
	if d.inflight == 0 {
		close(ch)
	} else {
		d.quiet = ch
	}
	return ch, closed, d.inflight
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
