package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"slices"
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
	addHoldTool(t, rt, hold)
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

// addHoldTool adds the "hold" tool to rt: each call sends its id argument
// on hold.started, then returns when hold.release is closed or it is
// cancelled.
func addHoldTool(t *testing.T, rt *Runtime, hold *holdTool) {
	t.Helper()
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

// identityServer serves the hold tool with one worker, a queue of 8 and a
// queue share of 1: a client alone may queue beyond its share, but not
// while another client waits. So whether two requests belong to one client
// shows: after a client's running and queued request, a request of the
// second is queued; then the first client's next request is refused if the
// two are different clients, and queued if they are one.
func identityServer(t *testing.T, opts HTTPOptions) (*httpTestServer, *holdTool) {
	opts.MaxConcurrency, opts.MaxQueue, opts.MaxClientQueue = 1, 8, 1
	return newHoldServer(t, opts)
}

// sameClient reports whether requests sent with first and second (their
// client and headers) are counted as one client, as identityServer says.
func sameClient(t *testing.T, s *httpTestServer, hold *holdTool, first, second func(id string) <-chan string) bool {
	t.Helper()
	answers := []<-chan string{first("a0")}
	if got := <-hold.started; got != "a0" {
		t.Fatalf("started %q", got)
	}
	answers = append(answers, first("a1"))
	eventually(t, "the first client's second request queueing", func() bool { return s.h.executor.Stats().Queued == 1 })
	answers = append(answers, second("b0"))
	eventually(t, "the second client's request queueing", func() bool { return s.h.executor.Stats().Queued == 2 })
	third := first("a2")
	stop := make(chan struct{})
	defer close(stop)
	var same bool
	select {
	case got := <-third:
		if !strings.Contains(got, errCapacity.Message) {
			t.Fatalf("the first client's third request: %s, want it refused or queued", got)
		}
	case <-waitQueued(s, 3, stop):
		same = true
		answers = append(answers, third)
	}
	close(hold.release)
	for _, answer := range answers {
		if got := <-answer; !strings.Contains(got, `"held `) {
			t.Fatalf("answer %s", got)
		}
	}
	return same
}

// waitQueued returns a channel closed once n requests are queued; it stops
// looking when stop is closed.
func waitQueued(s *httpTestServer, n int, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for s.h.executor.Stats().Queued < n {
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
		close(done)
	}()
	return done
}

// Who a request's client is: the remote address, a forwarded address only
// from a trusted proxy, ClientKey's answer across sessions.
func TestHTTPClientIdentity(t *testing.T) {
	statelessFrom := func(s *httpTestServer, c *http.Client, header map[string]string) func(string) <-chan string {
		return func(id string) <-chan string {
			h := stateless("tools/call", "hold")
			maps.Copy(h, header)
			return s.goPost(c, h, holdCall(id, 0))
		}
	}
	local := http.DefaultClient
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	tests := []struct {
		name string
		opts HTTPOptions
		same bool
		// first and second: the client and headers of each side.
		firstFrom, secondFrom     string
		firstHeader, secondHeader map[string]string
	}{
		{name: "one host is one client", same: true, firstFrom: "127.0.0.1", secondFrom: "127.0.0.1"},
		{name: "two hosts are two clients", firstFrom: "127.0.0.1", secondFrom: "127.0.0.2"},
		{name: "an untrusted peer's X-Forwarded-For is ignored", same: true, firstFrom: "127.0.0.1", secondFrom: "127.0.0.1",
			secondHeader: map[string]string{"X-Forwarded-For": "203.0.113.7"}},
		{name: "an untrusted peer's Forwarded is ignored", same: true, firstFrom: "127.0.0.1", secondFrom: "127.0.0.1",
			secondHeader: map[string]string{"Forwarded": "for=203.0.113.7"}},
		{name: "a trusted proxy's X-Forwarded-For names the client", opts: HTTPOptions{TrustedProxies: []netip.Prefix{loopback}},
			firstFrom: "127.0.0.1", secondFrom: "127.0.0.1",
			firstHeader: map[string]string{"X-Forwarded-For": "203.0.113.1"}, secondHeader: map[string]string{"X-Forwarded-For": "203.0.113.2"}},
		{name: "a trusted proxy's Forwarded names the client", opts: HTTPOptions{TrustedProxies: []netip.Prefix{loopback}},
			firstFrom: "127.0.0.1", secondFrom: "127.0.0.1",
			firstHeader: map[string]string{"Forwarded": `for="[2001:db8::1]:4711"`}, secondHeader: map[string]string{"Forwarded": "for=203.0.113.2;proto=http"}},
		{name: "behind a trusted proxy, the right-most untrusted hop counts, not what the client claims", same: true,
			opts:      HTTPOptions{TrustedProxies: []netip.Prefix{loopback}},
			firstFrom: "127.0.0.1", secondFrom: "127.0.0.1",
			firstHeader: map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9"}, secondHeader: map[string]string{"X-Forwarded-For": "198.51.100.2, 203.0.113.9"}},
		{name: "ClientKey groups requests whatever their address", same: true,
			opts:      HTTPOptions{ClientKey: func(r *http.Request) string { return r.Header.Get("X-Principal") }},
			firstFrom: "127.0.0.1", secondFrom: "127.0.0.2",
			firstHeader: map[string]string{"X-Principal": "p"}, secondHeader: map[string]string{"X-Principal": "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, hold := identityServer(t, tt.opts)
			from := func(ip string) *http.Client {
				if ip == "127.0.0.1" {
					return local
				}
				return clientFrom(t, ip)
			}
			got := sameClient(t, s, hold, statelessFrom(s, from(tt.firstFrom), tt.firstHeader), statelessFrom(s, from(tt.secondFrom), tt.secondHeader))
			if got != tt.same {
				t.Fatalf("one client: %v, want %v", got, tt.same)
			}
		})
	}
}

// ClientAddress, the client.address of telemetry and logs, for each way a
// request can name its client.
func TestHTTPClientAddress(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, remote string
		trusted      []netip.Prefix
		header       http.Header
		want         string
	}{
		{"remote address", "192.0.2.1:5000", nil, nil, "192.0.2.1"},
		{"IPv6 remote address", "[2001:db8::5]:5000", nil, nil, "2001:db8::5"},
		{"IPv4-mapped remote address", "[::ffff:192.0.2.1]:5000", nil, nil, "192.0.2.1"},
		{"remote address without a port", "192.0.2.1", nil, nil, "192.0.2.1"},
		{"IPv4-mapped remote address without a port", "::ffff:192.0.2.1", nil, nil, "192.0.2.1"},
		{"remote name", "pipe:1", nil, nil, "pipe"},
		{"untrusted peer's header ignored", "192.0.2.1:5000", trusted, http.Header{"X-Forwarded-For": {"203.0.113.1"}}, "192.0.2.1"},
		{"no proxy configured", "10.0.0.1:5000", nil, http.Header{"X-Forwarded-For": {"203.0.113.1"}}, "10.0.0.1"},
		{"trusted peer", "10.0.0.1:5000", trusted, http.Header{"X-Forwarded-For": {"203.0.113.1"}}, "203.0.113.1"},
		{"trusted peer without header", "10.0.0.1:5000", trusted, nil, "10.0.0.1"},
		{"chain of trusted proxies", "10.0.0.1:5000", trusted, http.Header{"X-Forwarded-For": {"198.51.100.9, 203.0.113.1, 10.0.0.7"}}, "203.0.113.1"},
		{"several header lines", "10.0.0.1:5000", trusted, http.Header{"X-Forwarded-For": {"198.51.100.9", "203.0.113.1"}}, "203.0.113.1"},
		{"all hops trusted", "10.0.0.1:5000", trusted, http.Header{"X-Forwarded-For": {"10.0.0.3, 10.0.0.2"}}, "10.0.0.3"},
		{"garbage hop ends the walk at the proxy that reported it", "10.0.0.1:5000", trusted, http.Header{"X-Forwarded-For": {"203.0.113.1, nonsense"}}, "10.0.0.1"},
		{"Forwarded wins over X-Forwarded-For", "10.0.0.1:5000", trusted, http.Header{"Forwarded": {`for=198.51.100.1;proto=https, for="10.0.0.9:80"`}, "X-Forwarded-For": {"203.0.113.1"}}, "198.51.100.1"},
		{"Forwarded IPv6 with port", "[::1]:5000", trusted, http.Header{"Forwarded": {`for="[2001:db8::7]:4711"`}}, "2001:db8::7"},
		{"Forwarded obfuscated", "10.0.0.1:5000", trusted, http.Header{"Forwarded": {"for=_hidden"}}, "10.0.0.1"},
		{"Forwarded unknown", "10.0.0.1:5000", trusted, http.Header{"Forwarded": {"for=unknown"}}, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHTTPHandler(newHTTPCatalogRuntime(t), HTTPOptions{TrustedProxies: tt.trusted})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = tt.remote
			if tt.header != nil {
				r.Header = tt.header
			}
			if got := h.ClientAddress(r); got != tt.want {
				t.Fatalf("ClientAddress = %q, want %q", got, tt.want)
			}
		})
	}
}

