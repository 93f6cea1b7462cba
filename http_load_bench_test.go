package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mcpstdio/internal/cannedecho"
)

// httpBaselineEnv makes the test binary act as an HTTP program with no MCP
// in it, which prints its address on stdout and serves until stdin ends.
// Set to "1" it is the baseline: a bare net/http server on 127.0.0.1 that
// reads each POST's body and answers a canned echo result with the
// request's id and text (cannedecho.Handler, as bench/rawhttp does),
// nothing else, what any MCP server over net/http costs at the least. Set
// to "floor" it is the transport floor: the
// same handler served as -http serves the server, through an HTTPListener
// (the connection bound, the lazy deadlines, the framing guard) and
// newHTTPServer's timeouts, with -http's collector target. The baseline to
// the floor is what the server's transport costs; the floor to the server,
// its MCP work.
const httpBaselineEnv = "MCPSTDIO_HTTP_BASELINE_SERVER"

// httpLoadText is the text of the HTTP load's echo calls: 100 bytes.
var httpLoadText = strings.Repeat("x", 100)

// The values of httpBaselineEnv: the program the test binary acts as.
const (
	httpBaselineProgram = "1"
	httpFloorProgram    = "floor"
)

// runHTTPBaseline is the program which names, httpBaselineProgram or
// httpFloorProgram (see httpBaselineEnv).
func runHTTPBaseline(stdin io.Reader, stdout io.Writer, which string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	handler := cannedecho.Handler()
	srv := &http.Server{Handler: handler}
	if which == httpFloorProgram {
		guarded, err := NewHTTPListener(ln, HTTPListenerOptions{})
		if err != nil {
			return err
		}
		logger := slog.New(slog.DiscardHandler)
		srv = newHTTPServer(handler, DefaultMaxHeaderBytes, logger, guarded.ConnState)
		setGCPercent(httpGCPercent, logger)
		ln = guarded
	}
	go srv.Serve(ln)
	fmt.Fprintln(stdout, ln.Addr().String())
	io.Copy(io.Discard, stdin)
	return srv.Close()
}

// The transport floor answers as the baseline does, but through the
// server's listener: a request framed both ways, which the baseline's bare
// net/http serves, the floor refuses 400 as the server does.
func TestHTTPTransportFloorServesThroughTheListener(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two programs")
	}
	ambiguous := "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	for _, tt := range []struct {
		which         string
		ambiguousCode int
	}{
		{httpBaselineProgram, http.StatusOK},
		{httpFloorProgram, http.StatusBadRequest},
	} {
		t.Run(tt.which, func(t *testing.T) {
			target := startHTTPBaseline(t, tt.which)
			resp, err := http.Post("http://"+target.addr+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+httpLoadText+`"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"`+httpLoadText+`"}]`)) {
				t.Fatalf("echo: status %d, body %s", resp.StatusCode, body)
			}
			conn, err := net.Dial("tcp", target.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(failAfter))
			if _, err := io.WriteString(conn, ambiguous); err != nil {
				t.Fatal(err)
			}
			resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.ambiguousCode {
				t.Fatalf("a request framed both ways: status %d, want %d", resp.StatusCode, tt.ambiguousCode)
			}
		})
	}
}

// httpTarget is a server process the HTTP load drives: the baseline, the
// transport floor or the real binary with -http.
type httpTarget struct {
	cmd   *exec.Cmd
	addr  string         // host:port
	stdin io.WriteCloser // the baseline's: closing it ends the program
	done  bool
}

// startHTTPBaseline starts the program which names (httpBaselineProgram or
// httpFloorProgram, see httpBaselineEnv) and returns once it listens.
func startHTTPBaseline(b testing.TB, which string) *httpTarget {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), httpBaselineEnv+"="+which)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	t := &httpTarget{cmd: cmd, stdin: stdin}
	b.Cleanup(t.stop)
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the baseline announced no address: %v", err)
	}
	t.addr = strings.TrimSpace(addr)
	return t
}

