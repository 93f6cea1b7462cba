package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The soak: MCPSTDIO_SOAK=60s go test -run TestSoak -count=1 . (skipped
// without the variable; .ci/run runs it for 60 seconds).
//
// One process serves the sequence fuzzers' server (seqServer, with tasks)
// over stdio and over HTTP at once, for the duration given, in rounds: each
// round drives both with soakBursts of a fixed mix (below), each burst
// waiting until every answer has come, then waits until the sessions it
// left have expired, and then the process is sampled, where nothing is in
// flight: its resident memory (VmRSS), the heap in use after a collection,
// its goroutines and its open file descriptors. The server runs
// in the test's process, not as a subprocess, so that its goroutines and
// heap are read directly; stdio is a real os.Pipe pair, as the binary's
// (non-blocking, with write deadlines: the coordinator writes itself), and
// HTTP a real loopback listener.
//
// It fails when a sample grows, over the second half of the run (the first
// is warm-up), by more than its bound, as the slope of a least-squares line
// through the samples against time (never a time of its own):
var soakBounds = map[string]float64{
	"goroutines": 0.1,       // per second: one leaked in ten seconds
	"fds":        0.1,       // per second
	"heap":       32 << 10,  // bytes per second
	"rss":        256 << 10, // bytes per second
}

// soakBursts is the bursts of a round.
const soakBursts = 20

// A burst: stdio: 200 tool calls (at once, inline, typed, failing, with
// progress), 20 sleepers of which 5 are cancelled and the rest released,
// 5 unparsable lines and 2 lines over the limit; HTTP: 4 sessions each
// with 10 calls (some streaming progress) and a GET stream opened and
// dropped, 3 of them ended by DELETE and one left to expire; 20 2026 calls,
// 2 calls that become tasks and are polled to their end, a body over the
// limit and a call whose client leaves.
func TestSoak(t *testing.T) {
	setting := os.Getenv("MCPSTDIO_SOAK")
	if setting == "" {
		t.Skip("MCPSTDIO_SOAK=DURATION (e.g. 60s) runs the soak")
	}
	duration, err := time.ParseDuration(setting)
	if err != nil || duration <= 0 {
		t.Fatalf("MCPSTDIO_SOAK=%q is not a duration", setting)
	}
	s := newSoak(t)
	defer s.close()
	start := time.Now()
	var samples []soakSample
	for round := 0; time.Since(start) < duration; round++ {
		for burst := range soakBursts {
			var wg sync.WaitGroup
			wg.Go(func() { s.stdioBurst(round*soakBursts + burst) })
			wg.Go(func() { s.httpBurst() })
			wg.Wait()
			if t.Failed() {
				return
			}
		}
		s.quiesce()
		samples = append(samples, sampleProcess(time.Since(start)))
	}
	report(t, duration, samples)
}

// soakSample is the process between two rounds.
type soakSample struct {
	at                    time.Duration
	rss, heap, goroutines float64
	fds                   float64
}

func sampleProcess(at time.Duration) soakSample {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := soakSample{at: at, heap: float64(m.HeapInuse), goroutines: float64(runtime.NumGoroutine())}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				s.rss = kb * 1024
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.fds = float64(len(fds))
	}
	return s
}

