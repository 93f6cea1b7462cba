package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Races a client can provoke against a session's POSTs, driven from the
// client side only: what the server logs (a recovered panic) and what it
// answers are all the tests look at. Run them with -race -count=N.

// panicLog records what net/http logs, which includes every panic it
// recovers in a handler.
type panicLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *panicLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *panicLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.buf.String(); strings.Contains(s, "panic") {
		t.Fatalf("the server recovered a panic:\n%s", s)
	}
}

// newRaceServer serves a runtime that announces tool list changes, with
// net/http's log recorded, and a "hold" tool that runs until its context
// ends or release is closed.
func newRaceServer(t *testing.T) (s *httpTestServer, release chan struct{}, logged *panicLog) {
	t.Helper()
	opts := testOptions()
	opts.ToolsListChanged = true
	rt := newTestRuntime(t, opts)
	release = make(chan struct{})
	if err := rt.AddTool(Tool{Name: "hold"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		select {
		case <-release:
			return TextResult("held to the end"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	h, err := NewHTTPHandler(rt, HTTPOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	logged = &panicLog{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(logged, "", 0)
	srv.Start()
	t.Cleanup(func() { h.endStreams(); srv.Close(); h.Close() })
	return &httpTestServer{t: t, url: srv.URL + "/mcp", h: h, rt: rt}, release, logged
}

// postAsync POSTs body with header and returns the answer's status and body.
func (s *httpTestServer) postAsync(header map[string]string, body string) <-chan string {
	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return answer
}

// A notifications/cancelled sent at the same time as the request it names
// either cancels it (no answer) or arrives first and is ignored (the request
// is answered): never a panic, never a lost or doubled answer.
func TestHTTPCancelRacesSubmission(t *testing.T) {
	s, release, logged := newRaceServer(t)
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	const requests = 16
	answers := make([]<-chan string, requests)
	cancels := make([]<-chan string, requests)
	for i := range requests {
		answers[i] = s.postAsync(h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold"}}`, i))
		cancels[i] = s.postAsync(h, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i))
	}
	for i, c := range cancels {
		if got := waitFor(t, c, "the cancel's answer"); !strings.HasPrefix(got, "202 ") {
			t.Fatalf("cancel %d answered %q, want 202", i, got)
		}
	}
	close(release)
	for i, a := range answers {
		got := waitFor(t, a, "the request's answer")
		cancelled := got == "200 "
		answered := strings.HasPrefix(got, "200 ") && strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, i)) && strings.Contains(got, "held to the end")
		if !cancelled && !answered {
			t.Fatalf("request %d answered %q, want its result or (cancelled) an empty stream", i, got)
		}
	}
	logged.check(t)
}

// A DELETE of the session at the same time as its requests ends each of
// them, answered or not: never a panic, never a POST left hanging.
func TestHTTPDeleteRacesSubmission(t *testing.T) {
	s, release, logged := newRaceServer(t)
	defer close(release)
	const sessions, requests = 4, 4
	var all []<-chan string
	for range sessions {
		h := s.legacySession(ProtocolVersion20251125, `{}`)
		for i := range requests {
			all = append(all, s.postAsync(h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold"}}`, i)))
		}
		req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
		req.Header.Set(headerSessionID, h[headerSessionID])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: status %d, want 204", resp.StatusCode)
		}
	}
	for _, a := range all {
		got := waitFor(t, a, "a request of a deleted session to end")
		if got != "200 " && !strings.HasPrefix(got, "404 ") {
			t.Fatalf("a request racing DELETE answered %q, want an empty stream (it ended with its session) or 404 (it came after)", got)
		}
	}
	logged.check(t)
}

// A Peer whose request has ended refuses with ErrRequestEnded over HTTP as
// on stdio, in a session and in a 2026 request alike.
func TestHTTPPeerAfterRequestEnded(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	peers := make(chan Peer, 2)
	if err := rt.AddTool(Tool{Name: "stash"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		peers <- req.peer
		return TextResult("stashed"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{Logger: quietLogger()})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	readBody(t, s.post(h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stash"}}`))
	readBody(t, s.post(stateless("tools/call", "stash"), toolCall("2", "stash", meta2026With(""))))
	for _, era := range []string{"session", "2026"} {
		peer := waitFor(t, peers, "a handler")
		if err := peer.Notify(context.Background(), "notifications/late", nil); !errors.Is(err, ErrRequestEnded) {
			t.Errorf("%s: Notify after the request ended = %v, want ErrRequestEnded", era, err)
		}
	}
}

// Sessions park and wake while their clients post, open and drop GET
// streams and change the catalog under each other: every request is
// answered, nothing panics, and once the clients are done every session is
// parked idle (no owner left running, none lost).
func TestHTTPSessionParkingRaces(t *testing.T) {
	s, release, logged := newRaceServer(t)
	defer close(release)
	const sessions, rounds = 6, 20
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = s.legacySession(ProtocolVersion20251125, `{}`)[headerSessionID]
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for n, id := range ids {
		header := map[string]string{headerSessionID: id, "MCP-Protocol-Version": ProtocolVersion20251125}
		tool := fmt.Sprint("t", n)
		wg.Go(func() {
			for i := range rounds {
				pinged := s.postAsync(header, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
				if !s.rt.RemoveTool(tool) { // every session's owner wakes for it
					s.rt.AddTool(Tool{Name: tool}, func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult(""), nil })
				}
				if got := <-pinged; !strings.HasPrefix(got, "200 ") {
					errs <- fmt.Errorf("ping %d in %s: %q", i, id, got)
					return
				}
				if i%4 == 0 {
					req, _ := http.NewRequest(http.MethodGet, s.url, nil)
					req.Header.Set("Accept", "text/event-stream")
					for k, v := range header {
						req.Header.Set(k, v)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- fmt.Errorf("GET stream of %s: %v", id, err)
						return
					}
					resp.Body.Close() // 200, or 409 while the last one is still open
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		session := s.h.sessions.get(id)
		eventually(t, "session "+id+" to park idle", func() bool {
			_, idle := session.idleSince()
			return idle
		})
	}
	logged.check(t)
}
