package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

const appNotification = "notifications/app/event"

func notifyOptions() Options {
	return Options{NotificationMethods: []string{appNotification, "notifications/app/other"}}
}

// notifyAsync calls Notify in a new goroutine and delivers its result.
func notifyAsync(tr *Transport, ctx context.Context, params any) <-chan error {
	done := make(chan error, 1)
	go func() { done <- tr.Notify(ctx, appNotification, params) }()
	return done
}

// An allowed notification is written as one frame without an id, params
// encoded compactly and pure ASCII.
func TestNotifyWritesFrame(t *testing.T) {
	tests := []struct {
		name   string
		params any
		want   string
	}{
		{"no params", nil, `{"jsonrpc":"2.0","method":"notifications/app/event"}`},
		{"map", map[string]any{"n": 1, "s": "é"}, `{"jsonrpc":"2.0","method":"notifications/app/event","params":{"n":1,"s":"\u00e9"}}`},
		{"struct", struct {
			A int    `json:"a"`
			B string `json:"b,omitempty"`
		}{A: 1}, `{"jsonrpc":"2.0","method":"notifications/app/event","params":{"a":1}}`},
		{"raw object compacted", json.RawMessage("{ \"a\" : [1,\n 2] }"), `{"jsonrpc":"2.0","method":"notifications/app/event","params":{"a":[1,2]}}`},
		{"empty object", map[string]int{}, `{"jsonrpc":"2.0","method":"notifications/app/event","params":{}}`},
	}
	h := startHarness(t, notifyOptions())
	h.sync()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.tr.Notify(context.Background(), appNotification, tc.params); err != nil {
				t.Fatalf("Notify = %v", err)
			}
			if got := h.next(); got != tc.want+"\n" {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	h.noFramesLeft()
}

// A method not allowed or params that are not a JSON object: an error
// matching ErrInvalidNotification, and nothing written.
func TestNotifyInvalidWritesNothing(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params any
	}{
		{"method not listed", "notifications/app/unlisted", nil},
		{"protocol method", "notifications/progress", map[string]any{"progressToken": 1, "progress": 1}},
		{"empty method", "", nil},
		{"params array", appNotification, []int{1}},
		{"params string", appNotification, "text"},
		{"params number", appNotification, 5},
		{"params raw array", appNotification, json.RawMessage(`[1]`)},
		{"params not encodable", appNotification, map[string]any{"c": make(chan int)}},
	}
	h := startHarness(t, notifyOptions())
	h.sync()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.tr.Notify(context.Background(), tc.method, tc.params); !errors.Is(err, ErrInvalidNotification) {
				t.Fatalf("Notify = %v, want ErrInvalidNotification", err)
			}
		})
	}
	// Had anything been written, it would come before this frame.
	if err := h.tr.Notify(context.Background(), "notifications/app/other", nil); err != nil {
		t.Fatal(err)
	}
	if got := h.next(); got != `{"jsonrpc":"2.0","method":"notifications/app/other"}`+"\n" {
		t.Fatalf("got %s", got)
	}
	h.noFramesLeft()
}

// Every name the protocol defines is refused when the transport is built.
func TestNotificationMethodsRefuseProtocolNames(t *testing.T) {
	for _, m := range []string{
		"notifications/cancelled", "notifications/progress", "notifications/message",
		"notifications/initialized", "notifications/resources/updated",
		"notifications/resources/list_changed", "notifications/tools/list_changed",
		"notifications/prompts/list_changed", "notifications/roots/list_changed",
		"notifications/subscriptions/acknowledged", "notifications/elicitation/complete",
		"notifications/tasks", "notifications/tasks/status", "notifications/tasks/anything",
	} {
		_, err := NewTransport(newTestDispatcher(), Options{Input: strings.NewReader(""), Output: io.Discard, NotificationMethods: []string{appNotification, m}})
		if err == nil || !strings.Contains(err.Error(), "defined by the protocol") {
			t.Errorf("NotificationMethods with %s: %v", m, err)
		}
	}
}