// report logs the figures and fails on a slope over its bound.
func report(t *testing.T, duration time.Duration, samples []soakSample) {
	if len(samples) < 4 {
		t.Fatalf("%d rounds in %v: too few to measure", len(samples), duration)
	}
	var second []soakSample
	for _, s := range samples {
		if s.at >= duration/2 {
			second = append(second, s)
		}
	}
	if len(second) < 3 {
		second = samples[len(samples)/2:]
	}
	first, last := samples[0], samples[len(samples)-1]
	t.Logf("soak: %v, %d rounds; start → end: RSS %.1f → %.1f MiB, heap %.1f → %.1f MiB, goroutines %.0f → %.0f, fds %.0f → %.0f",
		last.at.Round(time.Second), len(samples), first.rss/(1<<20), last.rss/(1<<20), first.heap/(1<<20), last.heap/(1<<20), first.goroutines, last.goroutines, first.fds, last.fds)
	for _, metric := range []struct {
		name  string
		value func(soakSample) float64
	}{
		{"rss", func(s soakSample) float64 { return s.rss }},
		{"heap", func(s soakSample) float64 { return s.heap }},
		{"goroutines", func(s soakSample) float64 { return s.goroutines }},
		{"fds", func(s soakSample) float64 { return s.fds }},
	} {
		slope := slopePerSecond(second, metric.value)
		t.Logf("soak: %s slope over the second half (%d samples): %.3f/s, bound %.3f/s", metric.name, len(second), slope, soakBounds[metric.name])
		if slope > soakBounds[metric.name] {
			t.Errorf("%s grows %.3f/s over the second half, over its bound %.3f/s", metric.name, slope, soakBounds[metric.name])
		}
	}
}

