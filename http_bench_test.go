package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"mcpstdio/internal/cannedecho"
)

// The allocations of an HTTP call are measured three ways, which separate
// the server's from the client's and net/http's:
//   - BenchmarkHTTPEcho: a whole call over a kept-alive loopback connection,
//     net/http's client and server included;
//   - BenchmarkHTTPEchoBaseline: the same calls answered by a bare handler
//     (cannedecho.Handler, which reuses its buffers), so what it allocates
//     is, but for its few, the client's and net/http's share, and
//     BenchmarkHTTPEcho's excess over it is the HTTPHandler's less the bare
//     handler's own;
//   - BenchmarkHTTPHandlerEcho: HTTPHandler.ServeHTTP called directly with a
//     prebuilt request and a reused ResponseWriter, so every allocation it
//     counts is the handler's own (the executor's worker included).

// httpEchoBody is the body of BenchmarkHTTPEcho's 2026 tools/call.
const httpEchoBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` + meta2026 + `}}`

// newBenchHTTPHandler returns the reference catalog's handler, closed when b
// ends.
func newBenchHTTPHandler(b *testing.B) *HTTPHandler {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "bench", Version: "1"}, Tasks: TaskOptions{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := registerReferenceCatalog(rt); err != nil {
		b.Fatal(err)
	}
	h, err := NewHTTPHandler(rt, HTTPOptions{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h
}

// BenchmarkHTTPEcho measures one 2026-07-28 tools/call of the echo tool over
// a kept-alive loopback connection, client included.
func BenchmarkHTTPEcho(b *testing.B) {
	benchHTTPClientCalls(b, newBenchHTTPHandler(b))
}

// BenchmarkHTTPEchoBaseline is BenchmarkHTTPEcho answered by a bare net/http
// handler that reads the body and writes a canned echo result.
func BenchmarkHTTPEchoBaseline(b *testing.B) {
	benchHTTPClientCalls(b, cannedecho.Handler())
}

func benchHTTPClientCalls(b *testing.B, h http.Handler) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(httpEchoBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkHTTPHandlerEcho calls HTTPHandler.ServeHTTP directly with a
// 100-byte echo tools/call, 2026-07-28 (stateless) or 2025-11-25 (in a
// session opened before the timing), so that allocs/op are the handler's
// alone: the request (headers, body reader) is built once and the
// ResponseWriter reused.
func BenchmarkHTTPHandlerEcho(b *testing.B) {
	for _, version := range []string{ProtocolVersion20260728, ProtocolVersion20251125} {
		b.Run(version, func(b *testing.B) { benchHTTPHandlerEcho(b, newBenchHTTPHandler(b), version) })
	}
}

// benchHTTPHandlerEcho is BenchmarkHTTPHandlerEcho's loop on h, which
// serves the reference catalog.
func benchHTTPHandlerEcho(b *testing.B, h *HTTPHandler, version string) {
	header := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {version},
	}
	body := `{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + httpLoadText + `"}}}`
	if version == ProtocolVersion20260728 {
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", "echo")
		body = strings.TrimSuffix(body, "}}") + "," + binMeta2026 + "}}"
	} else {
		header.Set(headerSessionID, openDirectSession(b, h, version))
	}
	w := newReusedResponseWriter()
	r := newReusedRequest(header, body)
	h.ServeHTTP(w, r.next())
	if w.status != http.StatusOK || !bytes.Contains(w.body, []byte(`"content":[{"type":"text","text":"`+httpLoadText)) {
		b.Fatalf("answer %d %s", w.status, w.body)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r.next())
		if w.status != http.StatusOK {
			b.Fatalf("answer %d %s", w.status, w.body)
		}
	}
}

// An HTTP echo call allocates, in the handler alone, no more than it does
// today: 5 for a 2026-07-28 POST, 6 in a 2025-11-25 session (the answer's
// headers are prebuilt slices, the tool's name for its schema is the Mcp-Name
// header's, the message's execution and the body's reservation live in the
// POST's one record, and a 2026 POST whose Inline tool runs on its
// goroutine registers no submitter and makes no channels for workers'
// Peers). 4 of them are the runtime's (the typed tool's arguments and text,
// the response frame, the string id). A 2026 POST's record is reused
// (recyclePost), with the buffer its Inline answer frame is built in: its
// own are the body and the side record of what the Inline handler may
// keep (inlineSide), 1.1 KB where the record was 2.7 KB; of the runtime's
// four, three remain.
// A session POST's are its record, which holds a short body, and its
// writer's channel. The tighter limits catch any new per-call allocation.
// Measured over a whole benchmark run, as TestEchoRoundTripAllocations is.
func TestHTTPHandlerEchoAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two benchmarks")
	}
	for _, tt := range []struct {
		version   string
		maxAllocs int64
	}{
		{ProtocolVersion20260728, 5},
		{ProtocolVersion20251125, 6},
	} {
		t.Run(tt.version, func(t *testing.T) {
			r := testing.Benchmark(func(b *testing.B) { benchHTTPHandlerEcho(b, newBenchHTTPHandler(b), tt.version) })
			if r.N == 0 {
				t.Fatal("the benchmark failed")
			}
			if got := r.AllocsPerOp(); got > tt.maxAllocs {
				t.Errorf("%d allocations per call (over %d calls), want at most %d", got, r.N, tt.maxAllocs)
			}
		})
	}
}