// The allowlist is copied: changing the caller's slice later changes nothing.
func TestNotificationMethodsAreCopied(t *testing.T) {
	methods := []string{appNotification}
	opts := Options{NotificationMethods: methods}
	h := startHarness(t, opts)
	methods[0] = "notifications/app/changed"
	h.sync()
	if err := h.tr.Notify(context.Background(), appNotification, nil); err != nil {
		t.Fatalf("Notify of the method listed at construction = %v", err)
	}
	if err := h.tr.Notify(context.Background(), "notifications/app/changed", nil); !errors.Is(err, ErrInvalidNotification) {
		t.Fatalf("Notify of a method added afterwards = %v", err)
	}
	h.next()
	h.noFramesLeft()
}

// Before Serve and after Serve returned nil, Notify fails with ErrClosed and
// writes nothing; an invalid call is refused as invalid in any state.
func TestNotifyOutsideServe(t *testing.T) {
	out := newFrameRecorder()
	in := newFeedReader()
	tr, err := NewTransport(newTestDispatcher(), Options{Input: in, Output: out, NotificationMethods: []string{appNotification}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, notifyAsync(tr, context.Background(), nil), "Notify before Serve"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify before Serve = %v, want ErrClosed", err)
	}
	if err := tr.Notify(context.Background(), "notifications/nope", nil); !errors.Is(err, ErrInvalidNotification) {
		t.Fatalf("invalid Notify before Serve = %v, want ErrInvalidNotification", err)
	}
	in.close(nil)
	if err := tr.Serve(context.Background()); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if err := waitFor(t, notifyAsync(tr, context.Background(), nil), "Notify after Serve"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after Serve returned = %v, want ErrClosed", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.writes != 0 {
		t.Fatalf("%d writes", out.writes)
	}
}

// After end of input, while a request is still running, Notify still writes;
// once Serve has returned it fails with ErrClosed.
func TestNotifyDuringEOFDrain(t *testing.T) {
	asked := make(chan error, 1)
	release := make(chan struct{})
	d := methodDispatcher{"hold": func(ctx context.Context, req *Request) Reply {
		// Fails with ErrNoClientInput once the coordinator has handled the
		// end of input: the test's sign that the drain has begun.
		_, err := req.Peer.Request(context.Background(), "roots/list", nil)
		asked <- err
		<-release
		return Reply{Result: json.RawMessage(`{"held":true}`)}
	}}
	h := startHarnessWith(t, notifyOptions(), d)
	releaseHold := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseHold)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	if got := h.next(); got != `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"roots/list"}`+"\n" {
		t.Fatalf("got %s", got)
	}
	h.in.close(nil)
	if err := waitFor(t, asked, "the end of input to reach the handler"); !errors.Is(err, ErrNoClientInput) {
		t.Fatalf("Peer.Request = %v, want ErrNoClientInput", err)
	}
	if err := h.tr.Notify(context.Background(), appNotification, map[string]int{"n": 1}); err != nil {
		t.Fatalf("Notify during the drain = %v", err)
	}
	if got := h.next(); got != `{"jsonrpc":"2.0","method":"notifications/app/event","params":{"n":1}}`+"\n" {
		t.Fatalf("got %s", got)
	}
	releaseHold()
	err, rest := h.wait()
	if err != nil || len(rest) != 1 || rest[0] != `{"jsonrpc":"2.0","id":1,"result":{"held":true}}`+"\n" {
		t.Fatalf("Serve = %v, frames %q; want nil and the held response", err, rest)
	}
	if err := waitFor(t, notifyAsync(h.tr, context.Background(), nil), "Notify after the drain"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after the drain = %v, want ErrClosed", err)
	}
}