// slopePerSecond is the least-squares slope of value against time.
func slopePerSecond(samples []soakSample, value func(soakSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		x, y := s.at.Seconds(), value(s)
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// soak is the server under load and its two clients.
type soak struct {
	t   *testing.T
	srv *seqServer

	// stdio
	tr             *Transport
	inW, outR      *os.File
	inR, outW      *os.File
	served         chan error
	answers        chan string // the ids of the stdio answers ("null" for none)
	cancelServe    context.CancelFunc
	stdioReaderEnd chan struct{}

	// HTTP
	h      *HTTPHandler
	ts     *httptest.Server
	client *http.Client

	tokens atomic.Int64
	conns  atomic.Int64 // the server's open connections
	// changed is signalled (never blocking) when a session ends or a
	// connection closes, after the handler's table and conns say so.
	changed chan struct{}
}

// soakWatch is the soak handler's Observer: it observes no request and
// signals changed when a session ends.
type soakWatch chan struct{}

func (w soakWatch) StartOperation(*OperationStart) OperationSpan { return nil }
func (w soakWatch) SessionStarted(SessionInfo)                   {}
func (w soakWatch) SessionEnded(SessionInfo)                     { wake(w) }

func newSoak(t *testing.T) *soak {
	s := &soak{t: t, served: make(chan error, 1), answers: make(chan string, 4096), stdioReaderEnd: make(chan struct{}), changed: make(chan struct{}, 1)}
	s.srv = newSeqServer(t, func(o *RuntimeOptions) {
		o.Tasks = TaskOptions{TTL: 2 * time.Second, PollInterval: time.Millisecond}
		o.ClientRequestTimeout = 100 * time.Millisecond
	})
	if err := s.srv.rt.AddTool(Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, s.srv.answer); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.inR, s.inW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	// Small executors: their workers, which stay parked once started, are
	// all started during the warm-up.
	s.tr, err = NewTransport(s.srv.rt, Options{Input: s.inR, Output: s.outW, MaxLineBytes: 64 << 10, MaxConcurrency: 8, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancelServe = cancel
	go func() { s.served <- s.tr.Serve(ctx) }()
	go s.readStdio()

	s.h, err = NewHTTPHandler(s.srv.rt, HTTPOptions{MaxBodyBytes: 64 << 10, SessionIdleTimeout: time.Second, MaxConcurrency: 8, Logger: quietLogger(), Observer: soakWatch(s.changed)})
	if err != nil {
		t.Fatal(err)
	}
	s.ts = httptest.NewUnstartedServer(s.h)
	s.ts.Config.ConnState = func(c net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.conns.Add(-1)
			wake(s.changed)
		}
	}
	s.ts.Start()
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	return s
}

func (s *soak) close() {
	s.inW.Close()
	select {
	case err := <-s.served:
		if err != nil {
			s.t.Errorf("stdio Serve = %v after the end of input", err)
		}
	case <-time.After(safetyTimeout):
		s.t.Errorf("stdio Serve did not return after the end of input")
		s.cancelServe()
	}
	s.outW.Close()
	<-s.stdioReaderEnd
	s.inR.Close()
	s.outR.Close()
	s.h.endStreams()
	s.ts.Close()
	s.h.Close()
	s.client.CloseIdleConnections()
}

// readStdio hands the id of every answer on stdio to answers.
func (s *soak) readStdio() {
	defer close(s.stdioReaderEnd)
	sc := bufio.NewScanner(s.outR)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			s.t.Errorf("stdio frame %q is not JSON", sc.Bytes())
			continue
		}
		if m.Method == "" {
			s.answers <- string(m.ID)
		}
	}
}

// quiesce waits until no session is left (the bursts left one each to
// expire: HTTPOptions.SessionIdleTimeout) and no connection is open (the
// client's idle ones closed), so that a sample counts what stays.
func (s *soak) quiesce() {
	s.client.CloseIdleConnections()
	deadline := time.After(safetyTimeout)
	for len(s.h.sessions.all()) > 0 || s.conns.Load() > 0 {
		select {
		case <-s.changed:
		case <-deadline:
			s.t.Fatalf("%d sessions never expired, %d connections never closed", len(s.h.sessions.all()), s.conns.Load())
		}
	}
}

// stdioBurst runs the stdio mix of burst n and waits for its answers.
func (s *soak) stdioBurst(n int) {
	var lines bytes.Buffer
	want := 0
	id := func(i int) string { return `"s` + strconv.Itoa(n) + "-" + strconv.Itoa(i) + `"` }
	if n == 0 {
		lines.WriteString(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}` + "\n")
		want++
	}
	for i := range 200 {
		n := s.tokens.Add(1)
		tool := []string{"instant", "echo", "typed", "fail", "progress"}[i%5]
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"t":%d,"k":3},"_meta":{"progressToken":%d}}}`+"\n", id(i), tool, n, n)
		want++
	}
	var sleepers []chan struct{}
	var tokens []int
	defer s.forget(&tokens)
	for i := 200; i < 220; i++ {
		n := int(s.tokens.Add(1))
		tokens = append(tokens, n)
		release := make(chan struct{})
		s.srv.mu.Lock()
		s.srv.release[n] = release
		s.srv.mu.Unlock()
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"sleep","arguments":{"t":%d}}}`+"\n", id(i), n)
		if i < 205 {
			fmt.Fprintf(&lines, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`+"\n", id(i))
			continue // never released: its cancellation ends it, unanswered
		}
		sleepers = append(sleepers, release)
		want++
	}
	for i := range 5 {
		fmt.Fprintf(&lines, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\n", i)
		want++
	}
	for range 2 {
		lines.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 70<<10) + `"}}` + "\n")
		want++
	}
	if _, err := s.inW.Write(lines.Bytes()); err != nil {
		s.t.Errorf("writing the burst's lines: %v", err)
		return
	}
	for _, release := range sleepers {
		close(release)
	}
	for range want {
		select {
		case <-s.answers:
		case <-time.After(safetyTimeout):
			s.t.Errorf("stdio burst %d: an answer did not come", n)
			return
		}
	}
}