// startHTTPBinary starts the server binary with -http 127.0.0.1:0 and
// -http-addr-file, and returns once it serves: its announcement on stderr
// follows the address file's writing.
func startHTTPBinary(b *testing.B) *httpTarget {
	addrFile := filepath.Join(b.TempDir(), "addr")
	args := []string{"-http", "127.0.0.1:0", "-http-addr-file", addrFile, "-log-level", "error"}
	cmd := exec.Command(serverBinary(b), append(args, strings.Fields(os.Getenv(benchFlagsEnv))...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	t := &httpTarget{cmd: cmd}
	b.Cleanup(t.stop)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() && !strings.Contains(lines.Text(), "serving MCP over HTTP at ") {
	}
	go io.Copy(io.Discard, stderr)
	addr, err := os.ReadFile(addrFile)
	if err != nil {
		b.Fatalf("the server announced no address: %v", err)
	}
	t.addr = strings.TrimSpace(string(addr))
	return t
}

// stop ends the program (the binary drains on SIGTERM) and waits for it;
// it may be called more than once.
func (t *httpTarget) stop() {
	if t.done {
		return
	}
	t.done = true
	if t.stdin != nil {
		t.stdin.Close()
	} else {
		t.cmd.Process.Signal(syscall.SIGTERM)
	}
	t.cmd.Wait()
}

// cpuTime is the CPU time (user and system) the stopped program used.
func (t *httpTarget) cpuTime() time.Duration {
	return t.cmd.ProcessState.UserTime() + t.cmd.ProcessState.SystemTime()
}

// httpLoadConn is one load client: a kept-alive HTTP/1.1 connection over
// which it POSTs one prebuilt request at a time, numbering its id, and reads
// the answer, reusing its buffers, so that the load costs little beside the
// server it measures.
type httpLoadConn struct {
	conn      net.Conn
	r         *bufio.Reader
	request   []byte // head and body; the id's ten digits at idAt
	idAt      int
	serial    int
	body      []byte // the last answer's body
	want      []byte // what every answer's body holds: the echoed text
	latencies []time.Duration
}

// httpLoadRequest returns the tools/call POST of the echo tool with
// httpLoadText under version (2026-07-28 stateless, or an initialize-era
// version in session), head and body.
func httpLoadRequest(addr, version, session string) []byte {
	body := `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + httpLoadText + `"}}}`
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: " + version + "\r\n"
	if version == ProtocolVersion20260728 {
		body = strings.TrimSuffix(body, "}}") + "," + binMeta2026 + "}}"
		head += "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"
	} else {
		head += headerSessionID + ": " + session + "\r\n"
	}
	return []byte(head + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

func dialHTTPLoad(b *testing.B, addr string, request []byte) *httpLoadConn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &httpLoadConn{conn: conn, r: bufio.NewReaderSize(conn, 16<<10), request: request, idAt: bytes.Index(request, []byte("0000000000")), want: []byte(httpLoadText)}
}

// run makes n calls, one at a time, recording each one's latency.
func (c *httpLoadConn) run(n int) error {
	for range n {
		c.serial++
		putDigits(c.request[c.idAt:c.idAt+10], c.serial)
		start := time.Now()
		if _, err := c.conn.Write(c.request); err != nil {
			return err
		}
		status, err := c.readResponse()
		c.latencies = append(c.latencies, time.Since(start))
		switch {
		case err != nil:
			return err
		case status != http.StatusOK || !bytes.Contains(c.body, c.want):
			return fmt.Errorf("answer %d %s", status, c.body)
		}
	}
	return nil
}

// readResponse reads one response, its body into c.body (with a
// Content-Length or chunked), and returns its status.
func (c *httpLoadConn) readResponse() (int, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked := -1, false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		return status, c.readChunks()
	case length < 0:
		return 0, errors.New("a response without Content-Length on a kept-alive connection")
	}
	return status, c.readBody(length)
}

// readBody appends n bytes of body to c.body.
func (c *httpLoadConn) readBody(n int) error {
	start := len(c.body)
	c.body = append(c.body, make([]byte, n)...)[:start+n]
	_, err := io.ReadFull(c.r, c.body[start:])
	return err
}

func (c *httpLoadConn) readChunks() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 64)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if size > 0 {
			if err := c.readBody(int(size)); err != nil {
				return err
			}
		}
		if _, err := c.r.Discard(2); err != nil { // the chunk's CRLF
			return err
		}
		if size == 0 {
			return nil
		}
	}
}

// httpLoad is the clients of one target.
type httpLoad struct {
	conns []*httpLoadConn
	time  time.Duration
}

