package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// startGated serves the harness's testDispatcher with its initialize gated
// (see testDispatcher); the gate is opened at cleanup if the test did not
// open it.
func startGated(t *testing.T, opts Options) (*harness, *testDispatcher) {
	t.Helper()
	h := startHarness(t, opts)
	// Set before any line is sent: a worker reads it only after the line
	// that reaches it went through the harness's channels.
	h.d.initGate = make(chan struct{})
	t.Cleanup(func() {
		if !isClosed(h.d.initGate) {
			close(h.d.initGate)
		}
	})
	return h, h.d
}

func sessionLine(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"session"}`
}

// sessionAnswer is the answer to sessionLine(id) dispatched after an
// initialize that succeeded (header set) or not.
func sessionAnswer(id string, initialized bool) string {
	if initialized {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"header":{"mcp-protocol-version":"2025-11-25"},"version":"2025-11-25"}}` + "\n"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"header":null,"version":""}}` + "\n"
}

// Messages that arrive while an initialize is in flight are held, in order,
// and dispatched with what its outcome recorded: the session and header
// after a success, none after a failure. A held id counts as in flight; a
// held request can be cancelled and is then never answered; cancellations,
// client responses and lines answered inline are not held.
func TestMessagesBehindInitializeAreHeldUntilItFinishes(t *testing.T) {
	tests := []struct {
		name       string
		params     string
		initAnswer string
		succeeds   bool
	}{
		{"initialize succeeds", `{"protocolVersion":"2025-11-25"}`, `{"jsonrpc":"2.0","id":0,"result":{}}` + "\n", true},
		{"initialize fails", `{"fail":true}`, `{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: refused"}}` + "\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One worker: what is released runs, and is answered, in order.
			h, d := startGated(t, Options{MaxConcurrency: 1})
			h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + tc.params + `}`)
			d.waitStarted(t)
			h.send(sessionLine("1"))
			h.send(sessionLine("2"))
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			h.send(sessionLine(`"3"`))
			h.expectAnswer(sessionLine("1"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Duplicate in-flight request id"}}`+"\n")
			h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
			h.send(`{"jsonrpc":"2.0","id":"srv-1","result":{}}`) // a client response: dropped, not held
			h.sync()                                             // answered at once: nothing held was answered before it

			close(d.initGate)
			h.expect(tc.initAnswer)
			h.expect(sessionAnswer("1", tc.succeeds))
			h.expect(sessionAnswer(`"3"`, tc.succeeds))
			if got := waitFor(t, d.notified, "notifications/initialized"); got != "notifications/initialized" {
				t.Fatalf("notified %q", got)
			}
			h.noFramesLeft() // the cancelled request 2 is never answered
		})
	}
}

// A held initialize holds what follows it in turn, and cannot be cancelled.
func TestHeldInitializeHoldsWhatFollowsIt(t *testing.T) {
	h, d := startGated(t, Options{MaxConcurrency: 1})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"fail":true}}`)
	d.waitStarted(t)
	h.send(sessionLine("1"))
	h.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.send(sessionLine("3"))
	h.sync()
	close(d.initGate)
	h.expect(`{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: refused"}}` + "\n")
	h.expect(sessionAnswer("1", false))
	h.expect(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")
	h.expect(sessionAnswer("3", true))
	h.noFramesLeft()
}

// At the end of input, held messages are still served once the initialize
// finishes, and Serve returns nil after answering them.
func TestHeldMessagesAreServedAfterEndOfInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, d := startGated(t, Options{MaxConcurrency: 1})
		h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
		h.send(sessionLine("1"))
		h.in.close(nil)
		synctest.Wait() // the end of input was handled while holding
		close(d.initGate)
		err, frames := h.wait()
		want := []string{`{"jsonrpc":"2.0","id":0,"result":{}}` + "\n", sessionAnswer("1", true)}
		if err != nil || strings.Join(frames, "") != strings.Join(want, "") {
			t.Fatalf("Serve = %v, frames %q; want nil, %q", err, frames, want)
		}
	})
}

