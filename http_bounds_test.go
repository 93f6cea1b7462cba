package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// keptFrames is the total length of the frames s's streams keep, counted by
// walking them: what the replay counters must agree with. Call it as s's
// owner.
func (s *httpSession) keptFrames() int64 {
	var n int64
	for _, l := range s.streams {
		for _, f := range l.events {
			n += int64(len(f))
		}
	}
	return n
}

// onOwner runs f on s's owner goroutine and returns when it has.
func (s *httpSession) onOwner(t *testing.T, f func()) {
	t.Helper()
	ran := make(chan struct{})
	if !s.control(func() { f(); close(ran) }) {
		t.Fatal("the session has ended")
	}
	waitFor(t, ran, "the session's owner")
}

// checkReplayCounts fails unless the counters agree with what is kept. Call
// it as the sessions' owner.
func checkReplayCounts(t *testing.T, h *HTTPHandler, sessions ...*httpSession) {
	t.Helper()
	var total int64
	for _, s := range sessions {
		if got, kept := s.retained, s.keptFrames(); got != kept {
			t.Fatalf("session %s counts %d bytes, keeps %d", s.id, got, kept)
		}
		total += s.retained
	}
	h.replay.mu.Lock()
	defer h.replay.mu.Unlock()
	if h.replay.used != total {
		t.Fatalf("handler counts %d bytes, its sessions keep %d", h.replay.used, total)
	}
}

