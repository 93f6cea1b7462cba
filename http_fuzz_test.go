package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sequence fuzzing of the HTTP handler. As for a connection
// (conn_fuzz_test.go), a fuzz input is a program: each byte or few bytes
// choose the next client action against a handler served by a real
// http.Server over loopback, serving the sequence fuzzers' server
// (seqServer): POSTs of initialize (each a new session), of requests of
// every kind in a session or in 2026-07-28, of notifications, responses and
// batches, of bodies mutated from valid ones; GET streams, resumed or not
// with Last-Event-ID; DELETEs; cancellations; releases of sleepers; and each
// POST's headers (Mcp-Session-Id, MCP-Protocol-Version, Accept,
// Content-Type, Origin, Host, Mcp-Method, Mcp-Name) right, missing or wrong.
// POSTs run concurrently, as clients send them; the client answers the
// server's questions it finds in a stream, a POST's or a GET's, with a POST
// whose headers are all right.
//
// Invariants (httpSeqRun.check and finish):
//
//   - no handler panics (the server's error log names none); every status is
//     one the transport documents (200, 202, 400, 403, 404, 405, 406, 409,
//     413, 415, 500, 503), and a 5xx only where documented: 500 for a
//     2026 request answered -32603, 503 for capacity (-32603 without id);
//   - every body is pure ASCII: 202 carries none, JSON one JSON-RPC message
//     (or a batch's array), an event stream events whose data are JSON-RPC
//     messages;
//   - a POSTed request with every header right is answered exactly once
//     with its id: 200 in a session (a duplicate of an id a running request
//     holds is -32600 "Duplicate in-flight request id"; one cancelled while
//     it could not have finished gets a stream with no answer, one whose
//     session was deleted before its answer came at most one, one whose
//     stream a GET with Last-Event-ID may have resumed while it ran gets
//     its answer on its POST or, when the POST ends with none, on a GET of
//     its session), and in
//     2026-07-28 with the status its answer's code maps to (400 for
//     -32602, 404 for -32601, 500 for -32603, 200 for a result); a
//     notification or a response is 202 with no body; any other POST gets at
//     most one answer, never one with another id;
//   - after Close every session has ended, the executor holds no job and no
//     byte, and no goroutine of the handler or of its connections is left.
//
// Seeds: f.Add below and testdata/fuzz/FuzzHTTPSequence.
func FuzzHTTPSequence(f *testing.F) {
	// The opcodes are httpSeqRun.step's (the byte modulo 10): 0 initialize
	// (version, headers), 1 a POST (1: 2026, else 0 then the session; the
	// kind; headers; the tool or a duplicate), 4 a GET, 5 a cancellation,
	// 6 a DELETE, 7 a release, 8 a mutated body, 9 the end.
	for _, seed := range [][]byte{
		// initialize 2025-11-25; echo and instant in it; a GET stream;
		// 2026 calls of fail and typed.
		{0, 2, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 4, 0, 0, 1, 1, 0, 0, 3, 1, 1, 0, 0, 7, 9},
		// initialize 2025-03-26; a sleeper, its duplicate, its
		// cancellation; a ping; a batch; a DELETE; a POST to the ended
		// session.
		{0, 0, 0, 1, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 2, 5, 0, 1, 0, 0, 3, 0, 200, 1, 0, 0, 7, 16, 200, 6, 0, 0, 1, 0, 0, 4, 0, 200, 9},
		// 2026 POSTs with each header wrong, mutated bodies, a 2026
		// sleeper left and released.
		{1, 1, 0, 4, 0, 1, 1, 0, 5, 0, 1, 1, 0, 6, 0, 1, 1, 0, 8, 0, 1, 1, 0, 9, 0, 1, 1, 0, 10, 0, 8, 1, 5, 9, 3, 8, 1, 40, 1, 2, 1, 1, 0, 0, 2, 7, 0, 9},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runHTTPSequence(t, data) })
}

