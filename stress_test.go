package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Stress tests of the paths that cross goroutines, meant to be run with
// -race -count=N: each drives many goroutines at once through one owner and
// checks that every answer arrives once, whole, and that nothing panics.

// One session under concurrent calls (plain and streaming), a GET stream
// receiving list changes announced meanwhile, and a DELETE at the end.
func TestStressHTTPSession(t *testing.T) {
	s, release, logged := newRaceServer(t)
	close(release)
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	get, err := http.NewRequest(http.MethodGet, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	get.Header.Set(headerSessionID, h[headerSessionID])
	get.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := newSSEReader(t, stream)
	if ev, err := events.next(); err != nil || !ev.retry {
		t.Fatalf("GET stream's first event %+v (%v), want the priming event", ev, err)
	}

	const callers, calls = 8, 10
	var wg sync.WaitGroup
	failures := make(chan string, callers*calls)
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				id := g*calls + i
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold"}}`, id)
				if i%2 == 1 {
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id)
				}
				got := waitFor(t, s.postAsync(h, body), "an answer")
				if !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, id)) {
					failures <- fmt.Sprintf("request %d answered %q", id, got)
				}
			}
		})
	}
	const changes = 20
	for range changes {
		s.rt.AnnounceListChanged(ToolsChanged)
	}
	for range changes {
		if got := events.nextMessage(); !strings.Contains(got, "notifications/tools/list_changed") {
			t.Fatalf("GET stream event %s, want a list change", got)
		}
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	del, _ := http.NewRequest(http.MethodDelete, s.url, nil)
	del.Header.Set(headerSessionID, h[headerSessionID])
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := events.next(); err == nil {
		t.Fatal("the GET stream goes on after DELETE")
	}
	logged.check(t)
}

// 2026 listen streams opened and cancelled while changes are announced and
// the handler closes its streams: every stream acknowledges, ends, and
// gives its place back.
func TestStressHTTPListenStreams(t *testing.T) {
	s, release, logged := newRaceServer(t)
	close(release)
	listen := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta2026 + `}}`
	const streams = 8
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := s.do(ctx, http.MethodPost, stateless("subscriptions/listen", ""), listen)
			defer resp.Body.Close()
			events := newSSEReader(t, resp)
			if got := events.nextMessage(); !strings.Contains(got, "subscriptions/acknowledged") {
				t.Errorf("listen stream's first event %s", got)
				return
			}
			s.rt.AnnounceListChanged(ToolsChanged)
			if got := events.nextMessage(); !strings.Contains(got, "tools/list_changed") {
				t.Errorf("listen stream event %s", got)
			}
		})
	}
	wg.Wait()
	s.h.endStreams()
	eventually(t, "the ended streams to give their places back", func() bool {
		s.h.listens.mu.Lock()
		defer s.h.listens.mu.Unlock()
		return s.h.listens.used == 0
	})
	logged.check(t)
}

// An in-memory client sending from many goroutines and closing its input
// while sends are still going: every message admitted is answered once, and
// the ones that came too late are refused with ErrClosed.
func TestStressMemoryTransport(t *testing.T) {
	rt := newHTTPCatalogRuntime(t)
	c, done := startMemory(t, rt, Options{})
	const senders, perSender = 8, 25
	admitted := make(chan int, senders*perSender)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				id := g*perSender + i
				err := c.Send(context.Background(), fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
				switch {
				case err == nil:
					admitted <- id
				case !errors.Is(err, ErrClosed):
					t.Errorf("Send = %v", err)
				}
			}
		})
	}
	answered := map[string]bool{}
	var receiving sync.WaitGroup
	receiving.Go(func() {
		for {
			m, err := c.Receive(context.Background())
			if err != nil {
				return
			}
			answered[string(m)] = true
		}
	})
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	wg.Wait()
	if err := waitFor(t, closed, "Close"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, done, "Serve to return"); err != nil {
		t.Fatal(err)
	}
	receiving.Wait()
	close(admitted)
	n := 0
	for id := range admitted {
		n++
		if !answered[fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id)] {
			t.Fatalf("message %d was admitted and never answered", id)
		}
	}
	if len(answered) != n {
		t.Fatalf("%d answers for %d admitted messages", len(answered), n)
	}
}