// The -http-trusted-proxies list: prefixes and single addresses.
func TestParseTrustedProxies(t *testing.T) {
	got, err := parseTrustedProxies(" 10.1.2.3/8, 192.0.2.7 ,::1,")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("::1/128")}
	if !slices.Equal(got, want) {
		t.Fatalf("parseTrustedProxies = %v, want %v", got, want)
	}
	if _, err := parseTrustedProxies("10.0.0.0/8,proxy.example"); err == nil || !strings.Contains(err.Error(), `"proxy.example"`) {
		t.Fatalf("a name: err = %v, want one naming it", err)
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
		{"beyond the budget", HTTPOptions{MaxInflightBytes: 1000, ReadBodyTimeout: failAfter}, 900},
		{"beyond the client's share while another client holds bytes", HTTPOptions{MaxClientInflightBytes: 500, ReadBodyTimeout: failAfter}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, hold := newHoldServer(t, tc.opts)
			held := s.goPost(http.DefaultClient, stateless("tools/call", "hold"), holdCall("a", 200))
			<-hold.started
			if tc.opts.MaxClientInflightBytes > 0 { // the share binds only while another client holds bytes
				other := s.goPost(clientFrom(t, "127.0.0.3"), stateless("tools/call", "hold"), holdCall("o", 0))
				<-hold.started
				defer func() { <-other }()
			}
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
		s, hold := newHoldServer(t, HTTPOptions{MaxInflightBytes: 200_000})
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
		if en.users != 0 || en.client.stats() != (clientStats{}) {
			t.Fatalf("client %v still used or holding %+v after every POST was answered", en.name, en.client.stats())
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
	res, err := b.client.reserve(10)
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
	res.release()
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
	if got := s.h.executor.Stats().InflightBytes; answer < len(text) || got < len(body)+answer {
		t.Fatalf("while a %d-byte answer is written, %d bytes are counted; want its body's %d and the answer", answer, got, len(body))
	}
	close(w.release)
	waitFor(t, done, "the POST to end")
	if got := s.h.executor.Stats().InflightBytes; got != 0 {
		t.Fatalf("%d bytes counted once the answer was written", got)
	}
}

// The 2026 listen streams of one client (MaxSubscriptions) are counted by
// its client address: behind a trusted proxy, by the forwarded address, so
// each user behind it has a quota of its own, and one user's second stream
// is refused.
func TestHTTPListenStreamsPerForwardedClient(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxSubscriptions: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	listen := func(id, user string) *http.Response {
		header := stateless("subscriptions/listen", "")
		header["X-Forwarded-For"] = user
		resp, err := s.postWith(t.Context(), http.DefaultClient, header, strings.NewReader(`{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta2026+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, user := range []string{"203.0.113.1", "203.0.113.2"} {
		resp := listen("L"+user, user)
		defer resp.Body.Close()
		if got := newSSEReader(t, resp).nextMessage(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
			t.Fatalf("user %s's stream: first event %s, want the acknowledgement", user, got)
		}
	}
	second := listen("M", "203.0.113.1")
	if body := readBody(t, second); second.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "subscription capacity") {
		t.Fatalf("a user's second listen stream beyond MaxSubscriptions: status %d, body %s", second.StatusCode, body)
	}
	s.h.endStreams()
}