// httpSeqRun is one sequence against one handler.
type httpSeqRun struct {
	t      testing.TB
	srv    *seqServer
	exec   *Executor
	h      *HTTPHandler
	ts     *httptest.Server
	client *http.Client
	errLog syncLogBuffer

	seqInput

	tokens, fresh int
	startedTokens map[int]bool // sleepers seen starting (awaitStart)
	sessions      []*httpSeqSession
	sleepers      []*httpSleeper
	streams       []context.CancelFunc
	sleeping      sync.WaitGroup // the POSTs of sleepers: they end once released or cancelled
	mayHang       sync.WaitGroup // POSTs and streams that may wait until Close
	blockers      int

	mu       sync.Mutex
	failures []string
	// onGet holds, by session and answer id, a channel closed once a GET
	// stream of the session carried that answer (a resumed stream).
	onGet map[string]chan struct{}
}

// httpSeqSession is a session the sequence opened.
type httpSeqSession struct {
	id      string
	version string
	deleted bool
	// resumed says a GET with a Last-Event-ID was sent in it: it may take
	// over the stream of a request in flight, whose answer then goes on
	// the GET only.
	resumed bool
	// blocked are the ids of its sleepers that have started and that the
	// test has not released nor cancelled: a request with one is a
	// duplicate.
	blocked map[string]*httpSleeper
}

type httpSleeper struct {
	token     int
	id        string
	session   *httpSeqSession // nil in 2026
	release   chan struct{}
	released  bool
	cancelled bool // definitely: its POST gets no answer
	cut       bool // its session was deleted: its POST gets at most one answer
	abort     context.CancelFunc
}

// httpExpect is what the client knows of a POST it sends.
type httpExpect struct {
	request bool   // a request: it gets one answer
	id      string // its canonical id ("" for none)
	exact   bool   // every header right, a body as written: the status is known
	inSess  bool
	session *httpSeqSession // the session of a request, nil for other messages
	dup     bool
	sleeper *httpSleeper
	initial bool // an initialize: its session is recorded
	anyID   bool // a mutated body: its id, if any, is not known
	ended   bool // its session was deleted: 404
}

