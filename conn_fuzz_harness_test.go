package main

// The harness of the connection sequence fuzzers (conn_fuzz_test.go): the
// server they drive, the two client ends (the in-memory transport, and the
// stdio coordinator over a fake pipe), the decoder that turns a fuzz input
// into a sequence of client actions, the model of what the client knows
// while it sends, and the checks made once the sequence has ended.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// seqServer is the server a sequence drives: a Runtime whose tools answer at
// once (echo, inline; instant, on a worker), sleep until the test releases
// them or their context ends (sleep), fail (fail), panic (panic), ask the
// client (ask), report progress and log (progress) and bind typed arguments
// (typed), with a resource, a resource template, a prompt and a completion.
// A call's arguments carry a token, "t", unique in the sequence, which its
// answer echoes ("t=N" as its text, or {"t":N}) so that an answer can be
// told to its call whatever its id.
type seqServer struct {
	rt *Runtime
	mu sync.Mutex
	// release holds the release channel of each sleeper, by token, made
	// before its call is sent; a sleeper returns when it is closed or when
	// its context ends.
	release map[int]chan struct{}
	// started, when not nil, receives the token of each sleeper whose
	// handler starts waiting.
	started chan int
}

const seqResourceURI = "seq://r"

// newSeqServer returns the server, its runtime's options changed by change
// (nil: none).
func newSeqServer(t testing.TB, change func(*RuntimeOptions)) *seqServer {
	opts := RuntimeOptions{
		ServerInfo: Implementation{Name: "seq", Version: "1"},
		Logging:    true, ResourcesSubscribe: true, ToolsListChanged: true,
		Logger: quietLogger(),
	}
	if change != nil {
		change(&opts)
	}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &seqServer{rt: rt, release: map[int]chan struct{}{}}
	type typedIn struct {
		T int    `json:"t"`
		S string `json:"s"`
	}
	type typedOut struct {
		T int `json:"t"`
	}
	err = errors.Join(
		rt.AddTool(Tool{Name: "echo", Inline: true}, s.answer),
		rt.AddTool(Tool{Name: "instant"}, s.answer),
		rt.AddTool(Tool{Name: "sleep"}, s.sleep),
		rt.AddTool(Tool{Name: "fail"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
			n, err := seqToken(req)
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("t=%d failed", n)
		}),
		rt.AddTool(Tool{Name: "panic"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { panic("seq panic") }),
		rt.AddTool(Tool{Name: "ask"}, s.ask),
		rt.AddTool(Tool{Name: "progress"}, s.progress),
		AddTypedTool(rt, Tool{Name: "typed"}, func(_ context.Context, _ *HandlerRequest, in typedIn) (typedOut, error) {
			return typedOut{T: in.T}, nil
		}),
		rt.AddResource(Resource{URI: seqResourceURI, Name: "r"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{Text: "r"}}}, nil
		}),
		rt.AddResourceTemplate(ResourceTemplate{URITemplate: "seq://item/{id}", Name: "item"}, func(_ context.Context, req *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{Text: req.Variables["id"]}}}, nil
		}),
		rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a", Required: true}}}, func(context.Context, *HandlerRequest) (*PromptResult, error) {
			return &PromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("p")}}}, nil
		}),
		rt.AddPromptCompletion("p", "a", func(_ context.Context, req *CompletionRequest) (*Completion, error) {
			return &Completion{Values: []string{req.Value + "1"}}, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// seqToken is the token of a call: its argument "t".
func seqToken(req *HandlerRequest) (int, error) {
	var args struct {
		T int `json:"t"`
	}
	err := req.Bind(&args)
	return args.T, err
}

func seqResult(n int) *ToolResult { return TextResult("t=" + strconv.Itoa(n)) }

func (s *seqServer) answer(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
	n, err := seqToken(req)
	if err != nil {
		return nil, err
	}
	return seqResult(n), nil
}

// sleep waits until its release channel is closed or its context ends; a
// call without a release channel (odd arguments) returns at once.
func (s *seqServer) sleep(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	n, err := seqToken(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	release := s.release[n]
	s.mu.Unlock()
	if release != nil {
		if s.started != nil {
			s.started <- n
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return seqResult(n), nil
}

// ask asks the client what its argument "m" names and answers with its
// token, whatever the client answered; in 2026-07-28 the question ends the
// round (input_required).
func (s *seqServer) ask(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var args struct {
		T int    `json:"t"`
		M string `json:"m"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	text := "t=" + strconv.Itoa(args.T)
	var err error
	switch args.M {
	case "sample":
		_, err = req.CreateMessage(ctx, "q", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}, "maxTokens": 5})
	case "roots":
		_, err = req.ListRoots(ctx, "q")
	default:
		_, err = req.Elicit(ctx, "q", map[string]any{"message": text, "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}})
	}
	if errors.Is(err, ErrInputRequired) {
		return nil, err
	}
	return TextResult(fmt.Sprintf("%s asked: %v", text, err)), nil
}

// progress reports its argument "k" steps of progress and logs one message,
// each carrying its token, then answers.
func (s *seqServer) progress(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var args struct {
		T int `json:"t"`
		K int `json:"k"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	for i := 1; i <= min(args.K, 5); i++ {
		if err := req.ReportProgress(ctx, Progress{Progress: float64(i), Total: float64(args.K), Message: "t=" + strconv.Itoa(args.T)}); err != nil {
			return nil, err
		}
	}
	if err := req.Log(ctx, "info", "seq", map[string]int{"t": args.T}); err != nil {
		return nil, err
	}
	return seqResult(args.T), nil
}

// seqQueue is an unbounded queue of byte strings with an end: what the
// client sends, or what the server wrote. push never blocks, so neither the
// sequence nor the server waits on the other through it.
type seqQueue struct {
	mu     sync.Mutex
	items  [][]byte
	ended  bool
	endErr error // io.EOF, or the read error the input ends with
	signal chan struct{}
}

func newSeqQueue() *seqQueue { return &seqQueue{signal: make(chan struct{}, 1)} }

func (q *seqQueue) push(b []byte) {
	q.mu.Lock()
	q.items = append(q.items, b)
	q.mu.Unlock()
	q.wake()
}

func (q *seqQueue) end(err error) {
	q.mu.Lock()
	q.ended, q.endErr = true, err
	q.mu.Unlock()
	q.wake()
}

func (q *seqQueue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop returns the next item, or ok false with the end's error once the
// queue ended and is empty. It blocks until one of the two.
func (q *seqQueue) pop() (item []byte, ok bool, err error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			item, q.items = q.items[0], q.items[1:]
			q.mu.Unlock()
			return item, true, nil
		}
		if q.ended {
			q.mu.Unlock()
			return nil, false, q.endErr
		}
		q.mu.Unlock()
		<-q.signal
	}
}

// seqPipeReader is the stdio input of a sequence: the queued lines, handed
// out in reads of at most chunk bytes (0: what is there), as a pipe written
// in pieces delivers them.
type seqPipeReader struct {
	q     *seqQueue
	chunk int
	buf   []byte
}

func (r *seqPipeReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		item, ok, err := r.q.pop()
		if !ok {
			return 0, err
		}
		r.buf = item
	}
	n := len(p)
	if r.chunk > 0 {
		n = min(n, r.chunk)
	}
	n = copy(p[:n], r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// seqPipeWriter is the stdio output of a sequence. It never blocks: each
// Write is queued whole for the client's reader, which checks that it
// carries whole frames. seqDeadlinePipeWriter has write deadlines (which
// never pass), so the coordinator writes itself, as to a non-blocking pipe.
type seqPipeWriter struct{ q *seqQueue }

func (w seqPipeWriter) Write(p []byte) (int, error) {
	w.q.push(bytes.Clone(p))
	return len(p), nil
}

type seqDeadlinePipeWriter struct{ seqPipeWriter }

func (seqDeadlinePipeWriter) SetWriteDeadline(time.Time) error { return nil }

// seqConfig is what a sequence's first byte chooses.
type seqConfig struct {
	overload bool // a small executor: requests may be refused for capacity
	// stdio only
	chunk     int  // input read in pieces of at most this many bytes (0: whole)
	direct    bool // the output has write deadlines: the coordinator writes
	readError bool // the input ends with a read error instead of end of file
	crlf      bool // lines end in "\r\n"
	bom       bool // each line starts with a UTF-8 byte order mark
	openEnd   bool // the input ends with a line without newline (served at the end of file)
}

func decodeSeqConfig(b byte, stdio bool) seqConfig {
	c := seqConfig{overload: b&1 != 0}
	if stdio {
		c.chunk = []int{0, 1, 3, 61}[b>>1&3]
		c.direct = b&8 != 0
		c.readError = b&16 != 0
		c.crlf = b&32 != 0
		c.bom = b&64 != 0
		c.openEnd = b&128 != 0 && !c.readError // a read error drops a line not ended
	}
	return c
}

// Limits of the sequences' connections.
const (
	seqMaxLine        = 4096
	seqMaxConcurrency = 8
	seqMaxActions     = 160
)

// seqExpect is how many answers a call must get.
type seqExpect int

const (
	expectOne       seqExpect = iota // answered exactly once
	expectNone                       // cancelled while it could not have finished: never answered
	expectAtMostOne                  // cancelled as its answer may have been on its way, or a listen stream
)

// seqCall is a request of the sequence with a tracked id that the connection
// admits (or refuses as a duplicate).
type seqCall struct {
	index   int    // its position among the sequence's sends
	id      string // canonical
	method  string
	tool    string // for tools/call
	token   int    // 0 when its answer carries none
	era2026 bool   // its params carry a valid 2026-07-28 _meta
	// plain: a well-formed request (object params, jsonrpc "2.0") of a
	// method the legacy era serves only after initialize, without _meta.
	plain  bool
	dup    bool       // sent while its id was certainly in flight: refused as a duplicate
	expect seqExpect  // when not dup
	batch  *seqBatch  // the batch it is a member of, nil for none
	listen bool       // subscriptions/listen: an open stream is never answered
	answer *seqAnswer // the one answer attributed to it, set by the reader
	// blocked: certainly admitted and in flight until the test acts (a
	// sleeper not released).
	blocked  bool
	sleeper  bool
	released bool
	// answered, when not nil, is closed when its answer is received.
	answered chan struct{}
}

// seqBatch is a JSON array the sequence sent: a batch when the connection
// had negotiated 2025-03-26 when it arrived, else one invalid request.
type seqBatch struct {
	index     int
	empty     bool
	untracked int // members answered with id null (untracked ids, methods not strings)
	parseNull int // members that are not objects or arrays themselves: -32600, id null
}

// seqAnswer is a response frame (or a member of a batch's array frame).
type seqAnswer struct {
	id      string // canonical, "" for null
	result  map[string]json.RawMessage
	err     *RPCError
	inArray bool
	call    *seqCall
	pos     int // position among the frames
}

// seqIDState is what the client knows of one id while it sends.
type seqIDState struct {
	// call is the request holding the id that may still be answered (its
	// answer not received yet), nil when none.
	call *seqCall
	// racy is a request of the id cancelled while its answer may have been
	// on its way: until an answer to a message sent after retiredAt is
	// received, it may still arrive, and the id is not reused.
	racy      *seqCall
	retiredAt int
	// admissible are duplicates of the id in batches that may have been
	// held behind an initialize when a cancellation freed the id. A held
	// array's members are admitted when it is released, so each is refused
	// as a duplicate or admitted and answered, as the cancellation was read
	// after the release or before it. Until each is answered the id is not
	// reused, and no cancellation names it (an admitted one could then get
	// neither).
	admissible []*seqCall
}

// admitting reports whether a member of admissible may still be answered.
func (st *seqIDState) admitting() bool {
	return slices.ContainsFunc(st.admissible, func(c *seqCall) bool { return c.answer == nil })
}

// seqRun is one sequence against one connection.
type seqRun struct {
	t      testing.TB
	stdio  bool
	cfg    seqConfig
	srv    *seqServer
	exec   *Executor
	tr     *Transport
	input  *seqQueue
	output *seqQueue // stdio: the writes; memory: unused
	served chan error
	read   chan struct{} // closed when the client's reader has read the last frame

	seqInput
	sends    int // messages sent
	tokens   int
	fresh    int
	blockers int // sleepers and asks sent: at most seqMaxConcurrency-1, so that a worker is always free
	ended    bool
	log      []string // the messages sent, for a failure's report

	// Shared with the client's reader, under mu.
	mu        sync.Mutex
	ids       map[string]*seqIDState
	calls     []*seqCall
	byToken   map[int]*seqCall
	inits     []*seqCall
	initsOpen int // initialize requests not answered yet
	version   string
	batches   []*seqBatch
	sleepers  []*seqCall
	asks      []json.RawMessage // ids of the server's requests not answered yet
	highWater int               // highest send index of a message whose answer was received
	answers   []*seqAnswer
	frames    int
	arrays    int // array frames
	failures  []string
	notes     map[int][]int // positions of the notifications and requests carrying each token
	nullCount map[string]int
	wantNull  map[string]int // null-id answers expected outside batches, by class
	notified  int            // application notifications written
}

func (r *seqRun) failf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// seqInput is a sequence fuzzer's input, read a byte at a time.
type seqInput struct {
	in  []byte
	pos int
}

// next returns the next byte of the input, 0 past its end.
func (r *seqInput) next() byte {
	if r.pos >= len(r.in) {
		r.pos++
		return 0
	}
	b := r.in[r.pos]
	r.pos++
	return b
}

// pick returns the next byte of the input modulo n.
func (r *seqInput) pick(n int) int { return int(r.next()) % n }

// runSequence runs the sequence data against a fresh connection over the
// in-memory transport or the stdio coordinator and checks every invariant.
func runSequence(t testing.TB, stdio bool, data []byte) {
	baseline := runtime.NumGoroutine()
	r := &seqRun{t: t, stdio: stdio, seqInput: seqInput{in: data}, ids: map[string]*seqIDState{}, byToken: map[int]*seqCall{},
		notes: map[int][]int{}, nullCount: map[string]int{}, wantNull: map[string]int{}, highWater: -1,
		served: make(chan error, 1), read: make(chan struct{}), input: newSeqQueue()}
	r.cfg = decodeSeqConfig(r.next(), stdio)
	r.srv = newSeqServer(t, nil)
	eopts := ExecutorOptions{MaxConcurrency: seqMaxConcurrency, MaxQueue: 1024, Timeout: Unlimited}
	if r.cfg.overload {
		eopts = ExecutorOptions{MaxConcurrency: 2, MaxQueue: 2, MaxInflightBytes: 2048, Timeout: Unlimited}
	}
	exec, err := NewExecutor(eopts)
	if err != nil {
		t.Fatal(err)
	}
	r.exec = exec
	opts := Options{MaxLineBytes: seqMaxLine, Executor: exec, Logger: quietLogger(), RequestTimeout: Unlimited,
		NotificationMethods: []string{seqAppNotification}}
	if stdio {
		r.output = newSeqQueue()
		opts.Input = &seqPipeReader{q: r.input, chunk: r.cfg.chunk}
		opts.Output = seqPipeWriter{r.output}
		if r.cfg.direct {
			opts.Output = seqDeadlinePipeWriter{seqPipeWriter{r.output}}
		}
		r.tr, err = NewTransport(r.srv.rt, opts)
		if err != nil {
			t.Fatal(err)
		}
		go r.readStdio()
	} else {
		tr, client, err := NewMemoryTransport(r.srv.rt, opts)
		if err != nil {
			t.Fatal(err)
		}
		r.tr = tr
		go r.pumpMemory(client)
		go r.readMemory(client)
	}
	go func() { r.served <- r.tr.Serve(context.Background()) }()
	<-r.tr.started // Notify fails before

	for actions := 0; actions < seqMaxActions && !r.ended && r.pos < len(r.in); actions++ {
		r.step()
	}
	r.end()
	r.finish(baseline)
}

// pumpMemory hands the queued messages to the in-memory client, then ends
// its input.
func (r *seqRun) pumpMemory(client *MemoryClient) {
	for {
		msg, ok, _ := r.input.pop()
		if !ok {
			if err := client.Close(); err != nil {
				r.failf("MemoryClient.Close = %v", err)
			}
			return
		}
		if err := client.Send(context.Background(), msg); err != nil {
			r.failf("MemoryClient.Send = %v", err)
		}
	}
}

func (r *seqRun) readMemory(client *MemoryClient) {
	defer close(r.read)
	for {
		msg, err := client.Receive(context.Background())
		if err == io.EOF {
			return
		}
		if err != nil {
			r.failf("MemoryClient.Receive = %v", err)
			return
		}
		if bytes.IndexByte(msg, '\n') >= 0 {
			r.failf("message %q holds a newline", msg)
		}
		r.onFrame(msg)
	}
}

// readStdio takes each write of the server's and checks that it carries
// whole frames, each ending in one newline.
func (r *seqRun) readStdio() {
	defer close(r.read)
	for {
		w, ok, _ := r.output.pop()
		if !ok {
			return
		}
		if len(w) == 0 || w[len(w)-1] != '\n' {
			r.failf("a write of %d bytes does not end a frame: %q", len(w), w)
		}
		for line := range bytes.Lines(w) {
			r.onFrame(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
}

// send queues one message, as a line on stdio.
func (r *seqRun) send(msg []byte) int {
	index := r.sends
	r.sends++
	r.log = append(r.log, string(msg))
	if r.stdio {
		line := msg
		if r.cfg.bom {
			line = append([]byte(utf8BOM), line...)
		}
		if r.cfg.crlf {
			line = append(line, '\r')
		}
		msg = append(line, '\n')
	}
	r.input.push(msg)
	return index
}

// end releases every sleeper the sequence has not cancelled, so that every
// admitted request can finish, and ends the input: on stdio its last line
// may have no newline, and it may end with a read error.
func (r *seqRun) end() {
	r.mu.Lock()
	sleepers := r.sleepers
	r.mu.Unlock()
	if len(sleepers) > 0 {
		r.barrier()
	}
	for _, c := range sleepers {
		if c.expect != expectNone {
			r.releaseSleeper(c)
		}
	}
	var err error = io.EOF
	r.mu.Lock()
	switch {
	case r.cfg.readError:
		err = errors.New("seq: read failed")
		r.wantNull["parse"]++ // -32700 "Failed to read stdio input"
	case r.cfg.openEnd:
		wire, id := r.freshID()
		r.register(&seqCall{method: "ping", id: id})
		line := requestLine(wire, "ping", "")
		r.log = append(r.log, string(line)+" (no newline)")
		r.sends++
		r.input.push(line)
	}
	r.mu.Unlock()
	r.input.end(err)
}

// barrier returns once the connection has read every message sent before:
// it calls the inline echo (answered as soon as it is read, or as soon as
// the initialize it is held behind finishes) and waits for the answer. A
// sleeper is released only after one, so that it holds its id for every
// message sent while the client knew it in flight.
func (r *seqRun) barrier() {
	r.mu.Lock()
	r.tokens++
	wire, id := r.freshID()
	c := &seqCall{method: "tools/call", tool: "echo", token: r.tokens, id: id, era2026: true, answered: make(chan struct{})}
	r.register(c)
	r.send(requestLine(wire, "tools/call", withMember(fmt.Sprintf(`{"name":"echo","arguments":{"t":%d}}`, c.token), seqMeta2026(`{}`, 0))))
	r.mu.Unlock()
	select {
	case <-c.answered:
	case <-time.After(safetyTimeout):
		r.failf("the barrier %s was not answered", id)
	}
}

func (r *seqRun) releaseSleeper(c *seqCall) {
	if c.released {
		return
	}
	c.released = true
	r.srv.mu.Lock()
	close(r.srv.release[c.token])
	r.srv.mu.Unlock()
}

const seqAppNotification = "notifications/seq/app"

// step decodes and performs the next action of the sequence.
func (r *seqRun) step() {
	switch r.pick(16) {
	case 0, 1, 2, 3:
		r.callTool()
	case 4, 5:
		r.callMethod()
	case 6:
		r.initialize()
	case 7, 8:
		r.cancel()
	case 9:
		r.releaseOne()
	case 10:
		r.answerAsk()
	case 11:
		r.notification()
	case 12:
		r.malformed()
	case 13:
		r.oversized()
	case 14:
		r.batch()
	case 15:
		r.other()
	}
}

// seqPoolIDs are the ids sequences reuse, as sent and in canonical form;
// some spell the same id two ways.
var seqPoolIDs = []struct{ wire, canonical string }{
	{`1`, `1`}, {`"a"`, `"a"`}, {`"\u0061"`, `"a"`}, {`2`, `2`}, {`-0`, `0`}, {`0`, `0`},
	{`"é"`, `"\u00e9"`}, {`9223372036854775807`, `9223372036854775807`},
}

// seqUntrackedIDs are ids the connection does not track: it answers their
// requests with id null.
var seqUntrackedIDs = []string{`1.5`, `true`, `null`, `{}`, `[]`, `1e2`, `9223372036854775808`, `"` + strings.Repeat("x", 257) + `"`}

func (r *seqRun) idState(id string) *seqIDState {
	st := r.ids[id]
	if st == nil {
		st = &seqIDState{retiredAt: -1}
		r.ids[id] = st
	}
	return st
}

// freshID returns an id never used before.
func (r *seqRun) freshID() (wire, id string) {
	r.fresh++
	id = `"f` + strconv.Itoa(r.fresh) + `"`
	return id, id
}

func isFreshID(id string) bool { return strings.HasPrefix(id, `"f`) }

// requestID returns the id of a new request, with r.mu held: a pool id the
// input chooses when the client knows it is free, or knows it is in flight
// (dup: the connection refuses the request as a duplicate); else, and when
// the input asks for one, a fresh id.
func (r *seqRun) requestID() (wire, id string, dup bool) {
	b := r.next()
	if b < 48 {
		wire, id = r.freshID()
		return wire, id, false
	}
	p := seqPoolIDs[int(b)%len(seqPoolIDs)]
	st := r.idState(p.canonical)
	switch {
	case st.call != nil && st.call.answer == nil && st.call.blocked:
		return p.wire, p.canonical, true
	case st.call != nil && st.call.answer == nil, st.racy != nil && r.highWater <= st.retiredAt, st.admitting():
		wire, id = r.freshID()
		return wire, id, false
	}
	return p.wire, p.canonical, false
}

// register records c, whose message is sent next, with r.mu held.
func (r *seqRun) register(c *seqCall) {
	c.index = r.sends
	r.calls = append(r.calls, c)
	if c.token != 0 {
		r.byToken[c.token] = c
	}
	if !c.dup {
		st := r.idState(c.id)
		st.call = c
	}
}

// meta2026 returns a valid 2026-07-28 _meta member, with a progress token
// and a log level when asked.
func seqMeta2026(caps string, progressToken int) string {
	m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
	if progressToken != 0 {
		m += `,"progressToken":` + strconv.Itoa(progressToken) + `,"io.modelcontextprotocol/logLevel":"debug"`
	}
	return m + "}"
}

// withMember adds member to params, a JSON object's text ("" for none).
func withMember(params, member string) string {
	if member == "" {
		return params
	}
	if params == "" || params == "{}" {
		return "{" + member + "}"
	}
	return "{" + member + "," + params[1:]
}

// requestLine returns a request's line; params "" leaves them out.
func requestLine(id, method, params string) []byte {
	b := `{"jsonrpc":"2.0","id":` + id + `,"method":` + strconv.Quote(method)
	if params != "" {
		b += `,"params":` + params
	}
	return []byte(b + "}")
}

var seqTools = []string{"echo", "instant", "sleep", "fail", "panic", "ask", "progress", "typed"}

// callTool calls one of the server's tools, in the legacy era or with a 2026
// _meta, with valid arguments or odd ones.
func (r *seqRun) callTool() {
	tool := seqTools[r.pick(len(seqTools))]
	variant := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	if (tool == "sleep" || tool == "ask") && r.blockers >= r.maxBlockers() {
		tool = "instant"
	}
	r.tokens++
	n := r.tokens
	c := &seqCall{method: "tools/call", tool: tool, token: n, era2026: variant&1 != 0}
	args := fmt.Sprintf(`{"t":%d}`, n)
	switch tool {
	case "ask":
		args = fmt.Sprintf(`{"t":%d,"m":%q}`, n, []string{"elicit", "sample", "roots"}[variant>>1%3])
	case "progress":
		args = fmt.Sprintf(`{"t":%d,"k":%d}`, n, 1+variant>>1%4)
	case "typed":
		args = fmt.Sprintf(`{"t":%d,"s":"x"}`, n)
	}
	switch variant >> 5 {
	case 5:
		args, c.token = `[1]`, 0
	case 6:
		args, c.token = `{"t":"x"}`, 0
	case 7:
		args, c.token = "", 0
	}
	params := `{"name":"` + tool + `"}`
	if args != "" {
		params = `{"name":"` + tool + `","arguments":` + args + `}`
	}
	progressToken := 0
	if tool == "progress" && c.token != 0 {
		progressToken = n
	}
	switch {
	case c.era2026:
		caps := []string{`{}`, `{"elicitation":{},"sampling":{},"roots":{}}`}[variant>>3&1]
		params = withMember(params, seqMeta2026(caps, progressToken))
	case progressToken != 0:
		params = withMember(params, `"_meta":{"progressToken":`+strconv.Itoa(n)+`}`)
		c.plain = true
	default:
		c.plain = true
	}
	wire, id, dup := r.requestID()
	c.id, c.dup = id, dup
	if tool == "sleep" || tool == "ask" {
		r.blockers++
	}
	if tool == "sleep" && c.token != 0 && !dup {
		c.sleeper = true
		r.sleepers = append(r.sleepers, c)
		r.srv.mu.Lock()
		r.srv.release[n] = make(chan struct{})
		r.srv.mu.Unlock()
		// Certainly admitted and running until released: stateless, or
		// in a connection whose version the client knows.
		c.blocked = !r.cfg.overload && (c.era2026 || r.version != "" && r.initsOpen == 0)
	}
	if dup {
		c.token = 0 // refused before its tool sees it
	}
	r.register(c)
	r.send(requestLine(wire, "tools/call", params))
}

// maxBlockers bounds the calls that may hold a worker until the test acts
// (sleepers, questions to the client), so that one worker is always free:
// an initialize then always runs, and what is held behind it is read.
func (r *seqRun) maxBlockers() int {
	if r.cfg.overload {
		return 1
	}
	return seqMaxConcurrency - 1
}

// seqMethods are the other methods sequences call, each with params that
// are valid, odd or invalid.
var seqMethods = []struct {
	method string
	params []string
}{
	{"ping", []string{``, `{}`}},
	{"tools/list", []string{`{}`, `{"cursor":"x"}`, `{"cursor":5}`}},
	{"resources/list", []string{`{}`}},
	{"resources/templates/list", []string{`{}`}},
	{"resources/read", []string{`{"uri":"seq://r"}`, `{"uri":"seq://item/7"}`, `{"uri":"seq://none"}`, `{"uri":5}`, `{}`}},
	{"resources/subscribe", []string{`{"uri":"seq://r"}`, `{"uri":"seq://item/1"}`, `{"uri":"seq://item/2"}`}},
	{"resources/unsubscribe", []string{`{"uri":"seq://r"}`, `{"uri":"seq://item/1"}`}},
	{"prompts/list", []string{`{}`}},
	{"prompts/get", []string{`{"name":"p","arguments":{"a":"x"}}`, `{"name":"p"}`, `{"name":"nope"}`, `{"name":"p","arguments":{"a":5}}`}},
	{"completion/complete", []string{`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"x"}}`, `{"ref":{}}`}},
	{"logging/setLevel", []string{`{"level":"debug"}`, `{"level":"emergency"}`, `{"level":"loud"}`}},
	{"server/discover", []string{`{}`}},
	{"subscriptions/listen", []string{`{"notifications":{"toolsListChanged":true}}`, `{"notifications":{"resourceSubscriptions":["seq://r"]}}`, `{}`}},
	{"tools/call", []string{`{}`, `{"name":"nope"}`, `{"name":5}`}},
	{"unknown/method", []string{`{}`}},
	{"notifications/initialized", []string{`{}`}},
}

// callMethod sends a request of another method: valid, with odd params, or
// with a broken envelope (params not an object, no jsonrpc, a method that is
// not a string), each answered once with its id.
func (r *seqRun) callMethod() {
	m := seqMethods[r.pick(len(seqMethods))]
	params := m.params[r.pick(len(m.params))]
	variant := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &seqCall{method: m.method, era2026: variant&1 != 0}
	if c.era2026 {
		params = withMember(params, seqMeta2026(`{}`, 0))
		c.listen = m.method == "subscriptions/listen"
	} else {
		c.plain = m.method != "ping"
	}
	wire, id, dup := r.requestID()
	c.id, c.dup = id, dup
	line := requestLine(wire, m.method, params)
	switch variant >> 4 {
	case 12:
		line = requestLine(wire, m.method, []string{`[]`, `"x"`, `5`}[variant>>1%3])
		c.plain = false
	case 13:
		line = []byte(`{"id":` + wire + `,"method":"` + m.method + `"}`)
		c.plain = false
	case 14:
		line = []byte(`{"jsonrpc":"2.0","id":` + wire + `,"method":5}`)
		c.plain, c.listen = false, false
	}
	if c.listen {
		c.expect = expectAtMostOne
	}
	r.register(c)
	r.send(line)
}

var seqVersions = []string{ProtocolVersion20241105, ProtocolVersion20250326, ProtocolVersion20250618, ProtocolVersion20251125, ProtocolVersion20260728, "1999-01-01"}

// initialize sends an initialize, always with a fresh id: valid, proposing
// some version, or without its clientInfo.
func (r *seqRun) initialize() {
	version := seqVersions[r.pick(len(seqVersions))]
	variant := r.next()
	caps := []string{`{}`, `{"elicitation":{},"sampling":{},"roots":{}}`}[variant&1]
	params := `{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"seq","version":"1"}}`
	if variant&6 == 6 {
		params = `{"protocolVersion":"` + version + `","capabilities":{}}`
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	wire, id := r.freshID()
	c := &seqCall{method: "initialize", id: id}
	r.inits = append(r.inits, c)
	r.initsOpen++
	r.register(c)
	r.send(requestLine(wire, "initialize", params))
}

// cancel sends notifications/cancelled for a pool id, a recent fresh id or
// an unknown one, well-formed or not, and records what it does: a request
// certainly in flight is never answered; one whose answer may be on its way
// is answered at most once, and its id is not reused until an answer to a
// later message shows that the cancellation was read.
func (r *seqRun) cancel() {
	b := r.next()
	form := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	wire, id := `"zz"`, `"zz"`
	switch {
	case b < 160:
		p := seqPoolIDs[int(b)%len(seqPoolIDs)]
		wire, id = p.wire, p.canonical
	case r.fresh > 0 && b < 250:
		f := max(1, r.fresh-int(b)%4)
		wire = `"f` + strconv.Itoa(f) + `"`
		id = wire
	}
	if st := r.ids[id]; st != nil && (st.admitting() || st.call != nil && len(batchesOf(r.heldDups(st.call))) > 1) {
		// Not named: see seqIDState.admissible; duplicates in several
		// held batches could be admitted in any of them.
		wire, id = `"zz"`, `"zz"`
	}
	params := `{"requestId":` + wire + `}`
	valid := true
	switch form % 8 {
	case 1:
		params = `{"requestId":` + wire + `,"reason":"seq"}`
	case 2:
		params, valid = `{"requestId":`+wire+`,"reason":5}`, false
	case 3:
		params, valid = `{"reason":"seq"}`, false
	case 4:
		params, valid = `{"requestId":1.5}`, false
	}
	index := r.sends
	if st := r.ids[id]; valid && st != nil && st.call != nil && st.call.answer == nil && st.call.method != "initialize" {
		c := st.call
		st.call = nil
		if c.blocked {
			c.expect = expectNone
			st.admissible = r.heldDups(c)
		} else {
			c.expect = expectAtMostOne
			st.racy, st.retiredAt = c, index
		}
	}
	r.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":` + params + `}`))
}

// heldDups returns the duplicates of c's id, sent while c was blocked, in
// batches that may still be held behind an initialize.
func (r *seqRun) heldDups(c *seqCall) []*seqCall {
	var dups []*seqCall
	if !c.blocked || c.answer != nil {
		return nil
	}
	for _, m := range r.calls {
		if m.dup && m.batch != nil && m.id == c.id && m.index > c.index && r.mayBeHeld(m.batch.index) {
			dups = append(dups, m)
		}
	}
	return dups
}

// batchesOf returns the batches of calls, each once.
func batchesOf(calls []*seqCall) []*seqBatch {
	var batches []*seqBatch
	for _, c := range calls {
		if !slices.Contains(batches, c.batch) {
			batches = append(batches, c.batch)
		}
	}
	return batches
}

// mayBeHeld reports whether the message sent at index may still be held
// behind an initialize: one sent before it is not answered yet.
func (r *seqRun) mayBeHeld(index int) bool {
	return slices.ContainsFunc(r.inits, func(c *seqCall) bool { return c.index < index && c.answer == nil })
}

// releaseOne releases a sleeper the sequence has not cancelled, once the
// connection has read what was sent before (barrier).
func (r *seqRun) releaseOne() {
	b := r.pick(256)
	r.mu.Lock()
	var open []*seqCall
	for _, c := range r.sleepers {
		if !c.released && c.expect != expectNone {
			open = append(open, c)
		}
	}
	r.mu.Unlock()
	if len(open) == 0 {
		return
	}
	r.barrier()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := open[b%len(open)]
	c.blocked = false
	r.releaseSleeper(c)
}

// answerAsk answers one of the server's requests (or, when none waits, an
// unknown id): with a result of the method's shape, an error, or a result of
// the wrong shape; some answers are sent twice.
func (r *seqRun) answerAsk() {
	b := r.pick(256)
	kind := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	id, method := json.RawMessage(`"mcpstdio-999999"`), ""
	if len(r.asks) > 0 {
		i := b % len(r.asks)
		var ask struct {
			ID     json.RawMessage
			Method string
		}
		json.Unmarshal(r.asks[i], &ask)
		id, method = ask.ID, ask.Method
		r.asks = append(r.asks[:i], r.asks[i+1:]...)
	}
	result := map[string]string{
		MethodElicit:        `{"action":"decline"}`,
		MethodCreateMessage: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`,
		MethodListRoots:     `{"roots":[]}`,
	}[method]
	body := `"result":` + result
	switch {
	case result == "" || kind%4 == 1:
		body = `"result":{}`
	case kind%4 == 2:
		body = `"error":{"code":-1,"message":"no"}`
	}
	line := []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,` + body + `}`)
	r.send(line)
	if kind&8 != 0 {
		r.send(line)
	}
}

// notification sends a notification the connection never answers, well
// formed or not.
func (r *seqRun) notification() {
	lines := []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/seq/unknown","params":{"x":[1,2]}}`,
		`{"jsonrpc":"1.0","method":"notifications/initialized"}`,
		`{"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
	}
	line := lines[r.pick(len(lines))]
	r.mu.Lock()
	defer r.mu.Unlock()
	r.send([]byte(line))
}

// malformed sends a line the connection answers with id null (a parse
// error, an invalid request, an untracked id) or not at all (a response).
func (r *seqRun) malformed() {
	kind := r.pick(13)
	variant := int(r.next())
	r.mu.Lock()
	defer r.mu.Unlock()
	class := "parse"
	var line string
	switch kind {
	case 0:
		line = `{"jsonrpc":"2.0","id":1,"method":"pi`
	case 1:
		line = `{"jsonrpc":"2.0","method":"x"} {}`
	case 2:
		line = `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`
	case 3:
		line = "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"
	case 4:
		line = strings.Repeat("[", 600) + strings.Repeat("]", 600)
	case 5:
		line = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":` + strings.Repeat("1", 65) + `}}`
	case 6:
		line = []string{"", "  ", "\t"}[variant%3]
	case 7:
		var garbage []byte
		for range variant % 24 {
			if c := r.next(); c != '\n' && c != '\r' {
				garbage = append(garbage, c)
			}
		}
		line = "}" + string(garbage)
	case 8:
		line, class = []string{`5`, `"x"`, `true`, `null`, `-1.5e3`}[variant%5], "invalid"
	case 9:
		line, class = `{"jsonrpc":"2.0","id":`+seqUntrackedIDs[variant%len(seqUntrackedIDs)]+`,"method":"ping"}`, "invalid"
	case 10:
		line, class = `{"jsonrpc":"2.0","method":5}`, "invalid"
	case 11:
		line, class = `{"jsonrpc":"2.0"}`, "invalid"
	case 12:
		line, class = []string{`{"jsonrpc":"2.0","id":5,"result":{}}`, `{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}`, `{"jsonrpc":"2.0","id":"mcpstdio-1","result":{}}`}[variant%3], ""
	}
	if class != "" {
		r.wantNull[class]++
	}
	r.send([]byte(line))
}

// oversized sends a line over the line limit (answered once, id null), or
// one that just fits.
func (r *seqRun) oversized() {
	variant := r.next()
	r.mu.Lock()
	defer r.mu.Unlock()
	// The line's bytes as the reader counts them: its decorations and its
	// newline (which the in-memory client counts as if it were there).
	over := 1
	if r.stdio && r.cfg.crlf {
		over++
	}
	if r.stdio && r.cfg.bom {
		over += len(utf8BOM)
	}
	if variant&1 == 0 {
		wire, id := r.freshID()
		c := &seqCall{method: "ping", id: id}
		line := requestLine(wire, "ping", `{"pad":""}`)
		pad := seqMaxLine - over - len(line)
		r.register(c)
		r.send(requestLine(wire, "ping", `{"pad":"`+strings.Repeat("x", pad)+`"}`))
		return
	}
	pad := seqMaxLine - over - len(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""}}`) + 1 + int(variant>>1)*40
	r.wantNull["toolong"]++
	r.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", pad) + `"}}`))
}

// batch sends a JSON array: a batch in a connection of 2025-03-26, else one
// invalid request. Its requests have fresh ids, or a pool id certainly in
// flight (a duplicate); it holds no initialize and no cancellation.
func (r *seqRun) batch() {
	members := r.pick(5)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &seqBatch{index: r.sends, empty: members == 0}
	var parts []string
	for range members {
		kind := r.pick(9)
		switch kind {
		case 0, 1, 2:
			tool := []string{"echo", "instant", "sleep", "typed"}[kind]
			if kind == 2 && r.next()&1 == 0 {
				tool = "typed"
			}
			if tool == "sleep" && r.blockers >= r.maxBlockers() {
				tool = "instant"
			}
			r.tokens++
			n := r.tokens
			wire, id := r.freshID()
			c := &seqCall{method: "tools/call", tool: tool, token: n, id: id, batch: b, plain: true}
			if tool == "sleep" {
				r.blockers++
				c.sleeper = true
				r.sleepers = append(r.sleepers, c)
				r.srv.mu.Lock()
				r.srv.release[n] = make(chan struct{})
				r.srv.mu.Unlock()
			}
			r.register(c)
			parts = append(parts, string(requestLine(wire, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":{"t":%d}}`, tool, n))))
		case 3:
			wire, id := r.freshID()
			r.register(&seqCall{method: "ping", id: id, batch: b})
			parts = append(parts, string(requestLine(wire, "ping", "")))
		case 4:
			p := seqPoolIDs[r.pick(len(seqPoolIDs))]
			if st := r.ids[p.canonical]; st != nil && st.call != nil && st.call.answer == nil && st.call.blocked {
				r.register(&seqCall{method: "ping", id: p.canonical, batch: b, dup: true})
				parts = append(parts, string(requestLine(p.wire, "ping", "")))
			}
		case 5:
			parts = append(parts, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		case 6:
			parts = append(parts, `{"jsonrpc":"2.0","id":"mcpstdio-999999","result":{}}`)
		case 7:
			b.untracked++
			parts = append(parts, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`)
		case 8:
			b.parseNull++
			parts = append(parts, []string{`5`, `[]`, `"x"`}[r.pick(3)])
		}
	}
	b.empty = len(parts) == 0
	r.batches = append(r.batches, b)
	r.send([]byte("[" + strings.Join(parts, ",") + "]"))
}

// other calls the transport or the runtime from the application's side
// (Notify, a list change, a resource update), or ends the input.
func (r *seqRun) other() {
	switch r.pick(4) {
	case 0:
		ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
		defer cancel()
		if err := r.tr.Notify(ctx, seqAppNotification, map[string]int{"n": r.sends}); err != nil {
			r.failf("Notify = %v", err)
			return
		}
		r.mu.Lock()
		r.notified++
		r.mu.Unlock()
	case 1:
		r.srv.rt.AnnounceListChanged(ToolsChanged)
	case 2:
		r.srv.rt.NotifyResourceUpdated(seqResourceURI)
	case 3:
		r.ended = true
	}
}

// seqDocumentedCodes are the error codes a connection answers with: the
// JSON-RPC ones and MCP's (docs/reference/errors.md).
var seqDocumentedCodes = map[int]bool{
	CodeParseError: true, CodeInvalidRequest: true, CodeMethodNotFound: true, CodeInvalidParams: true,
	CodeInternalError: true, CodeResourceNotFound: true, CodeMissingCapability: true, CodeUnsupportedVersion: true,
	CodeAccessDenied: true, CodeHeaderMismatch: true,
}

// seqNotifications are the methods of the notifications a sequence's
// connection may send.
var seqNotifications = map[string]bool{
	"notifications/progress": true, "notifications/message": true, "notifications/tools/list_changed": true,
	"notifications/resources/updated": true, "notifications/subscriptions/acknowledged": true, seqAppNotification: true,
}

// onFrame checks one frame the server wrote and records what it answers.
func (r *seqRun) onFrame(frame []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos := r.frames
	r.frames++
	for _, c := range frame {
		if c >= 0x80 {
			r.failures = append(r.failures, fmt.Sprintf("frame %d is not pure ASCII: %q", pos, frame))
			return
		}
	}
	if !json.Valid(frame) {
		r.failures = append(r.failures, fmt.Sprintf("frame %d is not JSON: %q", pos, frame))
		return
	}
	if frame[0] == '[' {
		r.arrays++
		var members []json.RawMessage
		json.Unmarshal(frame, &members)
		if len(members) == 0 {
			r.failures = append(r.failures, fmt.Sprintf("frame %d is an empty array", pos))
		}
		var batch *seqBatch
		for _, m := range members {
			a := r.onResponse(pos, m, true)
			if a == nil || a.call == nil {
				continue
			}
			if a.call.batch == nil || batch != nil && a.call.batch != batch {
				r.failures = append(r.failures, fmt.Sprintf("array frame %d answers requests of other batches, or none: %s", pos, frame))
			}
			batch = a.call.batch
		}
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(frame, &obj); err != nil {
		r.failures = append(r.failures, fmt.Sprintf("frame %d is neither an object nor an array: %q", pos, frame))
		return
	}
	if _, ok := obj["method"]; ok {
		r.onServerMessage(pos, frame, obj)
		return
	}
	r.onResponse(pos, frame, false)
}

// onServerMessage checks a notification or a request of the server's.
func (r *seqRun) onServerMessage(pos int, frame []byte, obj map[string]json.RawMessage) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(frame, &m); err != nil || m.JSONRPC != "2.0" || len(obj) > 4 {
		r.failures = append(r.failures, fmt.Sprintf("server message %d malformed: %s", pos, frame))
		return
	}
	token := seqTokenOf(m.Params)
	if m.ID != nil {
		switch {
		case m.Method != MethodElicit && m.Method != MethodCreateMessage && m.Method != MethodListRoots,
			!bytes.HasPrefix(m.ID, []byte(`"mcpstdio-`)):
			r.failures = append(r.failures, fmt.Sprintf("server request %d: %s", pos, frame))
		}
		r.asks = append(r.asks, json.RawMessage(`{"ID":`+string(m.ID)+`,"Method":"`+m.Method+`"}`))
	} else if !seqNotifications[m.Method] {
		r.failures = append(r.failures, fmt.Sprintf("notification %d of an unexpected method: %s", pos, frame))
	}
	if m.Method == seqAppNotification {
		r.notified--
	}
	if token != 0 {
		r.notes[token] = append(r.notes[token], pos)
		if c := r.byToken[token]; c != nil && c.answer != nil {
			r.failures = append(r.failures, fmt.Sprintf("frame %d of the request of token %d follows its answer (frame %d): %s", pos, token, c.answer.pos, frame))
		}
	}
}

// seqTokenOf finds a call's token in a message's params or a result: "t=N"
// in a text (a progress message, a question, a content block), {"t":N}
// (log data, structured content).
func seqTokenOf(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var v struct {
		ProgressToken     json.RawMessage `json:"progressToken"`
		Message           string          `json:"message"`
		Data              struct{ T int } `json:"data"`
		StructuredContent struct{ T int } `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(raw, &v)
	texts := []string{v.Message}
	for _, c := range v.Content {
		texts = append(texts, c.Text)
	}
	for _, m := range v.Messages {
		texts = append(texts, m.Content.Text)
	}
	for _, text := range texts {
		if rest, ok := strings.CutPrefix(text, "t="); ok {
			end := strings.IndexFunc(rest, func(c rune) bool { return c < '0' || c > '9' })
			if end < 0 {
				end = len(rest)
			}
			if n, err := strconv.Atoi(rest[:end]); err == nil {
				return n
			}
		}
	}
	if n, err := strconv.Atoi(string(v.ProgressToken)); err == nil && n != 0 {
		return n
	}
	return max(v.Data.T, v.StructuredContent.T)
}

// onResponse checks a response and attributes it to the call it answers.
func (r *seqRun) onResponse(pos int, raw []byte, inArray bool) *seqAnswer {
	var m struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id"`
		Result  map[string]json.RawMessage `json:"result"`
		Error   map[string]json.RawMessage `json:"error"`
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || json.Unmarshal(raw, &keys) != nil || m.JSONRPC != "2.0" || m.ID == nil ||
		(m.Result == nil) == (m.Error == nil) || len(keys) != 3 {
		r.failures = append(r.failures, fmt.Sprintf("frame %d is not a JSON-RPC response: %s", pos, raw))
		return nil
	}
	a := &seqAnswer{result: m.Result, inArray: inArray, pos: pos}
	if string(m.ID) != "null" {
		a.id = string(m.ID)
	}
	if m.Error != nil {
		var e RPCError
		if json.Unmarshal(memberOf(raw, "error"), &e) != nil || !seqDocumentedCodes[e.Code] || e.Message == "" || len(m.Error) > 3 {
			r.failures = append(r.failures, fmt.Sprintf("frame %d: an error outside the documented set: %s", pos, raw))
		}
		a.err = &e
	}
	r.answers = append(r.answers, a)
	switch {
	case a.id == "":
		class := "invalid"
		switch {
		case a.err == nil:
			r.failures = append(r.failures, fmt.Sprintf("frame %d: a result with id null: %s", pos, raw))
		case a.err.Code == CodeParseError:
			class = "parse"
		case a.err.Code == CodeInvalidRequest && strings.HasPrefix(a.err.Message, "Message exceeds"):
			class = "toolong"
		case a.err.Message == errCapacity.Message:
			class = "capacity"
		case a.err.Code != CodeInvalidRequest:
			r.failures = append(r.failures, fmt.Sprintf("frame %d: id null with code %d: %s", pos, a.err.Code, raw))
		}
		r.nullCount[class]++
		return a
	case a.err != nil && a.err.Message == errDuplicateID.Message:
		r.nullCount["dup "+a.id]++
		return a
	}
	st := r.ids[a.id]
	var c *seqCall
	switch {
	case st == nil:
	case st.call != nil && st.call.answer == nil:
		c = st.call
	case st.racy != nil && st.racy.answer == nil:
		c = st.racy
		if c.batch == nil && r.highWater > st.retiredAt {
			r.failures = append(r.failures, fmt.Sprintf("frame %d answers id %s, cancelled by message %d, after the answer to message %d: %s", pos, a.id, st.retiredAt, r.highWater, raw))
		}
	case st.admitting():
		i := slices.IndexFunc(st.admissible, func(c *seqCall) bool { return c.answer == nil })
		c = st.admissible[i]
	}
	if c == nil {
		r.failures = append(r.failures, fmt.Sprintf("frame %d answers id %s, which no request awaits (answered already, cancelled, or never sent): %s", pos, a.id, raw))
		return a
	}
	a.call, c.answer = c, a
	if c.answered != nil {
		close(c.answered)
	}
	if n := seqTokenOf(memberOf(raw, "result")); n != 0 && n != c.token {
		r.failures = append(r.failures, fmt.Sprintf("frame %d answers id %s with token %d, but the request awaiting it has token %d: %s", pos, a.id, n, c.token, raw))
	}
	if c.token != 0 || isFreshID(c.id) {
		r.highWater = max(r.highWater, c.index)
	}
	if c.method == "initialize" {
		r.initsOpen--
		var v struct{ ProtocolVersion string }
		if a.err == nil && json.Unmarshal(memberOf(raw, "result"), &v) == nil {
			r.version = v.ProtocolVersion
		}
	}
	return a
}

// memberOf returns the member key of the JSON object raw (nil when absent).
func memberOf(raw []byte, key string) json.RawMessage {
	var obj map[string]json.RawMessage
	json.Unmarshal(raw, &obj)
	return obj[key]
}

// finish waits for the connection to end and checks every invariant.
func (r *seqRun) finish(baseline int) {
	t := r.t
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("config %+v; the %d messages sent:", r.cfg, len(r.log))
			for i, m := range r.log {
				if len(m) > 300 {
					m = m[:300] + "..."
				}
				t.Logf("%3d %s", i, m)
			}
		}
	}()
	select {
	case err := <-r.served:
		if err != nil {
			t.Errorf("Serve = %v, want nil at the end of input", err)
		}
	case <-time.After(safetyTimeout):
		t.Fatalf("Serve did not return after the end of input")
	}
	if r.stdio {
		r.output.end(io.EOF)
	}
	select {
	case <-r.read:
	case <-time.After(safetyTimeout):
		t.Fatalf("the client's reader did not end")
	}
	if !poll(func() bool {
		st := r.exec.Stats()
		return st.Running == 0 && st.Queued == 0 && st.InflightBytes == 0
	}) {
		t.Errorf("after Serve returned, the executor holds %+v", r.exec.Stats())
	}
	r.exec.Close()
	if n := r.tr.ListenStreams(); n != 0 {
		t.Errorf("%d listen streams open after Serve returned", n)
	}
	if !poll(func() bool { return runtime.NumGoroutine() <= baseline }) {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left, %d before the connection:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failures {
		t.Error(f)
	}
	r.checkAnswers()
}

// versionAt returns the version the connection had negotiated for a message
// sent at index: that of the last initialize sent before it that
// succeeded, "" when none did. (Messages that arrive while an initialize is
// in flight are held until its outcome, so they see it.)
func (r *seqRun) versionAt(index int) string {
	version := ""
	for _, c := range r.inits {
		if c.index >= index {
			break
		}
		if a := c.answer; a != nil && a.err == nil {
			var v struct{ ProtocolVersion string }
			json.Unmarshal(a.result["protocolVersion"], &v.ProtocolVersion)
			version = v.ProtocolVersion
		}
	}
	return version
}

// accepted reports whether b is served as a batch: it is not empty and the
// connection had negotiated 2025-03-26 when it arrived.
func (r *seqRun) accepted(b *seqBatch) bool {
	return !b.empty && acceptsBatches(r.versionAt(b.index))
}

// checkAnswers checks, once the connection has ended, that each request got
// the answers it must get, with r.mu held.
func (r *seqRun) checkAnswers() {
	t := r.t
	t.Helper()
	wantNull := maps.Clone(r.wantNull)
	wantDup := map[string]int{}
	for _, b := range r.batches {
		if r.accepted(b) {
			wantNull["invalid"] += b.untracked + b.parseNull
		} else {
			wantNull["invalid"]++
		}
	}
	answeredBatches := map[*seqBatch]bool{}
	for _, c := range r.calls {
		if c.batch != nil && !r.accepted(c.batch) {
			if c.answer != nil {
				t.Errorf("request %s (message %d) of a batch the connection refused is answered: %+v", c.id, c.index, c.answer)
			}
			continue
		}
		if c.dup && c.answer == nil { // an admissible one answered was admitted
			wantDup[c.id]++
			if c.batch != nil {
				answeredBatches[c.batch] = true // its refusal is in the batch's array
			}
			continue
		}
		a := c.answer
		switch {
		case c.expect == expectOne && a == nil && !c.listen:
			t.Errorf("request %s (message %d, %s %s) never answered", c.id, c.index, c.method, c.tool)
		case c.expect == expectNone && a != nil:
			t.Errorf("request %s (message %d, %s %s) answered although cancelled before it could finish", c.id, c.index, c.method, c.tool)
		}
		if a == nil {
			continue
		}
		if c.batch != nil {
			if !a.inArray {
				t.Errorf("batch member %s answered alone (frame %d)", c.id, a.pos)
			}
			answeredBatches[c.batch] = true
		} else if a.inArray {
			t.Errorf("request %s, not in a batch, answered in an array (frame %d)", c.id, a.pos)
		}
		version := r.versionAt(c.index)
		if c.token != 0 {
			for _, p := range r.notes[c.token] {
				if p > a.pos {
					t.Errorf("request %s: a notification (frame %d) follows its answer (frame %d)", c.id, p, a.pos)
				}
			}
		}
		switch {
		case c.plain && version == "" && !c.era2026 && c.method != "initialize" && c.method != "ping":
			if a.err == nil || a.err.Code != CodeInvalidParams && a.err.Message != errCapacity.Message {
				t.Errorf("request %s (message %d, %s) before any initialize answered %+v %s, want -32602", c.id, c.index, c.method, a.err, mapKeys(a.result))
			}
		case a.result == nil:
		case c.era2026 && a.result["resultType"] == nil:
			t.Errorf("2026-07-28 request %s (message %d) answered without resultType: %s", c.id, c.index, mapKeys(a.result))
		case !c.era2026 && a.result["resultType"] != nil:
			t.Errorf("request %s (message %d) in %q answered with a resultType", c.id, c.index, version)
		case c.tool == "typed" && c.token != 0 && !c.era2026 && (a.result["structuredContent"] != nil) != (version >= ProtocolVersion20250618):
			t.Errorf("typed tool's answer %s in %s: structuredContent %s", c.id, version, a.result["structuredContent"])
		}
	}
	for id, n := range wantDup {
		if got := r.nullCount["dup "+id]; got != n {
			t.Errorf("id %s: %d duplicate refusals, want %d", id, got, n)
		}
	}
	for key, n := range r.nullCount {
		if id, ok := strings.CutPrefix(key, "dup "); ok && wantDup[id] != n {
			t.Errorf("id %s: %d duplicate refusals, want %d", id, n, wantDup[id])
		}
	}
	got := r.nullCount
	if got["parse"] != wantNull["parse"] || got["toolong"] != wantNull["toolong"] || got["invalid"]+got["capacity"] != wantNull["invalid"] ||
		!r.cfg.overload && got["capacity"] != 0 {
		t.Errorf("answers with id null: %v, want parse %d, toolong %d, invalid (or capacity) %d", got, wantNull["parse"], wantNull["toolong"], wantNull["invalid"])
	}
	wantArrays := 0
	for _, b := range r.batches {
		if r.accepted(b) && (answeredBatches[b] || b.untracked+b.parseNull > 0) {
			wantArrays++
		}
	}
	if r.arrays != wantArrays {
		t.Errorf("%d array frames, want one for each of the %d batches with an answer", r.arrays, wantArrays)
	}
	if r.notified != 0 {
		t.Errorf("%d application notifications returned nil without being written (negative: written more often)", r.notified)
	}
}

func mapKeys(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }
