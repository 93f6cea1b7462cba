package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Loads against the real command with -http and default
// flags, from ONE client (one loopback address; through HAProxy, every
// request comes from the proxy's): what a lone client gets of the server.
//
//	go test -run '^$' -bench BenchmarkBinaryHTTPShares -benchtime 1x .
//
// via=direct talks to the server on loopback; via=haproxy goes through
// HAProxy with testdata/haproxy/haproxy.cfg when MCPSTDIO_HAPROXY names its
// binary ("1": the one on PATH), and is skipped otherwise.
// MCPSTDIO_SERVER_BINARY measures another build of the command (e.g. an
// older commit's) instead of this one; MCPSTDIO_BENCH_FLAGS adds flags.
//
//   - sleeps: 200 concurrent sleep(200 ms) calls: answered, refused;
//   - echoes: 100 concurrent echoes of 1.9 MB, answers read: echoed whole,
//     refused-overload (-32603 "... capacity exhausted"), other (anything
//     else: another error, a reset), and the server's peak RSS;
//   - drain: SIGTERM with 50 sleep(1.5 s) calls in flight: the exit status,
//     the seconds from the signal to the exit, the calls answered;
//   - unread: 100 concurrent 1.9 MB echoes whose answers are not read, then
//     one small echo of the same client: small-served (1 or 0) and the
//     seconds it took;
//   - keepalive: 2000 clients each with one keep-alive connection that made
//     one call (against the 1024 connections of -http-max-connections),
//     then a new client's call: new-served and the seconds it took.
func BenchmarkBinaryHTTPShares(b *testing.B) {
	for _, via := range []string{"direct", "haproxy"} {
		for _, load := range []struct {
			name  string
			run   func(b *testing.B, s *shareTarget)
			flags []string
		}{
			{"sleeps", benchmarkSleeps, nil},
			{"echoes", benchmarkLargeEchoes, nil},
			{"drain", benchmarkDrain, []string{"-metrics-addr", "127.0.0.1:0"}},
			{"unread", benchmarkUnread, nil},
			{"keepalive", benchmarkKeepAlive, nil},
		} {
			b.Run("via="+via+"/"+load.name, func(b *testing.B) {
				for range b.N {
					s := startShareTarget(b, via == "haproxy", load.flags...)
					load.run(b, s)
					s.stop()
				}
			})
		}
	}
}

// shareTarget is the command serving -http, behind HAProxy or not.
type shareTarget struct {
	cmd     *exec.Cmd
	rss     *rssSampler
	url     string // what clients post to
	metrics string // the server's -metrics-addr page (drain reads it); "" for the other loads
	exited  chan struct{}
	once    sync.Once
	peak    float64
}

func startShareTarget(b *testing.B, proxied bool, flags ...string) *shareTarget {
	b.Helper()
	bin := os.Getenv("MCPSTDIO_SERVER_BINARY")
	if bin == "" {
		bin = serverBinary(b)
	}
	args := append([]string{"-http", "127.0.0.1:0"}, flags...)
	if extra := os.Getenv(benchFlagsEnv); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	if proxied && os.Getenv(haproxyEnv) == "" {
		b.Skipf("%s is not set: no HAProxy to measure through", haproxyEnv)
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &shareTarget{cmd: cmd, exited: make(chan struct{})}
	lines := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "serving MCP over HTTP at http://"); ok {
			addr = strings.TrimSuffix(after, mcpPath)
		}
		if _, after, ok := strings.Cut(lines.Text(), `msg="mcpstdio: serving metrics" url=`); ok {
			s.metrics = after
		}
	}
	if addr == "" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("the server announced no address (%v)", lines.Err())
	}
	go func() {
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(s.exited)
	}()
	s.rss = startRSSSampler(b, cmd.Process.Pid)
	s.url = "http://" + addr + mcpPath
	if proxied {
		s.url = startHAProxy(b, addr)
	}
	return s
}

// stop kills the server (if it still runs) and returns its peak RSS in
// MiB. Idempotent.
func (s *shareTarget) stop() float64 {
	s.once.Do(func() {
		s.rss.sample()
		s.peak = float64(s.rss.stop()) / (1 << 20)
		s.cmd.Process.Kill()
		<-s.exited
	})
	return s.peak
}

// shareClient is one client: connections from 127.0.0.1, kept alive.
func shareClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: 0}}
}

// outcome classifies an answer to a tools/call: served (status 200 and a
// result), overload (-32603 "... capacity exhausted", with any status), or
// other.
func outcome(status int, body string, err error) string {
	switch {
	case err != nil:
		return "other"
	case strings.Contains(body, `"code":-32603`) && strings.Contains(body, "capacity exhausted"):
		return "overload"
	case status == http.StatusOK && strings.Contains(body, `"result"`):
		return "served"
	}
	return "other"
}

// concurrently makes n calls at once and counts their outcomes.
func concurrently(c *http.Client, url string, n int, name, arguments string, check func(body string) bool) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			status, body, err := callTool(context.Background(), c, url, name, arguments, nil)
			o := outcome(status, body, err)
			if o == "served" && check != nil && !check(body) {
				o = "other"
			}
			mu.Lock()
			counts[o]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}

func benchmarkSleeps(b *testing.B, s *shareTarget) {
	counts := concurrently(shareClient(256), s.url, 200, "sleep", `{"ms":200}`, nil)
	b.ReportMetric(float64(counts["served"]), "answered")
	b.ReportMetric(float64(counts["overload"]+counts["other"]), "refused")
}

func benchmarkLargeEchoes(b *testing.B, s *shareTarget) {
	text := strings.Repeat("e", 1_900_000)
	counts := concurrently(shareClient(128), s.url, 100, "echo", `{"text":"`+text+`"}`,
		func(body string) bool { return strings.Count(body, text) >= 1 })
	b.ReportMetric(float64(counts["served"]), "echoed")
	b.ReportMetric(float64(counts["overload"]), "refused-overload")
	b.ReportMetric(float64(counts["other"]), "other")
	b.ReportMetric(s.stop(), "peak-rss-MiB")
}

func benchmarkDrain(b *testing.B, s *shareTarget) {
	c := shareClient(64)
	var answered atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{}, 50)
	for range 50 {
		wg.Go(func() {
			started <- struct{}{}
			status, body, err := callTool(context.Background(), c, s.url, "sleep", `{"ms":1500}`, nil)
			if outcome(status, body, err) == "served" {
				answered.Add(1)
			}
		})
	}
	for range 50 {
		<-started
	}
	// SIGTERM once the server holds all 50 calls: running, queued or
	// refused, as its metrics count them.
	metrics := []string{"mcp_server_request_running", "mcp_server_request_queued", "mcp_server_request_refused_total"}
	if err := awaitMetricSum(s.metrics, 50, metrics...); err != nil {
		b.Fatal(err)
	}
	signalled := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	took := time.Since(signalled)
	wg.Wait()
	status := s.cmd.ProcessState.ExitCode()
	b.ReportMetric(float64(status), "exit-status")
	b.ReportMetric(took.Seconds(), "exit-s")
	b.ReportMetric(float64(answered.Load()), "answered")
}

func benchmarkUnread(b *testing.B, s *shareTarget) {
	text := strings.Repeat("e", 1_900_000)
	tr := &http.Transport{MaxIdleConnsPerHost: 128}
	var mu sync.Mutex
	var unread []io.Closer
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` + meta2026 + `}}`
			req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range stateless("tools/call", "echo") {
				req.Header.Set(k, v)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				return
			}
			mu.Lock()
			unread = append(unread, resp.Body)
			mu.Unlock()
		})
	}
	wg.Wait()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, body, err := callTool(ctx, shareClient(1), s.url, "echo", `{"text":"small"}`, nil)
	took := time.Since(start)
	servedSmall := 0.0
	if outcome(status, body, err) == "served" {
		servedSmall = 1
	}
	b.ReportMetric(servedSmall, "small-served")
	b.ReportMetric(took.Seconds(), "small-s")
	for _, body := range unread {
		body.Close()
	}
}

func benchmarkKeepAlive(b *testing.B, s *shareTarget) {
	const clients = 2000
	conns := make([]net.Conn, 0, clients)
	var mu sync.Mutex
	var wg sync.WaitGroup
	host := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), mcpPath)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"k"},` + meta2026 + `}}`
	var request strings.Builder
	request.WriteString("POST " + mcpPath + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	for k, v := range stateless("tools/call", "echo") {
		request.WriteString(k + ": " + v + "\r\n")
	}
	request.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	sem := make(chan struct{}, 64)
	for range clients {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := net.Dial("tcp", host)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := io.WriteString(c, request.String()); err != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
			}
			c.SetDeadline(time.Time{}) // kept alive, idle
		})
	}
	wg.Wait()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, respBody, err := callTool(ctx, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, s.url, "echo", `{"text":"new"}`, nil)
	took := time.Since(start)
	servedNew := 0.0
	if outcome(status, respBody, err) == "served" {
		servedNew = 1
	}
	b.ReportMetric(servedNew, "new-served")
	b.ReportMetric(took.Seconds(), "new-s")
	for _, c := range conns {
		c.Close()
	}
}

// awaitMetricSum reads the Prometheus page at url until the samples of the
// metrics named (every series of each) add up to at least want; it fails
// after 30 s or when the page cannot be read.
func awaitMetricSum(url string, want float64, names ...string) error {
	if url == "" {
		return errors.New("the server announced no metrics page")
	}
	var sum float64
	return awaitCondition(30*time.Second, func() (done bool, err error) {
		if sum, err = metricSum(url, names...); err != nil {
			return false, err
		}
		return sum >= want, nil
	}, func() string {
		return fmt.Sprintf("%s add up to %v, want %v", strings.Join(names, " + "), sum, want)
	})
}

// awaitCondition calls check every 10 ms until it reports done or fails;
// after within it fails, saying how far it got (status).
func awaitCondition(within time.Duration, check func() (done bool, err error), status func() string) error {
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	give := time.After(within)
	for {
		if done, err := check(); err != nil || done {
			return err
		}
		select {
		case <-poll.C:
		case <-give:
			return fmt.Errorf("after %v: %s", within, status())
		}
	}
}

// metricSum returns the sum of the samples of the metrics named on the
// Prometheus page at url.
func metricSum(url string, names ...string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for line := range strings.Lines(string(text)) {
		line = strings.TrimSpace(line)
		space := strings.LastIndexByte(line, ' ') // label values may hold spaces; the value does not
		if space < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		name, value := line[:strings.IndexAny(line, "{ ")], line[space+1:]
		if !slices.Contains(names, name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a number", name, value)
		}
		sum += v
	}
	return sum, nil
}
