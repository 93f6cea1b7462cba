package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// holdTool is a tool that blocks until released (or cancelled), announcing
// each call's start.
type holdTool struct {
	started chan string // the call's id argument, once it runs
	release chan struct{}
}

// newHoldServer serves the reference catalog and a "hold" tool with opts.
func newHoldServer(t *testing.T, opts HTTPOptions) (*httpTestServer, *holdTool) {
	t.Helper()
	rt := newHTTPCatalogRuntime(t)
	hold := &holdTool{started: make(chan string, 16), release: make(chan struct{})}
	if err := rt.AddTool(Tool{Name: "hold"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var args struct {
			ID string `json:"id"`
		}
		req.Bind(&args)
		hold.started <- args.ID
		select {
		case <-hold.release:
		case <-ctx.Done():
		}
		return TextResult("held " + args.ID), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, opts)
	t.Cleanup(func() {
		select {
		case <-hold.release:
		default:
			close(hold.release)
		}
	})
	return s, hold
}

// holdCall is a 2026 tools/call of the hold tool, padded to pad bytes more.
func holdCall(id string, pad int) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"hold","arguments":{"id":"` + id + `","pad":"` + strings.Repeat("p", pad) + `"},` + meta2026 + `}}`
}

// clientFrom returns an HTTP client whose connections come from the local
// address ip, another host as far as the server knows.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// postWith posts body with the base client headers and header, through c.
func (s *httpTestServer) postWith(ctx context.Context, c *http.Client, header map[string]string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return c.Do(req)
}

// goPost posts body in a goroutine; the response's body (or the error) is
// sent on the channel returned.
func (s *httpTestServer) goPost(c *http.Client, header map[string]string, body string) <-chan string {
	answer := make(chan string, 1)
	go func() {
		resp, err := s.postWith(context.Background(), c, header, strings.NewReader(body))
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	return answer
}

// One session whose elicitations go unanswered holds its share of the
// workers, not all of them: another session is served at once, and the
// greedy one's next request waits in its own queue.
func TestHTTPSessionShareLeavesWorkersToOtherSessions(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxConcurrency: 3, MaxClientConcurrency: 2, MaxClientQueue: 1})
	greedy := s.legacySession(ProtocolVersion20251125, `{"elicitation":{}}`)
	for _, id := range []string{"10", "11"} {
		resp := s.post(greedy, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"?"}}}`)
		defer resp.Body.Close()
		if got := newSSEReader(t, resp).nextMessage(); !strings.Contains(got, "elicitation/create") {
			t.Fatalf("call %s: event %s, want its elicitation/create", id, got)
		}
	}
	queued := s.goPost(http.DefaultClient, greedy, `{"jsonrpc":"2.0","id":12,"method":"tools/list"}`)
	eventually(t, "the greedy session's third request queueing", func() bool { return s.h.executor.Stats().Queued == 1 })
	resp := s.post(greedy, `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`)
	if body := readBody(t, resp); !strings.Contains(body, errCapacity.Message) {
		t.Fatalf("beyond the session's queue share: %d %s, want %q", resp.StatusCode, body, errCapacity.Message)
	}

	// A worker is free for everyone else: this initialize and tools/list
	// would wait behind the greedy session's queued request without shares.
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	resp, err := s.postWith(ctx, http.DefaultClient, nil, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatalf("another client's initialize: %v", err)
	}
	readBody(t, resp)
	other := map[string]string{headerSessionID: resp.Header.Get(headerSessionID)}
	resp, err = s.postWith(ctx, http.DefaultClient, other, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if err != nil {
		t.Fatalf("the other session's tools/list: %v", err)
	}
	if body := readBody(t, resp); !strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("the other session's tools/list: %d %s", resp.StatusCode, body)
	}

	resp = s.do(context.Background(), http.MethodDelete, greedy, "") // cancels its requests
	readBody(t, resp)
	<-queued
}