// httpBurst runs a burst's HTTP mix and waits for every answer.
func (s *soak) httpBurst() {
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() { s.session(k != 0) })
	}
	for i := range 20 {
		wg.Go(func() {
			tool := []string{"instant", "echo", "fail", "typed"}[i%4]
			s.post2026(`{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"t":1},`+meta2026+`}}`, tool, 200)
		})
	}
	for range 2 {
		wg.Go(s.task)
	}
	wg.Go(func() {
		s.post2026(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"pad":"`+strings.Repeat("x", 70<<10)+`"},`+meta2026+`}}`, "echo", http.StatusRequestEntityTooLarge)
	})
	wg.Go(s.leave)
	wg.Wait()
}

// do sends one request and returns its status and body ("" when the
// client left).
func (s *soak) do(ctx context.Context, method string, header map[string]string, body string) (int, string, http.Header) {
	req, err := http.NewRequestWithContext(ctx, method, s.ts.URL+mcpPath, strings.NewReader(body))
	if err != nil {
		s.t.Error(err)
		return 0, "", nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.t.Errorf("%s: %v", method, err)
		}
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (s *soak) post2026(body, name string, want int) string {
	status, answer, _ := s.do(context.Background(), http.MethodPost, map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728, "Mcp-Method": "tools/call", "Mcp-Name": name}, body)
	if status != want {
		s.t.Errorf("2026 POST answered %d %.200s, want %d", status, answer, want)
	}
	return answer
}

// session opens a session, calls in it, opens and drops a GET stream, and
// ends it with DELETE or leaves it to expire.
func (s *soak) session(end bool) {
	status, answer, header := s.do(context.Background(), http.MethodPost, nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}`)
	id := header.Get("Mcp-Session-Id")
	if status != 200 || id == "" {
		s.t.Errorf("initialize answered %d %s", status, answer)
		return
	}
	h := map[string]string{"Mcp-Session-Id": id, "MCP-Protocol-Version": ProtocolVersion20251125}
	for i := range 10 {
		tool := []string{"instant", "progress", "echo", "typed", "fail"}[i%5]
		n := s.tokens.Add(1)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"t":%d,"k":2},"_meta":{"progressToken":%d}}}`, i+1, tool, n, n)
		if status, answer, _ := s.do(context.Background(), http.MethodPost, h, body); status != 200 || !strings.Contains(answer, fmt.Sprintf(`"id":%d,`, i+1)) {
			s.t.Errorf("session call answered %d %.200s", status, answer)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ts.URL+mcpPath, nil)
	get.Header.Set("Mcp-Session-Id", id)
	get.Header.Set("Accept", "text/event-stream")
	if resp, err := s.client.Do(get); err == nil {
		bufio.NewReader(resp.Body).ReadString('\n') // the priming event's first line
		cancel()
		resp.Body.Close()
	} else {
		s.t.Errorf("GET: %v", err)
	}
	cancel()
	if end {
		if status, answer, _ := s.do(context.Background(), http.MethodDelete, h, ""); status != 200 && status != 204 {
			s.t.Errorf("DELETE answered %d %s", status, answer)
		}
	}
}

// task calls the job tool as a task and polls it to its end.
func (s *soak) task() {
	caps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tasksCaps + `}`
	answer := s.post2026(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{"t":1},`+caps+`}}`, "job", 200)
	var created struct {
		Result struct {
			TaskID string `json:"taskId"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(answer), &created); created.Result.TaskID == "" {
		s.t.Errorf("a call as a task answered %.300s", answer)
		return
	}
	for range 1000 {
		status, got, _ := s.do(context.Background(), http.MethodPost, map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728, "Mcp-Method": "tasks/get", "Mcp-Name": created.Result.TaskID},
			`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+created.Result.TaskID+`",`+caps+`}}`)
		if status == 200 && strings.Contains(got, `"status":"completed"`) {
			return
		}
		if status != 200 && status != 500 { // 500: polled too often, refused -32603
			s.t.Errorf("tasks/get answered %d %.300s", status, got)
			return
		}
		runtime.Gosched()
	}
	s.t.Errorf("task %s did not complete", created.Result.TaskID)
}

// forget drops the release channels of tokens, once their sleepers ended.
func (s *soak) forget(tokens *[]int) {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	for _, n := range *tokens {
		delete(s.srv.release, n)
	}
}

// leave calls a sleeper and leaves before it is answered, then releases it.
func (s *soak) leave() {
	n := int(s.tokens.Add(1))
	defer s.forget(&[]int{n})
	release := make(chan struct{})
	s.srv.mu.Lock()
	s.srv.release[n] = release
	s.srv.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.do(ctx, http.MethodPost, map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728, "Mcp-Method": "tools/call", "Mcp-Name": "sleep"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"t":`+strconv.Itoa(n)+`},`+meta2026+`}}`)
	}()
	cancel()
	<-done
	close(release)
}
