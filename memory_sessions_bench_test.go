package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BenchmarkBinarySessionMemory measures what initialize-era sessions add to
// the real binary's resident set (VmRSS, read from /proc), with -http and
// default flags (MCPSTDIO_BENCH_FLAGS adds flags). Each iteration starts two
// servers and reports, per item, the growth over the RSS the server had once
// warmed up (a few sessions, streams and connections made and let go, so
// that the code they run is resident):
//
//   - idle-KiB/session: 1000 sessions (initialize, then
//     notifications/initialized; 2025-11-25) made over 4 keep-alive
//     connections, none with a stream open;
//   - stream-KiB/session: the same sessions once each has its GET stream open,
//     each on a connection of its own (1000 connections), the whole per
//     session: the session, its stream and its connection;
//   - conn-KiB/connection: on the second server, 1000 keep-alive connections
//     that each carried one request and belong to no session (the part of a
//     stream that is net/http's).
//
// No figure is asserted and nothing is timed: the RSS of a Go process
// includes the garbage of its last collection cycle (GOGC is 200 with -http),
// which moves a figure by a few tenths of a KiB from run to run; run it with
// -count to see the spread.
//
//	go test -run '^$' -bench BinarySessionMemory -benchtime 1x -count 5 .
func BenchmarkBinarySessionMemory(b *testing.B) {
	const sessions = 1000
	for range b.N {
		s := startHTTPBenchServer(b)
		load := &sessionLoad{b: b, s: s}
		load.warm()
		base := vmRSS(s.cmd.Process.Pid)
		ids := load.initialize(sessions)
		idle := vmRSS(s.cmd.Process.Pid)
		streams := load.openStreams(ids)
		streamed := vmRSS(s.cmd.Process.Pid)
		for _, c := range streams {
			c.Close()
		}
		s.stop()

		s = startHTTPBenchServer(b)
		load = &sessionLoad{b: b, s: s}
		load.warm()
		connBase := vmRSS(s.cmd.Process.Pid)
		conns := load.idleConnections(sessions)
		connected := vmRSS(s.cmd.Process.Pid)
		for _, c := range conns {
			c.Close()
		}
		s.stop()

		b.ReportMetric(float64(idle-base)/1024/sessions, "idle-KiB/session")
		b.ReportMetric(float64(streamed-base)/1024/sessions, "stream-KiB/session")
		b.ReportMetric(float64(connected-connBase)/1024/sessions, "conn-KiB/connection")
	}
}

// sessionLoad drives one server of BenchmarkBinarySessionMemory.
type sessionLoad struct {
	b *testing.B
	s *httpBenchServer
}

// sessionLoadHosts are the client addresses sessions are made from
// (127.0.0.2 and on), so that no client makes more of them than a share.
const sessionLoadHosts = 4

const sessionInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`

// warm makes a few sessions, streams and connections and lets them go.
func (l *sessionLoad) warm() {
	ids := l.initialize(16)
	for _, c := range l.openStreams(ids) {
		c.Close()
	}
	for _, c := range l.idleConnections(16) {
		c.Close()
	}
	client := &http.Client{}
	for _, id := range ids {
		req, _ := http.NewRequest(http.MethodDelete, "http://"+l.s.addr+mcpPath, nil)
		req.Header.Set(headerSessionID, id)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	client.CloseIdleConnections()
	l.s.awaitConnectionsClosed(l.b)
}

// initialize makes n sessions, each initialized, from sessionLoadHosts
// clients at once, each over one keep-alive connection, and returns their
// ids. The connections are closed then.
func (l *sessionLoad) initialize(n int) []string {
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, sessionLoadHosts)
	for h := range sessionLoadHosts {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+h))}}
		client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, MaxConnsPerHost: 1}}
		wg.Go(func() {
			defer client.CloseIdleConnections()
			for i := h; i < n; i += sessionLoadHosts {
				resp, err := l.post(client, "", sessionInitialize)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = resp
				if _, err := l.post(client, ids[i], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		l.b.Fatal(err)
	default:
	}
	return ids
}

// post sends body in session (none when ""), reads the answer and returns the
// session id it names.
func (l *sessionLoad) post(client *http.Client, session, body string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+l.s.addr+mcpPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(headerSessionID, session)
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion20251125)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("POST %.40s: status %d", body, resp.StatusCode)
	}
	return resp.Header.Get(headerSessionID), nil
}

// openStreams opens the GET stream of each session on a connection of its
// own and returns the connections once the server has answered every one
// with its stream's first event.
func (l *sessionLoad) openStreams(ids []string) []net.Conn {
	conns := make([]net.Conn, len(ids))
	for i, id := range ids {
		conns[i] = l.request(id, "GET", "Accept: text/event-stream\r\nMcp-Session-Id: "+id+"\r\nMCP-Protocol-Version: "+ProtocolVersion20251125+"\r\n", func(resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET stream: status %d", resp.StatusCode)
			}
			_, err := bufio.NewReader(resp.Body).ReadString('\n') // the priming event's first line
			return err
		})
	}
	return conns
}

// idleConnections opens n connections that each carry one request (a GET
// naming no session, answered 404) and stay open, idle.
func (l *sessionLoad) idleConnections(n int) []net.Conn {
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = l.request(fmt.Sprint("c", i), "GET", "Accept: text/event-stream\r\nMcp-Session-Id: none\r\n", func(resp *http.Response) error {
			_, err := io.Copy(io.Discard, resp.Body)
			return err
		})
	}
	return conns
}

// request sends one HTTP/1.1 request with header lines on a new connection,
// checks its response with check and returns the connection, still open.
func (l *sessionLoad) request(what, method, header string, check func(*http.Response) error) net.Conn {
	c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", l.s.addr)
	if err != nil {
		l.b.Fatal(err)
	}
	if _, err := io.WriteString(c, method+" "+mcpPath+" HTTP/1.1\r\nHost: "+l.s.addr+"\r\n"+header+"\r\n"); err != nil {
		l.b.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		err = check(resp)
	}
	if err != nil {
		l.b.Fatalf("%s: %v", what, err)
	}
	return c
}

// BenchmarkSessionHeap counts, in process, what 1000 idle sessions (made as
// BenchmarkBinarySessionMemory makes them, over one keep-alive connection)
// hold once the collector ran: heap bytes, stack bytes and goroutines, per
// session. Run it with -memprofile and -memprofilerate 1 to see where the
// heap bytes are:
//
//	go test -run '^$' -bench SessionHeap -benchtime 1x -memprofile mem.out -memprofilerate 1 .
//	go tool pprof -sample_index=inuse_space -top mem.out
func BenchmarkSessionHeap(b *testing.B) {
	const sessions = 1000
	for range b.N {
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
		srv := httptest.NewServer(h)
		load := &sessionLoad{b: b, s: &httpBenchServer{addr: strings.TrimPrefix(srv.URL, "http://")}}
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		initialize := func(n int) {
			for range n {
				id, err := load.post(client, "", sessionInitialize)
				if err == nil {
					_, err = load.post(client, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		initialize(16)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		goroutines := runtime.NumGoroutine()
		initialize(sessions)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/sessions, "heap-B/session")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/sessions, "stack-B/session")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/sessions, "goroutines/session")
		client.CloseIdleConnections()
		srv.Close()
		h.Close()
	}
}