// Stateless requests belong to their remote address: one host that fills
// its share is refused more, while another host is served.
func TestHTTPStatelessClientIsTheRemoteAddress(t *testing.T) {
	s, hold := newHoldServer(t, HTTPOptions{MaxConcurrency: 2, MaxQueue: -1, MaxClientConcurrency: 1})
	header := stateless("tools/call", "hold")
	first := s.goPost(http.DefaultClient, header, holdCall("a", 0))
	if got := <-hold.started; got != "a" {
		t.Fatalf("started %q", got)
	}
	resp := s.post(header, holdCall("b", 0))
	if body := readBody(t, resp); resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, errCapacity.Message) {
		t.Fatalf("a second request of the same host: %d %s, want 500 and %q", resp.StatusCode, body, errCapacity.Message)
	}
	resp, err := s.postWith(context.Background(), clientFrom(t, "127.0.0.2"), stateless("tools/call", "echo"),
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from .2"},`+meta2026+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); !strings.Contains(body, "from .2") {
		t.Fatalf("another host: %d %s", resp.StatusCode, body)
	}
	close(hold.release)
	if got := <-first; !strings.Contains(got, "held a") {
		t.Fatalf("first request: %s", got)
	}
}

// ClientKey groups requests across sessions: two sessions of one principal
// (as their initialize named it) share one share, and another principal's
// request starts at once.
func TestHTTPClientKeyGroupsSessions(t *testing.T) {
	s, hold := newHoldServer(t, HTTPOptions{MaxConcurrency: 3, MaxClientConcurrency: 1,
		ClientKey: func(r *http.Request) string { return r.Header.Get("X-Principal") }})
	a := s.legacySessionWith(ProtocolVersion20251125, `{}`, map[string]string{"X-Principal": "p"})
	b := s.legacySessionWith(ProtocolVersion20251125, `{}`, map[string]string{"X-Principal": "p"})
	c := s.legacySessionWith(ProtocolVersion20251125, `{}`, map[string]string{"X-Principal": "q"})
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"hold","arguments":{"id":"` + id + `"}}}`
	}
	first := s.goPost(http.DefaultClient, a, call("a"))
	if got := <-hold.started; got != "a" {
		t.Fatalf("started %q", got)
	}
	second := s.goPost(http.DefaultClient, b, call("b"))
	eventually(t, "the same principal's request in another session queueing", func() bool { return s.h.executor.Stats().Queued == 1 })
	third := s.goPost(http.DefaultClient, c, call("c"))
	if got := <-hold.started; got != "c" {
		t.Fatalf("started %q, want c: another principal's request", got)
	}
	close(hold.release)
	for _, answer := range []<-chan string{first, second, third} {
		if got := <-answer; !strings.Contains(got, `"held `) {
			t.Fatalf("answer %s", got)
		}
	}
}