func (r *httpSeqRun) failf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func runHTTPSequence(t testing.TB, data []byte) {
	baseline := runtime.NumGoroutine()
	r := &httpSeqRun{t: t, seqInput: seqInput{in: data}, startedTokens: map[int]bool{}, onGet: map[string]chan struct{}{}}
	r.srv = newSeqServer(t, func(o *RuntimeOptions) { o.ClientRequestTimeout = 50 * time.Millisecond })
	r.srv.started = make(chan int, 64)
	exec, err := NewExecutor(ExecutorOptions{MaxConcurrency: seqMaxConcurrency, MaxQueue: 256, Timeout: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	r.exec = exec
	h, err := NewHTTPHandler(r.srv.rt, HTTPOptions{Executor: exec, RequestTimeout: Unlimited, MaxBodyBytes: seqMaxLine, Logger: quietLogger(), KeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	r.ts = httptest.NewUnstartedServer(h)
	r.ts.Config.ErrorLog = log.New(&r.errLog, "", 0)
	r.ts.Start()
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	r.client = &http.Client{Transport: transport}

	for actions := 0; actions < 64 && r.pos < len(r.in); actions++ {
		if !r.step() {
			break
		}
	}
	r.finish(baseline, transport)
}

// step performs the next action; false ends the sequence.
func (r *httpSeqRun) step() bool {
	switch r.pick(10) {
	case 0:
		r.initialize()
	case 1, 2, 3:
		r.post()
	case 4:
		r.get()
	case 5:
		r.cancel()
	case 6:
		r.deleteSession()
	case 7:
		r.releaseOne()
	case 8:
		r.mutated()
	case 9:
		return false
	}
	return true
}

// headers returns a POST's headers, right or with one of them wrong
// (mutation 0: none), and whether they are all right.
func (r *httpSeqRun) headers(mutation byte, version, method, name, session string) (http.Header, string, bool) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		h.Set("MCP-Protocol-Version", version)
	}
	if version == ProtocolVersion20260728 {
		h.Set("Mcp-Method", method)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
	}
	if session != "" {
		h.Set("Mcp-Session-Id", session)
	}
	host := ""
	switch mutation % 12 {
	case 0, 1, 2, 3:
		return h, host, true
	case 4:
		h.Set("Accept", []string{"application/json", "text/event-stream", "*/*", ""}[mutation/12%4])
	case 5:
		h.Set("Content-Type", []string{"text/plain", "application/json; charset=latin1", "", "application/json-seq"}[mutation/12%4])
	case 6:
		h.Set("MCP-Protocol-Version", []string{"", "1999-01-01", ProtocolVersion20250618, ProtocolVersion20260728}[mutation/12%4])
	case 7:
		h.Set("Mcp-Session-Id", []string{"", "bogus", strings.Repeat("s", 300), session + "x"}[mutation/12%4])
	case 8:
		h.Set("Origin", []string{"http://evil.example", "null", "http://localhost", "https://127.0.0.1:1"}[mutation/12%4])
	case 9:
		host = []string{"evil.example", "localhost", "[::1]:80", "127.0.0.1.nip.io"}[mutation/12%4]
	case 10:
		h.Set("Mcp-Method", []string{"", "tools/list", method + "x", "ping"}[mutation/12%4])
	case 11:
		h.Add("Mcp-Name", []string{"other", "=?base64?eA==?=", name, ""}[mutation/12%4])
		h.Add("Mcp-Session-Id", session)
	}
	return h, host, false
}

// initialize opens a session, in one of the initialize-era versions.
func (r *httpSeqRun) initialize() {
	version := []string{ProtocolVersion20250326, ProtocolVersion20250618, ProtocolVersion20251125}[r.pick(3)]
	mutation := r.next()
	r.fresh++
	id := `"i` + strconv.Itoa(r.fresh) + `"`
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{"elicitation":{},"sampling":{},"roots":{}},"clientInfo":{"name":"seq","version":"1"}}}`
	header, host, exact := r.headers(mutation, "", "initialize", "", "")
	req, err := http.NewRequest(http.MethodPost, r.ts.URL+mcpPath, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header = header
	if host != "" {
		req.Host = host
	}
	// At once, not in a goroutine: the session is known to what follows.
	r.check(req, body, httpExpect{request: true, id: id, exact: exact, initial: true})
}

// session returns a session the input chooses, nil when there is none.
func (r *httpSeqRun) session() *httpSeqSession {
	b := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions) == 0 {
		return nil
	}
	return r.sessions[int(b)%len(r.sessions)]
}

// post sends one message: in a session, or in 2026-07-28 when the input
// chooses none (or there is none).
func (r *httpSeqRun) post() {
	var s *httpSeqSession
	if r.next()&1 == 0 {
		s = r.session()
	}
	kind := r.pick(8)
	mutation := r.next()
	idChoice := r.next()
	version := ProtocolVersion20260728
	sessionID := ""
	exp := httpExpect{inSess: s != nil}
	if s != nil {
		version, sessionID = s.version, s.id
		r.mu.Lock()
		exp.ended = s.deleted
		r.mu.Unlock()
	}
	r.fresh++
	id := `"p` + strconv.Itoa(r.fresh) + `"`
	if s != nil && idChoice < 64 {
		r.mu.Lock()
		for blockedID := range s.blocked {
			id, exp.dup = blockedID, true
			break
		}
		r.mu.Unlock()
	}
	meta := ""
	if s == nil {
		meta = seqMeta2026(`{"elicitation":{},"sampling":{},"roots":{}}`, 0)
	}
	method, name, params := "tools/call", "", ""
	var sl *httpSleeper
	switch kind {
	case 0, 1, 2:
		tool := []string{"echo", "instant", "sleep", "fail", "panic", "ask", "progress", "typed"}[int(idChoice)%8]
		if (tool == "sleep" || tool == "ask") && r.blockers >= seqMaxConcurrency-1 {
			tool = "instant"
		}
		r.tokens++
		name = tool
		params = withMember(fmt.Sprintf(`{"name":%q,"arguments":{"t":%d,"m":"elicit","k":2}}`, tool, r.tokens), meta)
		if tool == "sleep" || tool == "ask" {
			r.blockers++
		}
		if tool == "sleep" && !exp.dup && !exp.ended { // a deleted session's never starts
			sl = &httpSleeper{token: r.tokens, id: id, session: s, release: make(chan struct{})}
			r.srv.mu.Lock()
			r.srv.release[r.tokens] = sl.release
			r.srv.mu.Unlock()
			exp.sleeper = sl
		}
	case 3:
		method, params = "ping", ""
		if s == nil {
			params = "{" + meta + "}"
		}
	case 4:
		method, params = "tools/list", withMember(`{}`, meta)
	case 5:
		method, name, params = "resources/read", seqResourceURI, withMember(`{"uri":"`+seqResourceURI+`"}`, meta)
	case 6:
		method, name, params = "prompts/get", "nope", withMember(`{"name":"nope"}`, meta)
	case 7:
		method, params = "unknown/method", withMember(`{}`, meta)
	}
	exp.request, exp.id, exp.session = true, id, s
	header, host, exact := r.headers(mutation, version, method, name, sessionID)
	exp.exact = exact
	body := string(requestLine(id, method, params))
	if s != nil && kind == 7 && s.version == ProtocolVersion20250326 && mutation&16 != 0 {
		// A batch of two fresh requests and a notification.
		r.fresh += 2
		body = `[` + string(requestLine(`"b`+strconv.Itoa(r.fresh-1)+`"`, "ping", "")) + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + string(requestLine(`"b`+strconv.Itoa(r.fresh)+`"`, "tools/list", "")) + `]`
		exp = httpExpect{inSess: true, exact: exact, ended: exp.ended}
	}
	if s != nil && kind == 6 && mutation&32 != 0 {
		body = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		exp = httpExpect{inSess: true, exact: exact, ended: exp.ended}
	}
	r.send(header, host, body, exp, sl)
}

// send POSTs body and checks the answer: at once when it will be answered
// on its own, else in a goroutine of its own (a sleeper, whose POST is
// waited for until its handler started, so that its id is certainly held
// in its session by then; a POST whose headers or body are not right).
func (r *httpSeqRun) send(header http.Header, host, body string, exp httpExpect, sl *httpSleeper) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.ts.URL+mcpPath, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header = header
	if host != "" {
		req.Host = host
	}
	if exp.exact && sl == nil {
		r.check(req, body, exp)
		cancel()
		return
	}
	if sl != nil {
		sl.abort = cancel
		r.mu.Lock()
		r.sleepers = append(r.sleepers, sl)
		r.mu.Unlock()
	}
	wg := &r.mayHang
	if exp.exact {
		wg = &r.sleeping
	}
	wg.Go(func() {
		defer cancel()
		r.check(req, body, exp)
	})
	if sl != nil && exp.exact {
		if !r.awaitStart(sl.token) {
			r.failf("sleeper %d did not start", sl.token)
			return
		}
		if sl.session != nil {
			r.mu.Lock()
			sl.session.blocked[sl.id] = sl
			r.mu.Unlock()
		}
	}
}

// awaitStart waits until the sleeper of token has started; the other
// sleepers that start meanwhile (whose POSTs are not waited for) are noted.
func (r *httpSeqRun) awaitStart(token int) bool {
	deadline := time.After(safetyTimeout)
	for !r.startedTokens[token] {
		select {
		case n := <-r.srv.started:
			r.startedTokens[n] = true
		case <-deadline:
			return false
		}
	}
	return true
}

// httpStatusOfCode is the status of a 2026 POST answered with each code
// (0: a result), as docs/how-to/http.md lists them.
var httpStatusOfCode = map[int]int{
	0: 200, CodeParseError: 400, CodeInvalidRequest: 400, CodeMethodNotFound: 404, CodeInvalidParams: 400,
	CodeInternalError: 500, CodeHeaderMismatch: 400, CodeMissingCapability: 400, CodeUnsupportedVersion: 400,
	CodeResourceNotFound: 200,
}

// httpDocumentedStatus are the statuses the transport answers with.
var httpDocumentedStatus = map[int]bool{200: true, 202: true, 400: true, 403: true, 404: true, 405: true, 406: true, 409: true, 413: true, 415: true, 500: true, 503: true}

// check sends req and checks its answer against exp.
func (r *httpSeqRun) check(req *http.Request, body string, exp httpExpect) {
	resp, err := r.client.Do(req)
	if err != nil {
		if req.Context().Err() == nil {
			r.failf("POST %s: %v", body, err)
		}
		return
	}
	defer resp.Body.Close()
	status := resp.StatusCode
	messages, ok := r.readMessages(resp, body)
	if !ok {
		return
	}
	if !httpDocumentedStatus[status] {
		r.failf("POST %s answered %d", body, status)
	}
	var answers []jsonrpcAnswer
	for _, m := range messages {
		answers = append(answers, m...)
	}
	var mine []jsonrpcAnswer
	for _, a := range answers {
		switch {
		case a.ID == nil:
			r.failf("POST %s: a message that is neither a response nor a request: %+v", body, a)
		case string(a.ID) == exp.id, exp.anyID && string(a.ID) != "null":
			mine = append(mine, a)
		case string(a.ID) != "null" && !strings.HasPrefix(string(a.ID), `"b`):
			r.failf("POST %s answered with id %s", body, a.ID)
		}
	}
	switch {
	case status >= 500 && status != 500 && status != 503,
		status == 503 && (len(answers) != 1 || answers[0].Error == nil || answers[0].Error.Code != CodeInternalError),
		status == 500 && (exp.inSess || len(mine) != 1 || mine[0].Error == nil || mine[0].Error.Code != CodeInternalError):
		r.failf("POST %s answered %d with %s, a 5xx the transport does not document", body, status, describeAnswers(answers))
	case len(mine) > 1:
		r.failf("POST %s answered %d times", body, len(mine))
	case status == 202 && len(messages) > 0:
		r.failf("POST %s answered 202 with a body", body)
	}
	if exp.initial && status == 200 && len(mine) == 1 && mine[0].Result != nil {
		var res struct{ ProtocolVersion string }
		json.Unmarshal(mine[0].Result, &res)
		r.mu.Lock()
		r.sessions = append(r.sessions, &httpSeqSession{id: resp.Header.Get("Mcp-Session-Id"), version: res.ProtocolVersion, blocked: map[string]*httpSleeper{}})
		r.mu.Unlock()
	}
	if !exp.exact {
		return
	}
	r.mu.Lock()
	cancelled := exp.sleeper != nil && exp.sleeper.cancelled
	cut := exp.sleeper != nil && exp.sleeper.cut
	resumed := exp.session != nil && exp.session.resumed
	r.mu.Unlock()
	switch {
	case exp.ended: // whatever the message: a notification and a batch too
		if status != 404 || len(answers) != 1 || string(answers[0].ID) != "null" {
			r.failf("POST %s to an ended session answered %d %s, want 404", body, status, describeAnswers(answers))
		}
	case !exp.request && exp.id == "" && !strings.HasPrefix(body, "["):
		if status != 202 {
			r.failf("notification %s answered %d, want 202", body, status)
		}
	case strings.HasPrefix(body, "["):
		if status != 200 {
			r.failf("batch %s answered %d", body, status)
		}
	case exp.inSess && cancelled:
		if len(mine) != 0 {
			r.failf("request %s cancelled before it could finish is answered: %+v", body, mine)
		}
	case cut && len(mine) == 0:
	case resumed && !exp.dup && len(mine) == 0:
		// A GET resuming its stream took it over: the answer goes there.
		if status != 200 || !r.awaitAnswerOnGet(exp.session.id, exp.id) {
			r.failf("request %s answered neither on its POST (status %d) nor on a GET resuming its stream", body, status)
		}
	case len(mine) != 1:
		r.failf("request %s answered %d times (status %d): %s", body, len(mine), status, describeAnswers(answers))
	case exp.dup && (mine[0].Error == nil || mine[0].Error.Message != errDuplicateID.Message):
		r.failf("request %s with the id of a running request answered %+v, want a duplicate", body, mine[0])
	case exp.inSess && status != 200:
		r.failf("request %s of a session answered %d", body, status)
	case !exp.inSess && !exp.initial:
		code := 0
		if mine[0].Error != nil {
			code = mine[0].Error.Code
		}
		if want := httpStatusOfCode[code]; status != want {
			r.failf("2026 request %s answered %d with code %d, want %d", body, status, code, want)
		}
	}
}