// BenchmarkRecordSizes reports the size of the records allocated per
// message (record-bytes) and the block the heap gives each (B/op: its size
// class, with the 8-byte header the heap puts before an object of over 512
// bytes that holds pointers), as the Go release's allocator rounds: an execution for any
// Dispatcher and a runtimeExecution for the Runtime (conn.go), a 2026-07-28
// POST's record and a session POST's (httpExchange). A record that grows
// past its block costs the bytes to the next class on every call, which no
// allocation count shows; the figures say where a field would tip it.
func BenchmarkRecordSizes(b *testing.B) {
	for _, record := range []struct {
		name string
		size uintptr
		new  func() any
	}{
		{"execution", unsafe.Sizeof(execution{}), func() any { return new(execution) }},
		{"runtimeExecution", unsafe.Sizeof(runtimeExecution{}), func() any { return new(runtimeExecution) }},
		{"statelessPost", unsafe.Sizeof(statelessPost{}), func() any { return new(statelessPost) }},
		{"httpExchange", unsafe.Sizeof(httpExchange{}), func() any { return new(httpExchange) }},
	} {
		b.Run(record.name, func(b *testing.B) {
			b.ReportAllocs() // B/op: the block
			var kept any
			for b.Loop() {
				kept = record.new()
			}
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(record.size), "record-bytes")
		})
	}
}

// openDirectSession opens a session of version through h.ServeHTTP and
// returns its id.
func openDirectSession(b *testing.B, h *HTTPHandler, version string) string {
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	w := newReusedResponseWriter()
	h.ServeHTTP(w, newReusedRequest(header, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`).next())
	session := w.Header().Get(headerSessionID)
	if w.status != http.StatusOK || session == "" {
		b.Fatalf("initialize: %d %s", w.status, w.body)
	}
	header.Set(headerSessionID, session)
	header.Set("Mcp-Protocol-Version", version)
	w.reset()
	h.ServeHTTP(w, newReusedRequest(header, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).next())
	if w.status != http.StatusAccepted {
		b.Fatalf("notifications/initialized: %d %s", w.status, w.body)
	}
	return session
}

// reusedRequest is a POST to /mcp whose body can be read again: next rewinds it.
type reusedRequest struct {
	r    *http.Request
	body reusedBody
}

func newReusedRequest(header http.Header, body string) *reusedRequest {
	rr := &reusedRequest{body: reusedBody{text: []byte(body)}}
	rr.r = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	rr.r.Header = header
	rr.r.Body = &rr.body
	rr.r.ContentLength = int64(len(body))
	return rr
}

// next returns the request with its body unread.
func (rr *reusedRequest) next() *http.Request {
	rr.body.off = 0
	return rr.r
}

type reusedBody struct {
	text []byte
	off  int
}

func (b *reusedBody) Read(p []byte) (int, error) {
	if b.off == len(b.text) {
		return 0, io.EOF
	}
	n := copy(p, b.text[b.off:])
	b.off += n
	return n, nil
}

func (b *reusedBody) Close() error { return nil }

// reusedResponseWriter is an http.ResponseWriter whose header map and body
// buffer are kept from one call to the next. It takes deadlines and
// flushes, as net/http's does, so the handler takes the same paths.
type reusedResponseWriter struct {
	header http.Header
	status int
	body   []byte
}

func newReusedResponseWriter() *reusedResponseWriter {
	return &reusedResponseWriter{header: make(http.Header)}
}

func (w *reusedResponseWriter) reset() {
	clear(w.header)
	w.status, w.body = 0, w.body[:0]
}

func (w *reusedResponseWriter) Header() http.Header { return w.header }

func (w *reusedResponseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *reusedResponseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *reusedResponseWriter) Flush() { w.WriteHeader(http.StatusOK) }

func (w *reusedResponseWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *reusedResponseWriter) SetWriteDeadline(time.Time) error { return nil }