// A body is counted before it is read: by its Content-Length, refused 503
// unread (the body here never comes, so reading it would hang) when it does
// not fit in the budget or in the client's share; a chunked body as it
// arrives, refused when it outgrows them.
func TestHTTPBodyCountedBeforeItIsRead(t *testing.T) {
	const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}`
	tests := []struct {
		name string
		opts HTTPOptions
		size int64
	}{
		{"beyond the budget", HTTPOptions{MaxInflightBytes: 1000, MaxClientInflightBytes: -1, ReadBodyTimeout: failAfter}, 900},
		{"beyond the client's share", HTTPOptions{MaxClientInflightBytes: 500, ReadBodyTimeout: failAfter}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, hold := newHoldServer(t, tc.opts)
			held := s.goPost(http.DefaultClient, stateless("tools/call", "hold"), holdCall("a", 200))
			<-hold.started
			never, unwritten := io.Pipe()
			defer unwritten.Close()
			req, _ := http.NewRequest(http.MethodPost, s.url, never)
			req.ContentLength = tc.size
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if body := readBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(body) != refused {
				t.Fatalf("status %d, body %s; want 503 and %s", resp.StatusCode, body, refused)
			}
			if tc.opts.MaxClientInflightBytes > 0 { // another host has a share of its own
				resp, err := s.postWith(context.Background(), clientFrom(t, "127.0.0.2"), stateless("tools/call", "echo"),
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("e", 300)+`"},`+meta2026+`}}`))
				if err != nil {
					t.Fatal(err)
				}
				if body := readBody(t, resp); resp.StatusCode != http.StatusOK {
					t.Fatalf("another host: %d %s", resp.StatusCode, body)
				}
			}
			close(hold.release)
			<-held
		})
	}

	t.Run("chunked", func(t *testing.T) {
		s, hold := newHoldServer(t, HTTPOptions{MaxInflightBytes: 200_000, MaxClientInflightBytes: -1})
		held := s.goPost(http.DefaultClient, stateless("tools/call", "hold"), holdCall("a", 100_000))
		<-hold.started
		held0 := s.h.executor.Stats().InflightBytes
		// The first 64 KiB fit beside the held body; the next ones do not.
		body, w := io.Pipe()
		go func() {
			w.Write([]byte(strings.Repeat(" ", bodyChunk+1)))
		}()
		resp, err := s.postWith(context.Background(), http.DefaultClient, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		w.CloseWithError(errors.New("refused"))
		if got := readBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(got) != refused {
			t.Fatalf("status %d, body %s; want 503 and %s", resp.StatusCode, got, refused)
		}
		eventually(t, "the refused body's bytes being freed", func() bool { return s.h.executor.Stats().InflightBytes == held0 })
		close(hold.release)
		<-held

		// Within the budget a chunked body is read whole and served.
		text := strings.Repeat("c", 3*bodyChunk)
		resp, err = s.postWith(context.Background(), http.DefaultClient, stateless("tools/call", "echo"), io.MultiReader(
			strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+text+`"},`+meta2026+`}}`)))
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != text {
			t.Fatalf("a chunked body within the budget: status %d, %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		eventually(t, "every byte being freed", func() bool { return s.h.executor.Stats().InflightBytes == 0 })
	})
}

// A POST body's bytes stay counted until its answer is written, after its
// handler returned: the job's share ends when its function returns, the
// POST's when the answer is out.
func TestHTTPBodyCountedUntilAnswered(t *testing.T) {
	s, hold := newHoldServer(t, HTTPOptions{})
	body := holdCall("a", 1000)
	answer := s.goPost(http.DefaultClient, stateless("tools/call", "hold"), body)
	<-hold.started
	if got := s.h.executor.Stats().InflightBytes; got != len(body) {
		t.Fatalf("InflightBytes while the call runs: %d, want its body's %d", got, len(body))
	}
	close(hold.release)
	<-answer
	eventually(t, "the body's bytes being freed once answered", func() bool { return s.h.executor.Stats().InflightBytes == 0 })
	s.h.clients.mu.Lock()
	defer s.h.clients.mu.Unlock()
	for _, en := range s.h.clients.byName {
		if en.users != 0 || en.client.Stats() != (ClientStats{}) {
			t.Fatalf("client %v still used or holding %+v after every POST was answered", en.name, en.client.Stats())
		}
	}
}

// The table keeps an entry while a POST uses it or its client holds
// something, and an idle one for the client's next POST until a sweep, which
// comes as the table grows: idle entries never outnumber minClientSweep or
// the busy ones.
func TestClientTableKeepsIdleEntriesUntilSwept(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{})
	var tbl clientTable
	tbl.init(e)
	addr := func(host string) clientName { return clientName{clientByAddr, host} }
	a := tbl.acquire(addr("a"))
	if again := tbl.acquire(addr("a")); again != a {
		t.Fatal("a second acquire of one name made another entry")
	}
	tbl.release(a)
	tbl.release(a)
	if tbl.acquire(addr("a")) != a {
		t.Fatal("an idle entry was not reused by its client's next POST")
	}
	tbl.release(a)
	session := tbl.acquire(clientName{clientBySession, "a"})
	if session == a {
		t.Fatal("a session's name and an address's were one client")
	}
	tbl.release(session)
	b := tbl.acquire(addr("b"))
	res, err := b.client.Reserve(10)
	if err != nil {
		t.Fatal(err)
	}
	tbl.release(b)

	// Idle clients come and go: the table stays within its sweep bound, and
	// the busy entry is kept through every sweep.
	for i := range 10 * minClientSweep {
		tbl.release(tbl.acquire(addr(strconv.Itoa(i))))
		if n := tbl.len(); n > minClientSweep {
			t.Fatalf("%d entries after %d idle clients, want at most %d", n, i+1, minClientSweep)
		}
	}
	if tbl.acquire(addr("b")) != b {
		t.Fatal("the busy entry was not kept through the sweeps")
	}
	tbl.release(b)
	res.Release()
	tbl.mu.Lock()
	tbl.sweepAt = 1
	tbl.mu.Unlock()
	c := tbl.acquire(addr("c"))
	if n := tbl.len(); n != 1 {
		t.Fatalf("%d entries after a sweep with one user, want only its entry", n)
	}
	tbl.release(c)
}