// The caller's context ending while its frame is being written, or while it
// waits behind another write, returns the context's error; the frame the
// transport took is still written (the outcome is unknown to the caller, as
// Notify documents), and nothing is lost or damaged.
func TestNotifyContextEndsWhileWriterBlocked(t *testing.T) {
	w := newGatedWriter()
	h := startHarnessWith(t, Options{Output: w, WriteTimeout: time.Hour, NotificationMethods: []string{appNotification}}, nil)
	releaseWriter := sync.OnceFunc(func() { close(w.release) })
	t.Cleanup(releaseWriter)
	waitFor(t, h.tr.started, "Serve to start")

	writingCtx, cancelWriting := context.WithCancel(context.Background())
	defer cancelWriting()
	writing := notifyAsync(h.tr, writingCtx, map[string]string{"call": "writing"})
	waitFor(t, w.entered, "the first frame's write")

	waitingCtx, cancelWaiting := context.WithCancel(context.Background())
	watched := &doneWatchContext{Context: waitingCtx, waiting: make(chan struct{})}
	waiting := notifyAsync(h.tr, watched, map[string]string{"call": "waiting"})
	waitFor(t, watched.waiting, "the second call to wait for its turn")
	cancelWaiting()
	if err := waitFor(t, waiting, "the waiting call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting Notify = %v, want context.Canceled", err)
	}
	cancelWriting()
	if err := waitFor(t, writing, "the writing call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("writing Notify = %v, want context.Canceled", err)
	}

	releaseWriter()
	if err := h.tr.Notify(context.Background(), appNotification, map[string]string{"call": "after"}); err != nil {
		t.Fatalf("Notify after the writer recovered = %v", err)
	}
	if err, _ := h.finish(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	frame := func(call string) string {
		return `{"jsonrpc":"2.0","method":"notifications/app/event","params":{"call":"` + call + `"}}` + "\n"
	}
	got := strings.Join(w.frames(), "")
	taken := frame("writing") + frame("waiting") + frame("after")
	notTaken := frame("writing") + frame("after")
	if got != taken && got != notTaken {
		t.Fatalf("written %q, want %q, with or without the waiting call's frame between", got, notTaken)
	}
}

// Callers sending notification after notification while the input ends:
// each call returns nil or ErrClosed, none hangs, every nil stands for
// exactly one frame written and an ErrClosed for none. Callers loop until
// refused, so some are always waiting for their turn when Serve returns.
func TestNotifyRacingEndOfInput(t *testing.T) {
	const rounds, callers = 20, 16
	for round := range rounds {
		h := startHarness(t, notifyOptions())
		h.sync()
		start := make(chan struct{})
		accepted := make([]int, callers) // calls 0..accepted-1 returned nil
		refusals := make([]error, callers)
		var wg sync.WaitGroup
		for g := range callers {
			wg.Go(func() {
				<-start
				for {
					err := h.tr.Notify(context.Background(), appNotification, map[string]int{"g": g, "k": accepted[g]})
					if err != nil {
						refusals[g] = err
						return
					}
					accepted[g]++
				}
			})
		}
		allReturned := make(chan struct{})
		go func() { wg.Wait(); close(allReturned) }()
		close(start)
		var frames []string
		for range 4 * callers { // the callers are busy: end the input now
			frames = append(frames, h.next())
		}
		h.in.close(nil)
		waitFor(t, allReturned, "every caller to be refused")
		err, rest := h.wait()
		if err != nil {
			t.Fatalf("round %d: Serve = %v", round, err)
		}
		frames = append(frames, rest...)
		written := make([]map[int]int, callers)
		for g := range written {
			written[g] = map[int]int{}
		}
		for _, f := range frames {
			var n struct{ Params struct{ G, K int } }
			if decodeFrame(t, f); json.Unmarshal([]byte(f), &n) != nil {
				t.Fatalf("round %d: frame %q", round, f)
			}
			written[n.Params.G][n.Params.K]++
		}
		for g := range callers {
			if !errors.Is(refusals[g], ErrClosed) {
				t.Fatalf("round %d: caller %d refused with %v, want ErrClosed", round, g, refusals[g])
			}
			if written[g][accepted[g]] != 0 {
				t.Fatalf("round %d: caller %d's refused call was written", round, g)
			}
			for k := range accepted[g] {
				if written[g][k] != 1 {
					t.Fatalf("round %d: caller %d's call %d returned nil, written %d times", round, g, k, written[g][k])
				}
			}
			if len(written[g]) != accepted[g] {
				t.Fatalf("round %d: caller %d: %d calls accepted, %d distinct frames", round, g, accepted[g], len(written[g]))
			}
		}
	}
}