// The held queue is bounded, by count and by bytes: once it is full the
// coordinator takes no more input (a line that it would answer at once
// stays unanswered) until the initialize finishes.
func TestHeldQueueFullStopsTakingInput(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"session","params":{"pad":"` + strings.Repeat("p", aheadBytes) + `"}}`
	tests := []struct {
		name  string
		lines []string
	}{
		{"linesBuffer messages", func() []string {
			var lines []string
			for i := range linesBuffer {
				lines = append(lines, sessionLine(strconv.Itoa(i+1)))
			}
			return lines
		}()},
		{"aheadBytes of messages", []string{big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, d := startGated(t, Options{})
				h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
				for _, line := range tc.lines {
					h.send(line)
				}
				h.send("not json")
				synctest.Wait()
				if n := len(h.out.frames); n != 0 {
					t.Fatalf("%d frames written while the held queue was full, want none: %q", n, <-h.out.frames)
				}
				close(d.initGate)
				h.expect(`{"jsonrpc":"2.0","id":0,"result":{}}` + "\n")
				err, frames := h.finish()
				if err != nil || len(frames) != len(tc.lines)+1 {
					t.Fatalf("Serve = %v, %d more frames; want nil, %d", err, len(frames), len(tc.lines)+1)
				}
				for _, f := range frames {
					if !strings.Contains(f, `"Parse error"`) && !strings.Contains(f, `"mcp-protocol-version":"2025-11-25"`) {
						t.Errorf("frame %.100q: neither the parse error nor a session after initialize", f)
					}
				}
			})
		})
	}
}

// initialize, notifications/initialized and tools/list written at once are
// all served in the initialize era: tools/list waits for initialize's
// outcome instead of being refused for its missing _meta.
func TestPipelinedInitializeAndRequestInOneWrite(t *testing.T) {
	rt := newCatalogRuntime(t)
	for i := range 10 {
		h := startHarnessWith(t, Options{}, rt)
		h.in.feed(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"))
		if f := decodeFrame(t, h.next()); string(f.ID) != "1" || f.Error != nil {
			t.Fatalf("connection %d: initialize answered %+v", i, f)
		}
		f := decodeFrame(t, h.next())
		if string(f.ID) != "2" || f.Error != nil || !bytes.Contains(f.Result, []byte(`"tools":[`)) || bytes.Contains(f.Result, []byte(`"resultType"`)) {
			t.Fatalf("connection %d: tools/list answered %+v, %s; want the legacy result", i, f, f.Result)
		}
		h.noFramesLeft()
	}
}

// The reading goroutine hands over long lines only while those the
// coordinator has not taken are within aheadBytes (one more may cross it);
// each line taken makes room again.
func TestReaderLookaheadIsBoundedInBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		line := strings.Repeat("x", 200_000)
		input := strings.Repeat(line+"\n", n)
		out := make(chan inbound, n+1)
		ahead := &lookahead{room: make(chan struct{}, 1)}
		stop := make(chan struct{})
		defer close(stop)
		go readLines(newLineReader(strings.NewReader(input), 1<<20, 0), out, ahead, stop)
		maxAhead := aheadBytes/len(line) + 1 // 6
		for taken := 0; taken < n; {
			synctest.Wait()
			want := maxAhead
			if n-taken < maxAhead {
				want = n - taken + 1 // the rest, and the end of input
			}
			if got := len(out); got != want {
				t.Fatalf("after %d lines taken: %d events ahead, want %d", taken, got, want)
			}
			in := <-out
			ahead.taken(len(in.line))
			taken++
		}
		if in := <-out; !in.eof || ahead.bytes.Load() != 0 {
			t.Fatalf("after %d lines: %+v, want the end of input", n, in)
		}
	})
}

// chanSource is a message source the test feeds one event at a time.
type chanSource chan inbound

func (s chanSource) events() <-chan inbound { return s }
func (chanSource) taken(inbound)            {}
func (chanSource) close()                   {}

// lockedDeadlineOutput is a deadlineOutput that the test may read while the
// coordinator writes to it.
type lockedDeadlineOutput struct {
	mu sync.Mutex
	deadlineOutput
}

func (o *lockedDeadlineOutput) SetWriteDeadline(t time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.deadlineOutput.SetWriteDeadline(t)
}

func (o *lockedDeadlineOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.deadlineOutput.Write(p)
}

func (o *lockedDeadlineOutput) writesSoFar() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, w := range o.writes {
		out = append(out, w.data)
	}
	return out
}

// A direct writer's frames wait while the source says that the next line
// is already read (inbound.more): the answers to the lines of one read go
// out in one write once the last of them is served, however the reading
// goroutine and the coordinator take turns. A line without more is
// answered at once.
func TestAnswersToTheLinesOfOneReadShareAWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lockedDeadlineOutput{}
		tr, err := NewTransport(inlineRuntime(t, nil, nil), Options{Input: strings.NewReader(""), Output: out, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		src := make(chanSource)
		tr.connect = func() (messageSource, *frameWriter, func(), error) {
			return src, newFrameWriter(out, tr.opts.WriteTimeout), nil, nil
		}
		done := make(chan error, 1)
		go func() { done <- tr.Serve(context.Background()) }()
		feed := func(id int, more bool) {
			line := []byte(inlineCall(id, "quick", ""))
			env, err := decodeEnvelope(line)
			if err != nil {
				t.Fatal(err)
			}
			src <- inbound{line: line, env: env, more: more}
			synctest.Wait() // the coordinator served it and waits for the next event
		}
		feed(1, true)
		feed(2, true)
		if w := out.writesSoFar(); len(w) != 0 {
			t.Fatalf("wrote %q before the last line of the read was served", w)
		}
		feed(3, false)
		if w, want := out.writesSoFar(), []string{toolAnswer(1, "quick") + toolAnswer(2, "quick") + toolAnswer(3, "quick")}; !slices.Equal(w, want) {
			t.Fatalf("writes %q, want %q", w, want)
		}
		feed(4, false)
		if w := out.writesSoFar(); len(w) != 2 || w[1] != toolAnswer(4, "quick") {
			t.Fatalf("writes %q, want the answer to 4 written alone", w)
		}
		src <- inbound{eof: true}
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})
}

// The reading goroutine marks a line whose successor is already read whole.
func TestReadLinesMarksLinesFollowedByAWholeLine(t *testing.T) {
	r := &chunkReader{chunks: []string{"{\"a\":1}\n{\"b\":2}\n{\"c\"", ":3}\n"}}
	out := make(chan inbound, 8)
	go readLines(newLineReader(r, 1<<10, 0), out, &lookahead{room: make(chan struct{}, 1)}, make(chan struct{}))
	var got []bool
	for in := range out {
		if in.eof {
			break
		}
		got = append(got, in.more)
	}
	if want := []bool{true, false, false}; !slices.Equal(got, want) {
		t.Fatalf("more of each line: %v, want %v", got, want)
	}
}

// chunkReader returns its chunks one Read each, then io.EOF.
type chunkReader struct{ chunks []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}