// jsonrpcAnswer is a message of an answer, as the client reads it.
type jsonrpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// readMessages reads the answer's messages: a JSON body's (one, or a
// batch's array), or the data of each event of a stream, answering the
// server's questions it finds; each grouped as it came. It checks that
// every byte is ASCII and every message JSON-RPC.
func (r *httpSeqRun) readMessages(resp *http.Response, body string) ([][]jsonrpcAnswer, bool) {
	decode := func(data []byte) []jsonrpcAnswer {
		for _, c := range data {
			if c >= 0x80 {
				r.failf("POST %s: an answer not pure ASCII: %q", body, data)
				return nil
			}
		}
		var list []jsonrpcAnswer
		if len(data) > 0 && data[0] == '[' {
			if json.Unmarshal(data, &list) != nil || len(list) == 0 {
				r.failf("POST %s: an answer that is not an array of messages: %q", body, data)
			}
			return list
		}
		var one jsonrpcAnswer
		if json.Unmarshal(data, &one) != nil {
			r.failf("POST %s: an answer that is not a JSON-RPC message: %q", body, data)
			return nil
		}
		if one.Method != "" {
			if one.ID != nil {
				r.answerQuestion(resp.Request, one)
			}
			return nil // a notification or a question, not an answer
		}
		if resp.Request.Method == http.MethodGet {
			r.answeredOnGet(resp.Request.Header.Get("Mcp-Session-Id"), one)
		}
		return []jsonrpcAnswer{one}
	}
	ct := resp.Header.Get("Content-Type")
	var out [][]jsonrpcAnswer
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				out = append(out, decode([]byte(data)))
			}
		}
	default:
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, false // the client left
		}
		if len(data) > 0 {
			if !strings.HasPrefix(ct, "application/json") {
				r.failf("POST %s answered %d with %q: %q", body, resp.StatusCode, ct, data)
			}
			out = append(out, decode(data))
		}
	}
	return out, true
}