// run makes n calls from the clients together, each client its share, and
// adds the time they took to l.time.
func (l *httpLoad) run(b *testing.B, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, len(l.conns))
	start := time.Now()
	for i, c := range l.conns {
		share := n / len(l.conns)
		if i < n%len(l.conns) {
			share++
		}
		wg.Go(func() {
			if err := c.run(share); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	l.time += time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func (l *httpLoad) median() time.Duration {
	var all []time.Duration
	for _, c := range l.conns {
		all = append(all, c.latencies...)
	}
	return median(all)
}

// newHTTPLoad connects clients to t; for an initialize-era version each
// client first opens its own session (initialize, notifications/initialized).
func newHTTPLoad(b *testing.B, t *httpTarget, version string, clients, calls int) *httpLoad {
	l := &httpLoad{}
	for range clients {
		session := ""
		if version != ProtocolVersion20260728 {
			session = openHTTPSession(b, t.addr, version)
		}
		c := dialHTTPLoad(b, t.addr, httpLoadRequest(t.addr, version, session))
		c.latencies = make([]time.Duration, 0, calls/clients+httpLoadRounds+50*clients)
		l.conns = append(l.conns, c)
	}
	return l
}

// openHTTPSession initializes a session of version and returns its id (the
// baseline answers a fixed one and keeps no session).
func openHTTPSession(b *testing.B, addr, version string) string {
	post := func(body, session string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
			req.Header.Set("MCP-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}`, "")
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("initialize: status %d", resp.StatusCode)
	}
	session := resp.Header.Get(headerSessionID)
	if session != "" {
		if resp := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); resp.StatusCode != http.StatusAccepted {
			b.Fatalf("notifications/initialized: status %d", resp.StatusCode)
		}
	}
	return session
}

// httpLoadRounds is how many times the load goes round the programs it
// compares in one benchmark run.
const httpLoadRounds = 4

// BenchmarkHTTPBinaryVsBaseline drives the real binary with -http, the
// baseline program (a bare net/http server answering a canned echo result)
// and the transport floor (that handler behind the server's listener and
// settings; see httpBaselineEnv) with the same load: 1 or 16 kept-alive
// loopback clients, each making 100-byte echo tools/calls one at a time,
// under 2026-07-28 (stateless) or 2025-11-25 (each client in its own
// session, opened before the timing starts). The three take turns,
// httpLoadRounds times each, so that all meet the same neighbours on a
// shared machine. For each it reports calls/s, the median latency and the
// CPU time the program spent per call (start-up and warm-up included), and
// for the floor and the server the ratios of their rate and median to the
// baseline's.
func BenchmarkHTTPBinaryVsBaseline(b *testing.B) {
	for _, version := range []string{ProtocolVersion20260728, ProtocolVersion20251125} {
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/clients%d", version, clients), func(b *testing.B) {
				targets := []*httpTarget{startHTTPBaseline(b, httpBaselineProgram), startHTTPBaseline(b, httpFloorProgram), startHTTPBinary(b)}
				loads := make([]*httpLoad, len(targets))
				for i, t := range targets {
					loads[i] = newHTTPLoad(b, t, version, clients, b.N)
					loads[i].run(b, 50*clients) // warm up
					loads[i].time = 0
					for _, c := range loads[i].conns {
						c.latencies = c.latencies[:0]
					}
				}
				b.ResetTimer()
				for round := range httpLoadRounds {
					n := b.N / httpLoadRounds
					if round < b.N%httpLoadRounds {
						n++
					}
					for _, l := range loads {
						l.run(b, n)
					}
				}
				b.StopTimer()
				for _, t := range targets {
					t.stop()
				}
				rate := func(i int) float64 { return float64(b.N) / loads[i].time.Seconds() }
				for i, prefix := range []string{"baseline-", "floor-", ""} {
					b.ReportMetric(float64(targets[i].cpuTime().Nanoseconds())/float64(b.N), prefix+"cpu-ns/call")
					b.ReportMetric(rate(i), prefix+"calls/s")
					b.ReportMetric(float64(loads[i].median().Nanoseconds()), prefix+"p50-ns")
					if i > 0 {
						b.ReportMetric(rate(i)/rate(0), prefix+"rate-ratio")
						b.ReportMetric(float64(loads[i].median())/float64(loads[0].median()), prefix+"p50-ratio")
					}
				}
			})
		}
	}
}