// Many calls racing a terminal write failure: exactly one gets the
// *OutputError of its own write, the others ErrTransportDown or ErrClosed;
// none hangs and Write is called once.
func TestNotifyRacingOutputFailure(t *testing.T) {
	const callers = 32
	w := &failingWriter{}
	h := startHarnessWith(t, Options{Output: w, NotificationMethods: []string{appNotification}}, nil)
	waitFor(t, h.tr.started, "Serve to start")
	start := make(chan struct{})
	results := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			results[i] = h.tr.Notify(context.Background(), appNotification, map[string]int{"i": i})
		})
	}
	allReturned := make(chan struct{})
	go func() { wg.Wait(); close(allReturned) }()
	close(start)
	waitFor(t, allReturned, "every Notify to return")
	serveErr := waitFor(t, h.done, "Serve to return")
	h.ended = true
	if !errors.Is(serveErr, ErrOutputFailed) || !errors.Is(serveErr, io.ErrClosedPipe) {
		t.Fatalf("Serve = %v, want the output failure", serveErr)
	}
	outputErrors := 0
	for i, err := range results {
		var oe *OutputError
		switch {
		case errors.As(err, &oe) && !errors.Is(err, ErrTransportDown):
			outputErrors++
		case errors.Is(err, ErrTransportDown):
			if !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("call %d: %v does not name the cause", i, err)
			}
		case errors.Is(err, ErrClosed):
		default:
			t.Errorf("call %d returned %v", i, err)
		}
	}
	if outputErrors != 1 {
		t.Errorf("%d calls got the write's *OutputError, want 1", outputErrors)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls != 1 {
		t.Fatalf("%d Write calls, want 1", w.calls)
	}
}

// A call waiting for its turn when the connection fails gets an error
// matching ErrTransportDown that names the cause; nothing of it is written.
func TestNotifyWaitingWhenOutputFails(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}, 10), release: make(chan struct{})}
	h := startHarnessWith(t, Options{Output: w, WriteTimeout: time.Hour, NotificationMethods: []string{appNotification}}, nil)
	releaseWriter := sync.OnceFunc(func() { close(w.release) })
	t.Cleanup(releaseWriter)
	waitFor(t, h.tr.started, "Serve to start")
	writing := notifyAsync(h.tr, context.Background(), nil)
	waitFor(t, w.entered, "the first write")
	watched := &doneWatchContext{Context: context.Background(), waiting: make(chan struct{})}
	waiting := notifyAsync(h.tr, watched, nil)
	waitFor(t, watched.waiting, "the second call to wait for its turn")
	releaseWriter() // the blocked Write fails
	if err := waitFor(t, writing, "the writing call"); !errors.Is(err, ErrOutputFailed) || errors.Is(err, ErrTransportDown) {
		t.Fatalf("writing call = %v, want its *OutputError", err)
	}
	if err := waitFor(t, waiting, "the waiting call"); !errors.Is(err, ErrTransportDown) || !errors.Is(err, ErrOutputFailed) {
		t.Fatalf("waiting call = %v, want ErrTransportDown wrapping the output failure", err)
	}
	if err := waitFor(t, h.done, "Serve to return"); !errors.Is(err, ErrOutputFailed) {
		t.Fatalf("Serve = %v", err)
	}
	h.ended = true
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls != 1 {
		t.Fatalf("%d Write calls, want 1", w.calls)
	}
}

// Notifications from many goroutines and responses to many requests: every
// Write carries whole frames only, and every frame arrives once, undamaged.
func TestFramesNeverInterleave(t *testing.T) {
	const senders, perSender, requests = 16, 25, 100
	h := startHarness(t, notifyOptions())
	h.sync()
	pad := func(n int) string { return strings.Repeat("x", n*389%8192) }
	errs := make(chan error, senders*perSender)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				n := g*perSender + i
				errs <- h.tr.Notify(context.Background(), appNotification, map[string]any{"n": n, "pad": pad(n)})
			}
		})
	}
	for i := range requests {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d,"pad":"%s"}}`, i, i, pad(i+7)))
	}
	allSent := make(chan struct{})
	go func() { wg.Wait(); close(allSent) }()
	waitFor(t, allSent, "every Notify to return")
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Notify = %v", err)
		}
	}
	notes, answers := map[int]bool{}, map[int]bool{}
	for range senders*perSender + requests {
		raw := h.next()
		f := decodeFrame(t, raw)
		var body struct {
			N   int
			Pad string
		}
		seen, extra := notes, 0
		if f.isResponse() {
			seen, extra = answers, 7
			json.Unmarshal(f.Result, &body)
		} else {
			json.Unmarshal(f.Params, &body)
		}
		if seen[body.N] || body.Pad != pad(body.N+extra) {
			t.Fatalf("repeated or damaged frame %.200q", raw)
		}
		seen[body.N] = true
	}
	h.noFramesLeft()
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	if h.out.writes > senders*perSender+requests+1 {
		t.Fatalf("%d Write calls, want at most one per frame", h.out.writes)
	}
}