func newBudgetTestHandler(t *testing.T, perSession, total int) *HTTPHandler {
	t.Helper()
	h, err := NewHTTPHandler(newTestRuntime(t, testOptions()), HTTPOptions{MaxSessionReplayBytes: perSession, MaxReplayBytes: total})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// newTestSession returns a session of h whose owner is the test: its loop
// does not run, and the test calls the owner's methods itself.
func (h *HTTPHandler) newTestSession(t *testing.T, id string) *httpSession {
	t.Helper()
	s := &httpSession{id: id, h: h, changes: newChangeBox(), done: make(chan struct{})}
	s.conn = newConnection(connConfig{dispatcher: h.dispatcher, out: s, sub: h.executor.newSubmitter(), log: quietLogger()})
	s.idleTimer = time.NewTimer(time.Hour)
	s.standalone = s.newStream()
	s.standalone.standalone = true
	if ok, _ := h.sessions.add(s); !ok {
		t.Fatal("the session table is full")
	}
	t.Cleanup(func() { // before the handler's Close, which would wait for a loop that never ran
		select {
		case <-s.done:
		default:
			s.end()
		}
	})
	return s
}

func frameOf(n int) []byte { return []byte(strings.Repeat("x", n)) }

func TestReplayBudgetPerSessionDropsEndedStreamsThenOldestEvents(t *testing.T) {
	h := newBudgetTestHandler(t, 1000, 1<<20)
	s := h.newTestSession(t, "s")
	ended := s.newStream()
	s.appendEvent(ended, frameOf(300))
	s.appendEvent(ended, frameOf(300))
	ended.ended = true
	live := s.newStream()
	s.appendEvent(live, frameOf(300))
	checkReplayCounts(t, h, s)
	if s.retained != 900 {
		t.Fatalf("kept %d bytes, want 900", s.retained)
	}

	// Over the budget: the ended stream goes first, whole.
	s.appendEvent(live, frameOf(300))
	checkReplayCounts(t, h, s)
	if s.stream(ended.number) != nil || s.retained != 600 {
		t.Fatalf("after going over: ended stream kept %v, %d bytes; want it dropped and 600", s.stream(ended.number) != nil, s.retained)
	}

	// A connection carrying the live stream, handed nothing yet.
	sw := newStreamWriter()
	w := &sw
	live.writer, w.stream = w, live
	s.writers++

	// Then the oldest events of the live streams; a resumption after a
	// dropped event is refused, one after a kept event is served.
	s.appendEvent(live, frameOf(300))
	s.appendEvent(live, frameOf(300))
	checkReplayCounts(t, h, s)
	if s.retained > 1000 {
		t.Fatalf("kept %d bytes, over the 1000-byte budget", s.retained)
	}
	if why := live.replayable(0); !strings.Contains(why, "no longer kept") {
		t.Fatalf("replayable(0) = %q, want the events no longer kept", why)
	}
	if why := live.replayable(live.first - 1); why != "" {
		t.Fatalf("replayable after the oldest kept: %q", why)
	}
	if why := live.replayable(99); !strings.Contains(why, "did not send") {
		t.Fatalf("replayable(99) = %q, want an event not sent", why)
	}

	// The connection that was still to get a dropped event is released: its
	// response ends, for the client to resume and learn so.
	if live.writer != nil {
		t.Fatal("the connection still carries a stream whose next event it will never get")
	}
	<-w.ready
	if b := w.take(); !b.final || len(b.events) != 0 {
		t.Fatalf("the connection was handed %+v, want a final, empty batch", b)
	}

	// An event larger than the budget is kept alone: the one being sent.
	seq := s.appendEvent(live, frameOf(5000))
	checkReplayCounts(t, h, s)
	if s.retained != 5000 || live.first != seq {
		t.Fatalf("kept %d bytes from event %d, want only event %d (5000 bytes)", s.retained, live.first, seq)
	}

	// Ending the session frees everything.
	s.end()
	if h.replay.used != 0 {
		t.Fatalf("after the session ended the handler counts %d bytes", h.replay.used)
	}
}

func TestReplayBudgetHandlerWideTakesFromTheSessionKeepingMost(t *testing.T) {
	h := newBudgetTestHandler(t, 1500, 2000)
	big, small := h.newTestSession(t, "big"), h.newTestSession(t, "small")
	b := big.newStream()
	for range 4 {
		big.appendEvent(b, frameOf(350)) // 1400
	}
	smallStream := small.newStream()
	small.appendEvent(smallStream, frameOf(200))
	small.appendEvent(smallStream, frameOf(500)) // 2100 in all: over the total
	select {
	case <-big.changes.signal:
		if !big.shedAsked.Swap(false) {
			t.Fatal("the session keeping the most was woken, not asked for bytes back")
		}
		big.shedReplay() // as big's owner, asked for bytes back
	default:
		t.Fatal("the session keeping the most was not asked for bytes back")
	}
	checkReplayCounts(t, h, big, small)
	if h.replay.used > 2000 {
		t.Fatalf("the sessions keep %d bytes, over the 2000-byte total", h.replay.used)
	}
	if big.retained != 1050 || small.retained != 700 {
		t.Fatalf("big keeps %d, small %d; want 1050 and 700 (the excess taken from big)", big.retained, small.retained)
	}
}

// The standalone stream's queue (messages for a GET stream not connected)
// is bounded by bytes: a GET connecting later gets the newest ones.
func TestReplayBudgetBoundsTheGetStreamQueue(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxSessionReplayBytes: 300})
	h := s.legacySession(ProtocolVersion20250618, `{}`)
	sess := s.h.sessions.get(h[headerSessionID])
	for range 50 {
		s.rt.AnnounceListChanged(ToolsChanged)
	}
	frame := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	var kept int64
	var sent uint64
	eventually(t, "the changes to reach the session", func() bool {
		sess.onOwner(t, func() {
			checkReplayCounts(t, s.h, sess)
			kept, sent = sess.retained, sess.standalone.last()
		})
		// All 50 in: a change still in the box would come after the
		// GET's batch and drop an event the GET was not handed yet.
		return sent == 50
	})
	if kept < int64(300-len(frame)) {
		t.Fatalf("the GET stream's queue keeps %d bytes; want all that fits in 300", kept)
	}
	if kept > 300 {
		t.Fatalf("the GET stream's queue keeps %d bytes; want at most 300, and all that fits", kept)
	}
	resp := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}, "")
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	for range kept / int64(len(frame)) {
		if got := events.nextMessage(); got != frame {
			t.Fatalf("queued event %s", got)
		}
	}
	s.rt.AnnounceListChanged(ResourcesChanged)
	if got := events.nextMessage(); !strings.Contains(got, "resources/list_changed") {
		t.Fatalf("after the queue: %s, want the new resources/list_changed", got)
	}
}