// answeredOnGet notes that a GET stream of session carried a: a stream it
// resumed.
func (r *httpSeqRun) answeredOnGet(session string, a jsonrpcAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.answerOnGet(session, string(a.ID))
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// awaitAnswerOnGet waits until a GET stream of session carries the answer
// to id; false when none has within safetyTimeout.
func (r *httpSeqRun) awaitAnswerOnGet(session, id string) bool {
	r.mu.Lock()
	ch := r.answerOnGet(session, id)
	r.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(safetyTimeout):
		return false
	}
}

// answerOnGet returns the channel closed once a GET stream of session
// carried the answer to id; with r.mu held.
func (r *httpSeqRun) answerOnGet(session, id string) chan struct{} {
	key := session + " " + id
	ch := r.onGet[key]
	if ch == nil {
		ch = make(chan struct{})
		r.onGet[key] = ch
	}
	return ch
}

// answerQuestion answers a server's request found in a stream, as a client
// does: a POST of the response in the stream's session, with every header
// right whatever the headers of the POST or GET that carried the question
// (a GET's Accept need not list application/json, a POST's must).
func (r *httpSeqRun) answerQuestion(req *http.Request, q jsonrpcAnswer) {
	session := req.Header.Get("Mcp-Session-Id")
	if session == "" {
		r.failf("a question %s in a POST without a session", q.Method)
		return
	}
	version := req.Header.Get("MCP-Protocol-Version")
	r.mu.Lock()
	for _, s := range r.sessions {
		if s.id == session {
			version = s.version
		}
	}
	r.mu.Unlock()
	result := map[string]string{MethodElicit: `{"action":"decline"}`, MethodCreateMessage: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`, MethodListRoots: `{"roots":[]}`}[q.Method]
	answer, _ := http.NewRequest(http.MethodPost, r.ts.URL+mcpPath, strings.NewReader(`{"jsonrpc":"2.0","id":`+string(q.ID)+`,"result":`+result+`}`))
	answer.Header, _, _ = r.headers(0, version, "", "", session)
	resp, err := r.client.Do(answer)
	if err != nil {
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 && resp.StatusCode != 404 {
		r.failf("the answer to %s answered %d", q.Method, resp.StatusCode)
	}
}

// get opens a session's GET stream, read in a goroutine until the test or
// Close ends it; Last-Event-ID none, garbage or plausible.
func (r *httpSeqRun) get() {
	s := r.session()
	variant := r.next()
	if s == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.ts.URL+mcpPath, nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Accept", []string{"text/event-stream", "application/json", "text/event-stream", "*/*"}[variant%4])
	last := []string{"", "0-0", "1-1", "x", "99-99999999999999999999", " 2-0 "}[int(variant/4)%6]
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	r.mu.Lock()
	s.resumed = s.resumed || last != ""
	r.streams = append(r.streams, cancel)
	r.mu.Unlock()
	r.mayHang.Go(func() {
		defer cancel()
		resp, err := r.client.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if !httpDocumentedStatus[resp.StatusCode] || resp.StatusCode >= 500 {
			r.failf("GET answered %d", resp.StatusCode)
		}
		r.readMessages(resp, "GET")
	})
}

// cancel cancels a sleeper: in a session with notifications/cancelled (it
// is then never answered), in 2026 by leaving its POST.
func (r *httpSeqRun) cancel() {
	b := r.next()
	r.mu.Lock()
	var open []*httpSleeper
	for _, sl := range r.sleepers {
		if !sl.released && !sl.cancelled {
			open = append(open, sl)
		}
	}
	if len(open) == 0 {
		r.mu.Unlock()
		return
	}
	sl := open[int(b)%len(open)]
	s := sl.session
	blocked := s != nil && s.blocked[sl.id] == sl
	if blocked {
		sl.cancelled = true
		delete(s.blocked, sl.id)
	}
	r.mu.Unlock()
	if s == nil || !blocked {
		sl.abort()
		return
	}
	header, host, _ := r.headers(0, s.version, "", "", s.id)
	r.send(header, host, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+sl.id+`}}`, httpExpect{inSess: true, exact: true}, nil)
}

// deleteSession ends a session (or sends a DELETE that names none).
func (r *httpSeqRun) deleteSession() {
	s := r.session()
	variant := r.next()
	req, _ := http.NewRequest(http.MethodDelete, r.ts.URL+mcpPath, nil)
	switch {
	case s != nil && variant&1 == 0:
		req.Header.Set("Mcp-Session-Id", s.id)
		// Its requests end with it: those not answered yet (its sleepers,
		// released or not) are answered at most once.
		r.mu.Lock()
		s.deleted = true
		clear(s.blocked)
		for _, sl := range r.sleepers {
			if sl.session == s {
				sl.cut = true
			}
		}
		r.mu.Unlock()
	case variant&2 == 0:
		req.Header.Set("Mcp-Session-Id", "bogus")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.failf("DELETE: %v", err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !httpDocumentedStatus[resp.StatusCode] && resp.StatusCode != 204 || resp.StatusCode >= 500 {
		r.failf("DELETE answered %d", resp.StatusCode)
	}
}

// releaseOne releases a sleeper the test has not cancelled.
func (r *httpSeqRun) releaseOne() {
	b := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	var open []*httpSleeper
	for _, sl := range r.sleepers {
		if !sl.released && !sl.cancelled {
			open = append(open, sl)
		}
	}
	if len(open) == 0 {
		return
	}
	sl := open[int(b)%len(open)]
	r.release(sl)
}

// release releases sl, with r.mu held.
func (r *httpSeqRun) release(sl *httpSleeper) {
	sl.released = true
	if sl.session != nil {
		delete(sl.session.blocked, sl.id)
	}
	close(sl.release)
}

// mutated POSTs a valid body with some of its bytes replaced, in a session
// or not.
func (r *httpSeqRun) mutated() {
	s := r.session()
	pos, value, cut := int(r.next()), r.next(), r.next()%4
	r.fresh++
	body := string(requestLine(`"m`+strconv.Itoa(r.fresh)+`"`, "tools/call", withMember(`{"name":"echo","arguments":{"t":0}}`, seqMeta2026(`{}`, 0))))
	version, sessionID := ProtocolVersion20260728, ""
	if s != nil {
		version, sessionID = s.version, s.id
		body = string(requestLine(`"m`+strconv.Itoa(r.fresh)+`"`, "tools/list", `{}`))
	}
	p := pos % len(body)
	body = body[:p] + string([]byte{value}) + body[min(len(body), p+int(cut)):]
	header, host, _ := r.headers(0, version, "tools/call", "echo", sessionID)
	r.send(header, host, body, httpExpect{anyID: true}, nil)
}

// finish releases what waits, closes the handler and checks what is left.
func (r *httpSeqRun) finish(baseline int, transport *http.Transport) {
	t := r.t
	t.Helper()
	r.mu.Lock()
	for _, sl := range r.sleepers {
		if !sl.released && !sl.cancelled {
			r.release(sl)
		}
	}
	r.mu.Unlock()
	if !waitGroupWithin(&r.sleeping, safetyTimeout) {
		t.Errorf("the POSTs of sleepers did not end once released or cancelled")
	}
	r.h.endStreams()
	r.mu.Lock()
	for _, cancel := range r.streams {
		cancel()
	}
	r.mu.Unlock()
	r.h.Close()
	if !waitGroupWithin(&r.mayHang, safetyTimeout) {
		t.Errorf("POSTs and streams did not end after Close")
	}
	r.ts.Close()
	transport.CloseIdleConnections()
	if n := len(r.h.sessions.all()); n != 0 {
		t.Errorf("%d sessions left after Close", n)
	}
	if !poll(func() bool {
		st := r.exec.Stats()
		return st.Running == 0 && st.Queued == 0 && st.InflightBytes == 0
	}) {
		t.Errorf("after Close, the executor holds %+v", r.exec.Stats())
	}
	r.exec.Close()
	if !poll(func() bool { return runtime.NumGoroutine() <= baseline }) {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
	}
	if log := r.errLog.String(); strings.Contains(log, "panic") {
		t.Errorf("the server logged a panic:\n%s", log)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failures {
		t.Error(f)
	}
}

// waitGroupWithin waits for wg, at most d (a hang becomes a failure).
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// describeAnswers writes answers for a failure's message.
func describeAnswers(answers []jsonrpcAnswer) string {
	var b bytes.Buffer
	for _, a := range answers {
		fmt.Fprintf(&b, "{id %s", a.ID)
		if a.Error != nil {
			fmt.Fprintf(&b, " error %d %q", a.Error.Code, a.Error.Message)
		}
		if a.Result != nil {
			fmt.Fprintf(&b, " result %.80s", a.Result)
		}
		b.WriteString("} ")
	}
	return b.String()
}
