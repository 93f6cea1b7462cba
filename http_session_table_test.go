package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sessionWorld is a handler whose clients are loopback addresses, with a
// "hold" tool that runs until release is closed (or its request ends).
type sessionWorld struct {
	t       *testing.T
	s       *httpTestServer
	started chan struct{} // a hold call started
	release chan struct{}
	clients map[string]*http.Client
}

func newSessionWorld(t *testing.T, opts HTTPOptions) *sessionWorld {
	t.Helper()
	ropts := testOptions()
	ropts.ToolsListChanged = true
	rt := newTestRuntime(t, ropts)
	w := &sessionWorld{t: t, started: make(chan struct{}, 16), release: make(chan struct{}), clients: make(map[string]*http.Client)}
	if err := rt.AddTool(Tool{Name: "hold"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		w.started <- struct{}{}
		select {
		case <-w.release:
			return TextResult("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	w.s = newHTTPTestServer(t, rt, opts)
	return w
}

// client returns the HTTP client whose connections come from ip.
func (w *sessionWorld) client(ip string) *http.Client {
	if c, ok := w.clients[ip]; ok {
		return c
	}
	c := clientFrom(w.t, ip)
	w.clients[ip] = c
	return c
}

// post sends body from ip in session id ("": none) and returns the answer's
// status, body and session id.
func (w *sessionWorld) post(ip, id, body string) (int, string, string) {
	w.t.Helper()
	header := map[string]string{}
	if id != "" {
		header[headerSessionID] = id
		header["MCP-Protocol-Version"] = ProtocolVersion20251125
	}
	resp, err := w.s.postWith(context.Background(), w.client(ip), header, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	got := readBody(w.t, resp)
	return resp.StatusCode, got, resp.Header.Get(headerSessionID)
}

const worldInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initialize makes a session from ip, initialized: its id, or "" with the
// status and body of a refused initialize.
func (w *sessionWorld) initialize(ip string) (id string, status int, body string) {
	w.t.Helper()
	status, body, id = w.post(ip, "", worldInitialize)
	if status != http.StatusOK {
		return "", status, body
	}
	if st, b, _ := w.post(ip, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		w.t.Fatalf("notifications/initialized: %d %s", st, b)
	}
	return id, status, body
}

// mustInitialize makes a session from ip and fails the test if it is refused.
func (w *sessionWorld) mustInitialize(ip string) string {
	w.t.Helper()
	id, status, body := w.initialize(ip)
	if id == "" {
		w.t.Fatalf("initialize from %s: %d %s", ip, status, body)
	}
	return id
}

// alive reports whether session id answers a ping (false: 404, it ended).
func (w *sessionWorld) alive(ip, id string) bool {
	w.t.Helper()
	switch status, body, _ := w.post(ip, id, `{"jsonrpc":"2.0","id":"p","method":"ping"}`); status {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	default:
		w.t.Fatalf("ping in %s: %d %s", id, status, body)
		return false
	}
}

// checkAlive fails the test unless exactly the sessions in want answer.
func (w *sessionWorld) checkAlive(ip string, ids []string, want ...bool) {
	w.t.Helper()
	for i, id := range ids {
		if got := w.alive(ip, id); got != want[i] {
			w.t.Errorf("session %d of %s (%s): alive %v, want %v", i+1, ip, id, got, want[i])
		}
	}
}

// held returns how many live sessions each client address created.
func (w *sessionWorld) held() map[string]int {
	t := &w.s.h.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int)
	for name, n := range t.byClient {
		out[name.name] = n
	}
	return out
}

// openStream opens session id's GET stream from ip and reads its priming
// event; the caller closes the response.
func (w *sessionWorld) openStream(ip, id string) *http.Response {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, id)
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion20251125)
	resp, err := w.client(ip).Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET stream of %s: status %d", id, resp.StatusCode)
	}
	if _, err := newSSEReader(w.t, resp).next(); err != nil {
		w.t.Fatalf("GET stream of %s: %v", id, err)
	}
	return resp
}

// startHold starts a hold call in session id and returns its answer once
// the call is running.
func (w *sessionWorld) startHold(ip, id string) <-chan int {
	w.t.Helper()
	answer := make(chan int, 1)
	go func() {
		header := map[string]string{headerSessionID: id, "MCP-Protocol-Version": ProtocolVersion20251125}
		resp, err := w.s.postWith(context.Background(), w.client(ip), header, strings.NewReader(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hold"}}`))
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	waitFor(w.t, w.started, "the hold call to start")
	return answer
}

// awaitIdle waits until the owner of session id has parked it idle, which a
// client cannot see when the stream it closed was the session's last work.
func (w *sessionWorld) awaitIdle(id string) {
	w.t.Helper()
	s := w.s.h.sessions.get(id)
	eventually(w.t, "session "+id+" to be idle", func() bool {
		_, idle := s.idleSince()
		return idle
	})
}

const (
	clientA = "127.0.0.1"
	clientB = "127.0.0.2"
)

// One client alone may create every session; at the cap its next
// initialize takes the place of its own longest-idle session.
func TestHTTPSessionsOneClientReachesTheCap(t *testing.T) {
	w := newSessionWorld(t, HTTPOptions{MaxSessions: 4})
	var ids []string
	for range 4 {
		ids = append(ids, w.mustInitialize(clientA))
	}
	if got := w.held()[clientA]; got != 4 {
		t.Fatalf("client A holds %d sessions, want 4", got)
	}
	w.alive(clientA, ids[0]) // now ids[1] has been idle longest
	w.mustInitialize(clientA)
	w.checkAlive(clientA, ids, true, false, true, true)
	if got := w.held()[clientA]; got != 4 {
		t.Errorf("client A holds %d sessions, want 4", got)
	}
}

// At the cap a newcomer's initialize takes the place of the longest-idle
// session of the client holding the most, which then answers 404.
func TestHTTPSessionsNewcomerTakesTheLongestIdle(t *testing.T) {
	w := newSessionWorld(t, HTTPOptions{MaxSessions: 4})
	var ids []string
	for range 4 {
		ids = append(ids, w.mustInitialize(clientA))
	}
	w.alive(clientA, ids[0])
	w.alive(clientA, ids[2]) // longest idle now: ids[1], then ids[3]
	w.mustInitialize(clientB)
	if got := w.held(); got[clientA] != 3 || got[clientB] != 1 {
		t.Fatalf("sessions held %v, want A 3 and B 1", got)
	}
	w.mustInitialize(clientB)
	if got := w.held(); got[clientA] != 2 || got[clientB] != 2 {
		t.Fatalf("sessions held %v, want 2 each", got)
	}
	w.checkAlive(clientA, ids, true, false, true, false)
}

// A session with a request running or a stream open is never taken: with
// every session busy a newcomer is refused 503, and once one of them is
// idle its place is taken.
func TestHTTPSessionsBusyAreNeverTaken(t *testing.T) {
	w := newSessionWorld(t, HTTPOptions{MaxSessions: 3})
	ids := []string{w.mustInitialize(clientA), w.mustInitialize(clientA), w.mustInitialize(clientA)}
	held := w.startHold(clientA, ids[0])
	stream1 := w.openStream(clientA, ids[1])
	defer stream1.Body.Close()
	stream2 := w.openStream(clientA, ids[2])
	defer stream2.Body.Close()
	for _, ip := range []string{clientB, clientA} {
		if id, status, body := w.initialize(ip); id != "" || status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":-32603,"message":"Server session capacity exhausted"`) {
			t.Fatalf("initialize from %s with every session busy: %d %q, session %q; want 503 and the capacity error", ip, status, body, id)
		}
	}
	close(w.release)
	if status := waitFor(t, held, "the hold call's answer"); status != http.StatusOK {
		t.Fatalf("the hold call: status %d", status)
	}
	w.mustInitialize(clientB) // the held session is idle now
	w.checkAlive(clientA, ids, false, true, true)
}

// Two clients at the cap converge to equal parts (a client holding two more
// than a newcomer's gives way, else the newcomer's client recycles its own
// longest-idle session), or with MaxClientSessions the newcomer's takes
// from the others only up to its share.
func TestHTTPSessionsTwoClientsGetFairShares(t *testing.T) {
	for _, tt := range []struct {
		name         string
		share        int
		wantA, wantB int
	}{
		{"equal parts", 0, 4, 4},
		{"MaxClientSessions 2", 2, 6, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newSessionWorld(t, HTTPOptions{MaxSessions: 8, MaxClientSessions: tt.share})
			var a, b []string
			for range 8 {
				a = append(a, w.mustInitialize(clientA))
			}
			for range 6 {
				b = append(b, w.mustInitialize(clientB))
			}
			if got := w.held(); got[clientA] != tt.wantA || got[clientB] != tt.wantB {
				t.Fatalf("after 6 initializes of B: sessions held %v, want A %d and B %d", got, tt.wantA, tt.wantB)
			}
			// B's last initializes recycled its own oldest sessions.
			for i, id := range b {
				if want := i >= 6-tt.wantB; w.alive(clientB, id) != want {
					t.Errorf("B's session %d: alive %v, want %v", i+1, !want, want)
				}
			}
			w.mustInitialize(clientA) // A holds as many as B, or more: it recycles its own
			if got := w.held(); got[clientA] != tt.wantA || got[clientB] != tt.wantB {
				t.Errorf("after another initialize of A: sessions held %v, want A %d and B %d", got, tt.wantA, tt.wantB)
			}
		})
	}
}

// A session whose place is taken ends as any other: the telemetry counts it
// ended, and what it held (its executor client, its replay bytes, its
// place in the change hub) is released before the newcomer is answered.
func TestHTTPSessionTakenIsReleased(t *testing.T) {
	tel, err := NewTelemetry(TelemetryOptions{MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := newSessionWorld(t, HTTPOptions{MaxSessions: 2, Observer: tel})
	h := w.s.h
	taken, kept := w.mustInitialize(clientA), w.mustInitialize(clientA)
	// The taken session keeps a list change for replay: it was sent on its
	// GET stream, which its client then closed.
	stream := w.openStream(clientA, taken)
	if err := w.s.rt.AddTool(Tool{Name: "late"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult(""), nil }); err != nil {
		t.Fatal(err)
	}
	if got := newSSEReader(t, stream).nextMessage(); !strings.Contains(got, "tools/list_changed") {
		t.Fatalf("GET stream: %s, want tools/list_changed", got)
	}
	stream.Body.Close()
	w.awaitIdle(taken)
	w.alive(clientA, kept) // the other session was used since: taken has been idle longest
	session := h.sessions.get(taken)
	h.replay.mu.Lock()
	keptBytes, usedBefore := h.replay.kept[session], h.replay.used
	h.replay.mu.Unlock()
	if keptBytes == 0 {
		t.Fatal("the session keeps no replay bytes before it is taken")
	}
	if got := tel.sessionsOpen.Load(); got != 2 {
		t.Fatalf("sessions gauge %d, want 2", got)
	}

	w.mustInitialize(clientB)
	h.replay.mu.Lock()
	_, stillKept := h.replay.kept[session]
	used := h.replay.used
	h.replay.mu.Unlock()
	h.clients.mu.Lock()
	entry := h.clients.byName[sessionClientName(taken)]
	h.clients.mu.Unlock()
	h.changes.mu.Lock()
	_, inHub := h.changes.boxes[session]
	h.changes.mu.Unlock()
	switch {
	case stillKept || used != usedBefore-keptBytes:
		t.Errorf("after the session was taken: its replay bytes kept %v, %d bytes kept in all; want none of its %d, %d in all", stillKept, used, keptBytes, usedBefore-keptBytes)
	case entry != nil && entry.users != 0:
		t.Errorf("its executor client still has %d users", entry.users)
	case inHub:
		t.Error("it is still in the change hub")
	}
	if got := tel.sessionsOpen.Load(); got != 2 {
		t.Errorf("sessions gauge %d, want 2 (one ended, one started)", got)
	}
	var b strings.Builder
	tel.metrics.writePrometheus(&b)
	if want := `mcp_server_session_duration_seconds_count{mcp_protocol_version="2025-11-25",network_protocol_name="http",network_transport="tcp"} 1`; !strings.Contains(b.String(), want) {
		t.Errorf("want %s in:\n%s", want, b.String())
	}
	w.checkAlive(clientA, []string{taken, kept}, false, true)
}

// The choice at the cap, on the table alone: which session a newcomer of
// client "n" takes, given the parked idle sessions of each client (oldest
// first) and the busy ones.
func TestSessionTableTakesIdle(t *testing.T) {
	type session struct {
		client string
		idle   bool
		since  int64
	}
	for _, tt := range []struct {
		name     string
		share    int
		sessions []session
		want     int // index of the session taken, -1 for none
	}{
		{"the client holding the most gives way", 0, []session{{"a", true, 5}, {"a", true, 3}, {"b", true, 1}, {"a", true, 4}}, 1},
		{"its longest-idle session", 0, []session{{"a", true, 9}, {"a", true, 2}, {"a", true, 7}}, 1},
		{"busy sessions are skipped", 0, []session{{"a", false, 1}, {"a", true, 8}, {"a", false, 2}}, 1},
		{"a client holding one more gives nothing: the newcomer's own", 0, []session{{"a", true, 1}, {"a", true, 2}, {"n", true, 5}}, 2},
		{"every session busy", 0, []session{{"a", false, 1}, {"n", false, 2}}, -1},
		{"the most holding client has none idle: the next", 0, []session{{"a", false, 1}, {"a", false, 2}, {"a", false, 3}, {"b", true, 9}, {"b", true, 8}}, 4},
		{"at its share the newcomer takes only its own", 2, []session{{"a", true, 1}, {"a", true, 2}, {"a", true, 3}, {"n", true, 9}, {"n", true, 8}}, 4},
		{"at its share, with none of its own idle", 2, []session{{"a", true, 1}, {"a", true, 2}, {"n", false, 9}, {"n", false, 8}}, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			table := sessionTable{max: len(tt.sessions), perClient: cmp.Or(tt.share, len(tt.sessions)), byID: make(map[string]*httpSession), byClient: make(map[clientName]int)}
			var all []*httpSession
			for i, spec := range tt.sessions {
				s := &httpSession{id: fmt.Sprint(i), creator: clientName{clientByAddr, spec.client}}
				if spec.idle {
					s.run.Store(runParked | runIdle)
				} else {
					s.run.Store(runParked)
				}
				s.idleAt.Store(spec.since)
				if ok, _ := table.add(s); !ok {
					t.Fatal("the table refused a session below its cap")
				}
				all = append(all, s)
			}
			ok, taken := table.add(&httpSession{id: "new", creator: clientName{clientByAddr, "n"}})
			if tt.want < 0 {
				if ok || taken != nil {
					t.Fatalf("took %v, want a refusal", taken)
				}
				return
			}
			if !ok || taken != all[tt.want] {
				t.Fatalf("took %v, want session %d", taken, tt.want)
			}
			if taken.run.Load() != runEnded || table.get(taken.id) != nil || table.get("new") == nil {
				t.Errorf("the session taken: run state %b, in the table %v; want it ended and replaced", taken.run.Load(), table.get(taken.id) != nil)
			}
		})
	}
}

// sessionEnds is an Observer that reports each session's end.
type sessionEnds chan SessionInfo

func (sessionEnds) StartOperation(*OperationStart) OperationSpan { return nil }
func (sessionEnds) SessionStarted(SessionInfo)                   {}
func (e sessionEnds) SessionEnded(s SessionInfo)                 { e <- s }

// An idle session ends when an injected executor closes, as a busy one
// does, though its owner was parked.
func TestHTTPIdleSessionEndsWhenTheExecutorCloses(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{})
	ends := make(sessionEnds, 1)
	s := newHTTPTestServer(t, nil, HTTPOptions{Executor: e, Observer: ends, Logger: quietLogger()})
	id := s.legacySession(ProtocolVersion20251125, `{}`)[headerSessionID]
	e.Close()
	if got := waitFor(t, ends, "the session's end"); got.ID != id || got.ErrorType != "executor_closed" {
		t.Fatalf("ended %+v, want session %s with error.type executor_closed", got, id)
	}
	if s.h.sessions.get(id) != nil {
		t.Error("the session is still in the table")
	}
}