// gatedResponse is a ResponseWriter whose Write waits for release.
type gatedResponse struct {
	header  http.Header
	entered chan int // the length of each Write
	release chan struct{}
}

func (g *gatedResponse) Header() http.Header { return g.header }
func (g *gatedResponse) WriteHeader(int)     {}
func (g *gatedResponse) Write(p []byte) (int, error) {
	g.entered <- len(p)
	<-g.release
	return len(p), nil
}

// An answer counts against the budget, as its body did, until it is
// written: a client that does not take a large answer holds its bytes, and
// they are freed once it does.
func TestHTTPAnswerCountedUntilWritten(t *testing.T) {
	s, _ := newHoldServer(t, HTTPOptions{})
	text := strings.Repeat("x", 100_000)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` + meta2026 + `}}`
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Host = "127.0.0.1"
	for k, v := range stateless("tools/call", "echo") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := &gatedResponse{header: http.Header{}, entered: make(chan int, 1), release: make(chan struct{})}
	done := make(chan struct{})
	go func() { s.h.ServeHTTP(w, req); close(done) }()
	answer := waitFor(t, w.entered, "the answer's write")
	if got := s.h.executor.Stats().InflightBytes; answer < 2*len(text) || got < len(body)+answer {
		t.Fatalf("while a %d-byte answer is written, %d bytes are counted; want its body's %d and the answer", answer, got, len(body))
	}
	close(w.release)
	waitFor(t, done, "the POST to end")
	if got := s.h.executor.Stats().InflightBytes; got != 0 {
		t.Fatalf("%d bytes counted once the answer was written", got)
	}
}

// One client may create at most its share of the sessions (a quarter of
// MaxSessions by default): beyond it its initialize is refused 503, while
// another client still gets a session, and a session ended gives its place
// back.
func TestHTTPSessionsPerClient(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxSessions: 8})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initFrom := func(c *http.Client) (int, string) {
		resp, err := s.postWith(context.Background(), c, nil, strings.NewReader(init))
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		return resp.StatusCode, resp.Header.Get(headerSessionID)
	}
	one := clientFrom(t, "127.0.0.1")
	var first string
	for i := range 2 {
		status, id := initFrom(one)
		if status != http.StatusOK || id == "" {
			t.Fatalf("session %d of one client: status %d", i+1, status)
		}
		if first == "" {
			first = id
		}
	}
	if status, id := initFrom(one); status != http.StatusServiceUnavailable || id != "" {
		t.Fatalf("a third session of one client: status %d, session %q; want 503", status, id)
	}
	if status, _ := initFrom(clientFrom(t, "127.0.0.2")); status != http.StatusOK {
		t.Fatalf("another client's session: status %d", status)
	}
	resp := s.do(context.Background(), http.MethodDelete, map[string]string{headerSessionID: first}, "")
	readBody(t, resp)
	if status, _ := initFrom(one); status != http.StatusOK {
		t.Fatalf("after one of its sessions ended: status %d, want a session", status)
	}
}
