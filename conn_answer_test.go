package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// The answer budget (connection.answerFits): an answer is admitted as its
// message was. One that does not fit beside what else is in flight, the
// message's own bytes excepted, is replaced by the overload error; one
// alone in flight is served however large it is. The same rule on stdio
// and over HTTP.

// echoCall is a 2026 tools/call of the reference echo tool, with text
// chars of text, which the echo answers once.
func echoCall(id string, chars int) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("e", chars) + `"},` + meta2026 + `}}`
}

// overloaded is the answer to id of a request whose answer did not fit.
func overloaded(id string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-32603,"message":"Server execution capacity exhausted"}}`
}

// echoed reports whether answer is id's echo of chars chars, whole.
func echoed(answer, id string, chars int) bool {
	return strings.Contains(answer, `"id":"`+id+`"`) && strings.Count(answer, strings.Repeat("e", chars)) == 1
}

func TestStdioAnswerBeyondTheBudgetIsRefused(t *testing.T) {
	rt := newHTTPCatalogRuntime(t)
	hold := &holdTool{started: make(chan string, 1), release: make(chan struct{})}
	addHoldTool(t, rt, hold)
	// The reference echo is Inline: run by the owner, with no job whose
	// bytes hold its line. The same echo on a worker shows the rule for
	// jobs: line and answer together.
	if err := rt.AddTool(referenceTool("worker_echo", "echo, run by a worker", echoSchema), echoText); err != nil {
		t.Fatal(err)
	}
	const budget = 10_000
	h := startHarnessWith(t, Options{MaxInflightBytes: budget}, rt)
	t.Cleanup(func() {
		select {
		case <-hold.release:
		default:
			close(hold.release)
		}
	})
	held := holdCall("h", 6_000) // ~6.2 KB in flight while it runs
	h.send(held)
	<-hold.started
	// The answer is admitted before it is built, while its line's bytes are
	// still held: line and answer fit when they fit beside the held line.
	for _, tc := range []struct {
		chars int
		fits  bool
	}{
		{700, true},    // a ~0.9 KB line and a ~0.8 KB answer: within the ~3.8 KB left
		{2_000, false}, // a ~2.2 KB line, admitted; a ~2.1 KB answer: beyond
	} {
		id := "e" + strconv.Itoa(tc.chars)
		line := strings.Replace(echoCall(id, tc.chars), `"name":"echo"`, `"name":"worker_echo"`, 1)
		if len(held)+len(line)+1 > budget {
			t.Fatalf("the %d-char echo does not fit as a message: the test's sizes are wrong", tc.chars)
		}
		got := h.roundTrip(line)
		if tc.fits != echoed(got, id, tc.chars) || !tc.fits && strings.TrimSpace(got) != overloaded(id) {
			t.Fatalf("a %d-char echo beside the held call (fits: %v): got %.200s", tc.chars, tc.fits, got)
		}
	}
	close(hold.release)
	if got := h.next(); !strings.Contains(got, `"id":"h"`) {
		t.Fatalf("got %.200s", got)
	}
	// Alone in flight, an answer larger than the whole budget is served.
	if got := h.roundTrip(echoCall("alone", 3*budget)); !echoed(got, "alone", 3*budget) {
		t.Fatalf("a lone answer larger than the budget: got %.200s", got)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

func TestHTTPAnswerBeyondTheBudgetIsRefused(t *testing.T) {
	const budget = 20_000
	s, hold := newHoldServer(t, HTTPOptions{MaxInflightBytes: budget})
	held := s.goPost(http.DefaultClient, stateless("tools/call", "hold"), holdCall("h", 10_000))
	<-hold.started
	// A body's bytes stay counted until its answer is written: the answer
	// fits when body and answer fit beside the held body.
	for _, tc := range []struct {
		chars int
		fits  bool
	}{
		{1_000, true},  // a ~1.2 KB body and a ~1.1 KB answer: within the ~9.8 KB left
		{5_000, false}, // a ~5.2 KB body, admitted; a ~5.1 KB answer: beyond
	} {
		id := "e" + strconv.Itoa(tc.chars)
		body := echoCall(id, tc.chars)
		resp := s.do(t.Context(), http.MethodPost, stateless("tools/call", "echo"), body)
		got := readBody(t, resp)
		switch {
		case tc.fits && (resp.StatusCode != http.StatusOK || !echoed(got, id, tc.chars)):
			t.Fatalf("a %d-char echo beside the held call: %d %.200s", tc.chars, resp.StatusCode, got)
		case !tc.fits && (resp.StatusCode != http.StatusInternalServerError || strings.TrimSpace(got) != overloaded(id)):
			t.Fatalf("a %d-char echo beside the held call: %d %.200s, want 500 and %s", tc.chars, resp.StatusCode, got, overloaded(id))
		}
	}
	close(hold.release)
	if got := <-held; !strings.Contains(got, `held h`) {
		t.Fatalf("the held call: %.200s", got)
	}
	eventually(t, "the held body's bytes being freed", func() bool { return s.h.executor.Stats().InflightBytes == 0 })
	// Alone in flight, a body and an answer larger than the whole budget
	// are served.
	resp := s.do(t.Context(), http.MethodPost, stateless("tools/call", "echo"), echoCall("alone", 3*budget))
	if got := readBody(t, resp); resp.StatusCode != http.StatusOK || !echoed(got, "alone", 3*budget) {
		t.Fatalf("a lone answer larger than the budget: %d %.200s", resp.StatusCode, got)
	}
	eventually(t, "every byte being freed", func() bool { return s.h.executor.Stats().InflightBytes == 0 })
}