// A client that leaves a stream whose request goes on sending keeps at most
// the budget; resuming after an event dropped since is refused 400.
func TestHTTPReplayBudgetRefusesResumingDroppedEvents(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	left, sentAll := make(chan struct{}), make(chan struct{})
	pad := json.RawMessage(`{"pad":"` + strings.Repeat("p", 1000) + `"}`)
	if err := rt.AddTool(Tool{Name: "chatty"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.peer.Notify(ctx, "notifications/message", pad); err != nil {
			return nil, err
		}
		<-left
		for range 10 {
			if err := req.peer.Notify(ctx, "notifications/message", pad); err != nil {
				return nil, err
			}
		}
		close(sentAll)
		return TextResult("done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{MaxSessionReplayBytes: 4000})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	resp := s.do(ctx, http.MethodPost, h, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"chatty"}}`)
	events := newSSEReader(t, resp)
	var first sseEvent
	for first.data == "" {
		ev, err := events.next()
		if err != nil {
			t.Fatal(err)
		}
		first = ev
	}
	cancel()
	resp.Body.Close()
	close(left)
	<-sentAll
	sess := s.h.sessions.get(h[headerSessionID])
	sess.onOwner(t, func() {
		checkReplayCounts(t, s.h, sess)
		if sess.retained > 4000 {
			t.Errorf("the session keeps %d bytes, over its 4000-byte budget", sess.retained)
		}
	})
	resumed := s.do(context.Background(), http.MethodGet, map[string]string{
		headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: first.id,
	}, "")
	if body := readBody(t, resumed); resumed.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no longer kept") {
		t.Fatalf("resuming after a dropped event: status %d, body %s; want 400", resumed.StatusCode, body)
	}
}

func TestHTTPLastEventIDGarbage(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	for _, id := range []string{"garbage", "1-", "-1", "1-99999", "18446744073709551615-18446744073709551615", "1--1", strings.Repeat("9", 5000) + "-1"} {
		resp := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: id}, "")
		if body := readBody(t, resp); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %.40q: status %d, body %s; want 400", id, resp.StatusCode, body)
		}
	}
}

// A body that trickles in slower than ReadBodyTimeout is answered 408.
func TestHTTPSlowBodyTimesOut(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{ReadBodyTimeout: 50 * time.Millisecond})
	addr := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", addr)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: status %d, body %s; want 408", resp.StatusCode, body)
	}
}

// The body's read deadline is lifted once it is read: a response that takes
// longer than ReadBodyTimeout is not cut.
func TestHTTPReadBodyTimeoutSparesLongResponses(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	if err := rt.AddTool(Tool{Name: "slow"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.peer.Notify(ctx, "notifications/message", json.RawMessage(`{}`)); err != nil {
			return nil, err
		}
		select { // a sleep in a fake handler: longer than the body's deadline
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return TextResult("slow done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{ReadBodyTimeout: 10 * time.Millisecond})
	resp := s.post(stateless("tools/call", "slow"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow",`+meta2026+`}}`)
	if body := readBody(t, resp); !strings.Contains(body, "slow done") {
		t.Fatalf("status %d, body %s; want the result after the body's deadline passed", resp.StatusCode, body)
	}
}

// A JSON answer its client never reads does not hold the handler: its
// write times out.
func TestHTTPUnreadJSONAnswerTimesOut(t *testing.T) {
	rt := newHTTPCatalogRuntime(t)
	h, err := NewHTTPHandler(rt, HTTPOptions{MaxBodyBytes: 40 << 20, WriteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	defer func() { srv.Close(); h.Close() }()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("e", 32<<20) + `"},` + meta2026 + `}}`
	go fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: %s\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: %d\r\n\r\n%s", addr, ProtocolVersion20260728, len(body), body)
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler is still writing a 32 MB answer nobody reads")
	}
}

func TestHTTPHostileBodies(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	for _, tt := range []struct {
		name, body string
		want       int
		code       string
	}{
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", 400, "-32700"},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`, 400, "-32700"},
		{"truncated", `{"jsonrpc":"2.0","id":1,`, 400, "-32700"},
		{"empty", ``, 400, "-32700"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, "-32600"},
		{"scalar", `42`, 400, "-32600"},
	} {
		resp := s.post(nil, tt.body)
		if body := readBody(t, resp); resp.StatusCode != tt.want || !strings.Contains(body, tt.code) {
			t.Errorf("%s: status %d, body %.200s; want %d with %s", tt.name, resp.StatusCode, body, tt.want, tt.code)
		}
	}
}

// notifications/cancelled names a request of its own session only.
func TestHTTPCancelledCannotReachAnotherSession(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	started, release := make(chan struct{}), make(chan struct{})
	if err := rt.AddTool(Tool{Name: "hold"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		close(started)
		select {
		case <-release:
			return TextResult("held to the end"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	victim, attacker := s.legacySession(ProtocolVersion20251125, `{}`), s.legacySession(ProtocolVersion20251125, `{}`)
	answer := make(chan string, 1)
	go func() {
		resp := s.post(victim, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold"}}`)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-started
	resp := s.post(attacker, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	if readBody(t, resp); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancelled: status %d, want 202", resp.StatusCode)
	}
	// The attacker's notification was handled (202) before this point; the
	// victim's request must still be running and finish normally.
	close(release)
	if got := <-answer; !strings.Contains(got, "held to the end") {
		t.Fatalf("victim's answer %s, want its result", got)
	}
}
