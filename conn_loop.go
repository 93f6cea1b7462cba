package main

import (
	"context"
	"errors"
)

// The one owner loop: every transport drives its connections with
// serveConnection, so what a connection's events do, and what ends it, is
// written once. A transport supplies a connSide: where its messages come
// from and how its frames leave (the connection's outlet), plus events of
// its own.
//
//   - stdio (coordinator.go): the lines of the input; the frame writer, whose
//     results are its events.
//   - an initialize-era HTTP session (http_session.go): its POSTs; its GETs,
//     DELETEs and the reports of the connections that carry its streams.
//   - a 2026-07-28 HTTP POST (http_stateless.go): one message, handed to the
//     connection before the loop; the SSE keep-alive ticks.

// connSide is what one transport adds to its connection's owner loop. The
// loop calls its methods from the owner goroutine only.
type connSide[M, E any] interface {
	// input is the channel of the transport's messages, nil (never ready)
	// while it takes none; each is passed to onInput.
	input() <-chan M
	onInput(M) error
	// events is the channel of the transport's other events, nil while
	// none can come; each is passed to onEvent.
	events() <-chan E
	onEvent(E) error
	// finished is asked before each event: true ends the loop, with err (nil
	// after the last frame was written).
	finished() (bool, error)
	// idle is called whenever the loop has taken every event that was
	// ready, before it waits for the next: the transport writes what it
	// holds (a direct writer's frames). errConnYielded ends the loop
	// without ending the connection.
	idle() error
	// drain waits until every frame handed over is written (or the output
	// failed), after the executor closed and every pending request was
	// answered -32603.
	drain() error
}

// errConnDone is what a connSide's handler returns to end the loop
// normally: serveConnection then returns nil.
var errConnDone = errors.New("mcpstdio: connection done")

// errConnYielded is what a connSide's idle returns when its goroutine gives
// the connection up without ending it, for another goroutine to own and
// serve later (an HTTP session that parks): serveConnection returns it at
// once and touches nothing of the connection after idle returned.
var errConnYielded = errors.New("mcpstdio: connection yielded")

// maxReady bounds the events serveConnection takes in a row from the busy
// channels before it lets the transport write (idle) and waits on every
// channel, so that cancellation, calls and changes get their turn and the
// frames taken meanwhile go out. Taking them in a row is what joins the
// answers of a pipelined client in one write: waiting on every channel
// after each event and writing before each wait halved stdio's rate at
// window 64 (bench/limits' pairs).
const maxReady = 64

// serveConnection is the owner loop of c: it takes the events of c (executor
// outcomes, Peer and Notify calls, catalog changes, the executor closing,
// ctx ending) and of side, one at a time, until side says it is done, and
// applies the one error policy of every transport to whatever a handler
// returns:
//
//   - errConnDone ends the loop normally: nil;
//   - errConnYielded (from idle) ends the loop, not the connection: it is
//     returned as it is;
//   - ErrExecutorClosed (an injected executor closed): every pending request
//     is answered -32603 "Request worker failed", the answers are written
//     (drain), and ErrExecutorClosed is returned;
//   - once ctx has ended, ctx.Err() (a write cut short by it included);
//   - any other error (an output failure) is returned as it is.
//
// It never waits on a handler. Under load it takes the events that are
// ready (outcomes first, then the transport's events and input) without
// waiting on every channel at once, maxReady at most in a row.
func serveConnection[M, E any](ctx context.Context, c *connection, side connSide[M, E]) (err error) {
	defer func() {
		if err != errConnYielded {
			c.endErr = err // what the session's end reports (sessionEnded)
		}
	}()
	ready := 0
	for {
		if done, err := side.finished(); done {
			return c.stopped(ctx, err, side)
		}
		var err error
		if ready < maxReady && takeReady(c, side, &err) {
			ready++
		} else {
			ready = 0
			if err = side.idle(); err == errConnYielded {
				return err // c may be another goroutine's already
			}
			if err == nil {
				err = waitEvent(ctx, c, side)
			}
		}
		if err != nil {
			return c.stopped(ctx, err, side)
		}
	}
}

// takeReady takes one event that is ready now from the channels that are
// busy under load, without waiting on them, and reports whether it took
// one. One channel at a time: a receive that finds its channel empty takes
// no lock, where a select of several locks them all. It never yields or
// spins: with nothing ready the loop lets the transport write and waits
// (cheap calls need no hand-off to wait for: see conn_inline.go).
func takeReady[M, E any](c *connection, side connSide[M, E], err *error) bool {
	select {
	case o := <-c.sub.outcomes:
		*err = c.onOutcome(o)
		return true
	default:
	}
	select {
	case ev := <-side.events():
		*err = side.onEvent(ev)
		return true
	default:
	}
	select {
	case m := <-side.input():
		*err = side.onInput(m)
		return true
	default:
	}
	return false
}

// waitEvent waits for the next event of c or side and handles it.
func waitEvent[M, E any](ctx context.Context, c *connection, side connSide[M, E]) error {
	select {
	case m := <-side.input():
		return side.onInput(m)
	case ev := <-side.events():
		return side.onEvent(ev)
	case o := <-c.sub.outcomes:
		return c.onOutcome(o)
	case call := <-c.calls:
		return c.onPeerCall(call)
	case <-c.changes.signalOrNil():
		if c.beforeChanges != nil {
			c.beforeChanges()
		}
		return c.onChanges(c.changes.take())
	case <-c.executorDone:
		return ErrExecutorClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopped is the loop's error policy (see serveConnection).
func (c *connection) stopped(ctx context.Context, err error, side interface{ drain() error }) error {
	switch {
	case err == nil || errors.Is(err, errConnDone):
		return nil
	case errors.Is(err, ErrExecutorClosed):
		if err := c.onExecutorClosed(); err != nil {
			return err
		}
		if err := side.drain(); err != nil {
			return err
		}
		return ErrExecutorClosed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// signalOrNil is the box's signal, nil (never ready) for no box.
func (b *changeBox) signalOrNil() <-chan struct{} {
	if b == nil {
		return nil
	}
	return b.signal
}
