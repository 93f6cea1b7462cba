package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
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
