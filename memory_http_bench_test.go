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
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The real binary's peak RSS with -http and default flags, under hostile
// loads (the goal is under 150 MiB each):
//
//   - header-lines: 200 connections that each send 1 MB of one unfinished
//     header line (rss-after-MiB: once they are dropped and the server has
//     closed its ends);
//   - echo: 100 concurrent 2026 tools/call echoes of 1.9 MB, their answers
//     read or not read (the server's writes then wait for WriteTimeout),
//     from one host, or from 100 hosts (loopback addresses 127.0.0.2 to
//     127.0.0.101, each a client of its own); refused counts the answers
//     that were not the echo (503 or 500);
//   - client-answers: 30 sessions each with an elicitation waiting, whose
//     1.9 MB answers are posted at once.
//
// MCPSTDIO_BENCH_FLAGS adds flags to the server.
func BenchmarkBinaryHTTPMemory(b *testing.B) {
	b.Run("header-lines", func(b *testing.B) {
		for range b.N {
			benchmarkHeaderLines(b)
		}
	})
	for _, read := range []bool{true, false} {
		for _, hosts := range []int{1, 100} {
			name := "echo-read"
			if !read {
				name = "echo-unread"
			}
			name += "/hosts=" + strconv.Itoa(hosts)
			b.Run(name, func(b *testing.B) {
				for range b.N {
					benchmarkEchoes(b, read, hosts)
				}
			})
		}
	}
	b.Run("client-answers", func(b *testing.B) {
		for range b.N {
			benchmarkClientAnswers(b)
		}
	})
}

// httpBenchServer is the binary serving -http on a port of its own, its RSS
// followed from its start.
type httpBenchServer struct {
	cmd  *exec.Cmd
	addr string // host:port
	rss  *rssSampler
	fds  int // the descriptors it had open once it served, before any load
}

func startHTTPBenchServer(b *testing.B) *httpBenchServer {
	b.Helper()
	args := []string{"-http", "127.0.0.1:0"}
	if extra := os.Getenv(benchFlagsEnv); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	cmd := exec.Command(serverBinary(b), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &httpBenchServer{cmd: cmd}
	lines := bufio.NewScanner(stderr)
	for s.addr == "" && lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "serving MCP over HTTP at http://"); ok {
			s.addr = strings.TrimSuffix(after, mcpPath)
		}
	}
	if s.addr == "" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("the server announced no address (%v)", lines.Err())
	}
	go io.Copy(io.Discard, stderr)
	s.rss = startRSSSampler(b, cmd.Process.Pid)
	s.fds = openFDs(cmd.Process.Pid)
	return s
}

// openFDs returns how many descriptors pid has open, -1 when /proc does not
// tell.
func openFDs(pid int) int {
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

// awaitConnectionsClosed waits until the server has no more descriptors
// open than before its load: it closed its end of every connection.
func (s *httpBenchServer) awaitConnectionsClosed(b *testing.B) {
	b.Helper()
	var n int
	err := awaitCondition(60*time.Second, func() (bool, error) {
		n = openFDs(s.cmd.Process.Pid)
		return n <= s.fds, nil
	}, func() string {
		return fmt.Sprintf("the server has %d descriptors open, %d before the load", n, s.fds)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// stop ends the server and returns its peak RSS in MiB.
func (s *httpBenchServer) stop() float64 {
	s.rss.sample()
	peak := s.rss.stop()
	s.cmd.Process.Kill()
	s.cmd.Wait()
	return float64(peak) / (1 << 20)
}

// vmRSS returns the current resident set size of pid, in bytes.
func vmRSS(pid int) int64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func benchmarkHeaderLines(b *testing.B) {
	s := startHTTPBenchServer(b)
	const conns, lineBytes = 200, 1 << 20
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	open := make([]net.Conn, conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				return
			}
			open[i] = c
			io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+s.addr+"\r\nX-Long: ")
			for sent := 0; sent < lineBytes; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return // refused: the server closed it
				}
			}
		})
	}
	wg.Wait()
	s.rss.sample()
	for _, c := range open {
		if c != nil {
			c.Close()
		}
	}
	s.awaitConnectionsClosed(b)
	after := vmRSS(s.cmd.Process.Pid)
	b.ReportMetric(s.stop(), "peak-rss-MiB")
	b.ReportMetric(float64(after)/(1<<20), "rss-after-MiB")
}

// hostClient returns an HTTP client whose connections come from the
// loopback address 127.0.0.(2+i) when hosts > 1, else from 127.0.0.1; one
// connection per request.
func hostClient(i, hosts int) *http.Client {
	dialer := &net.Dialer{}
	if hosts > 1 {
		dialer.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
	}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
}

func benchmarkEchoes(b *testing.B, read bool, hosts int) {
	s := startHTTPBenchServer(b)
	url := "http://" + s.addr + mcpPath
	text := strings.Repeat("e", 1_900_000)
	const calls = 100
	var wg sync.WaitGroup
	var notEchoed atomic.Int64
	var mu sync.Mutex
	var unread []io.Closer // closed once the server ended their writes (WriteTimeout)
	for i := range calls {
		client := hostClient(i%hosts, hosts)
		wg.Go(func() {
			body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` + meta2026 + `}}`
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			for k, v := range stateless("tools/call", "echo") {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				notEchoed.Add(1)
				return
			}
			if resp.StatusCode != http.StatusOK {
				notEchoed.Add(1)
			}
			if read {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return
			}
			mu.Lock()
			unread = append(unread, resp.Body)
			mu.Unlock()
		})
	}
	wg.Wait()
	if !read {
		s.awaitConnectionsClosed(b) // each at its write's timeout
		for _, body := range unread {
			body.Close()
		}
	}
	b.ReportMetric(s.stop(), "peak-rss-MiB")
	b.ReportMetric(float64(notEchoed.Load()), "refused")
}

func benchmarkClientAnswers(b *testing.B) {
	s := startHTTPBenchServer(b)
	url := "http://" + s.addr + mcpPath
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(header map[string]string, body string) *http.Response {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	const sessions = 30
	type waiting struct {
		header map[string]string
		events *bufio.Reader
		body   io.Closer
		askID  string
	}
	asks := make([]waiting, sessions)
	for i := range asks {
		resp := post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		header := map[string]string{headerSessionID: resp.Header.Get(headerSessionID), "MCP-Protocol-Version": "2025-11-25"}
		resp = post(header, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		resp.Body.Close()
		resp = post(header, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"?"}}}`)
		w := waiting{header: header, events: bufio.NewReader(resp.Body), body: resp.Body}
		for w.askID == "" {
			line, err := w.events.ReadString('\n')
			if err != nil {
				b.Fatalf("session %d: no elicitation request: %v", i, err)
			}
			var ask struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && json.Unmarshal([]byte(data), &ask) == nil && ask.Method == "elicitation/create" {
				w.askID = string(ask.ID)
			}
		}
		asks[i] = w
	}
	name := strings.Repeat("n", 1_900_000)
	var wg sync.WaitGroup
	for _, w := range asks {
		wg.Go(func() {
			resp := post(w.header, `{"jsonrpc":"2.0","id":`+w.askID+`,"result":{"action":"accept","content":{"username":"`+name+`","email":"e@example.com"}}}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			io.Copy(io.Discard, w.events) // the tool's result, then the stream's end
			w.body.Close()
		})
	}
	wg.Wait()
	b.ReportMetric(s.stop(), "peak-rss-MiB")
}
