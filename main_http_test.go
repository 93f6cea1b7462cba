package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBinaryServesHTTPAndDrainsOnSIGTERM runs the real command with -http on
// port 0: it names the bound address on stderr and in -http-addr-file,
// serves MCP at /mcp, and on SIGTERM lets the request in flight finish
// before it exits 0.
func TestBinaryServesHTTPAndDrainsOnSIGTERM(t *testing.T) {
	addrFile := filepath.Join(t.TempDir(), "addr")
	p := startHTTPServer(t, "-http-addr-file", addrFile)
	url := p.base + mcpPath
	addr, err := os.ReadFile(addrFile)
	if err != nil || "http://"+strings.TrimSpace(string(addr))+"/mcp" != url {
		t.Fatalf("-http-addr-file holds %q (%v), stderr says %s", addr, err, url)
	}
	s := &httpTestServer{t: t, url: url}

	resp := s.post(stateless("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"name":"test_header_param"`) {
		t.Fatalf("tools/list: status %d, body %.300s", resp.StatusCode, body)
	}

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}`
	resp = s.post(stateless("tools/call", "test_tool_with_progress"),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},`+meta+`}}`)
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	if got := events.nextMessage(); !strings.Contains(got, `"progress":0`) {
		t.Fatalf("first event %s, want the first progress report", got)
	}
	// The request is running: the drain must let it finish.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		got := events.nextMessage()
		if strings.Contains(got, `"id":2,"result"`) {
			break
		}
		if !strings.Contains(got, "notifications/progress") {
			t.Fatalf("event %s, want progress or the result", got)
		}
	}
	<-p.stderrDone
	if status := p.wait(); status != 0 {
		t.Fatalf("after SIGTERM: exit status %d, want 0; stderr:\n%s", status, p.stderrText())
	}
}

// httpServerProcess is the real command serving -http on a port of its own.
type httpServerProcess struct {
	*serverProcess
	base       string        // scheme://host:port it announced
	stderrDone chan struct{} // closed once stderr reached EOF
	lines      chan string   // the lines of stderr after the announcement, closed at EOF
}

// startHTTPServer starts the command with -http 127.0.0.1:0 and args, and
// returns once it announced its address on stderr.
func startHTTPServer(t *testing.T, args ...string) *httpServerProcess {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"-http", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &httpServerProcess{
		serverProcess: &serverProcess{t: t, cmd: cmd, stderr: &strings.Builder{}, errMu: &sync.Mutex{}},
		stderrDone:    make(chan struct{}),
		lines:         make(chan string, 256),
	}
	startCommand(t, cmd)
	log := lockedWriter{p.errMu, p.stderr}
	lines := bufio.NewScanner(pipe)
	for p.base == "" && lines.Scan() {
		log.Write([]byte(lines.Text() + "\n"))
		if _, after, ok := strings.Cut(lines.Text(), "serving MCP over HTTP at "); ok {
			p.base = strings.TrimSuffix(after, mcpPath)
		}
	}
	if p.base == "" {
		t.Fatalf("no address on stderr (%v): %s", lines.Err(), p.stderrText())
	}
	go func() {
		defer close(p.stderrDone)
		defer close(p.lines)
		for lines.Scan() {
			log.Write([]byte(lines.Text() + "\n"))
			select {
			case p.lines <- lines.Text():
			default: // nobody waits for it
			}
		}
	}()
	return p
}

// waitStderr returns the first line of stderr, from now on, that contains
// substr; it fails the test when stderr ends first.
func (p *httpServerProcess) waitStderr(substr string) string {
	p.t.Helper()
	for line := range p.lines {
		if strings.Contains(line, substr) {
			return line
		}
	}
	p.t.Fatalf("stderr ended without a line containing %q:\n%s", substr, p.stderrText())
	return ""
}

// stop sends SIGTERM and returns the exit status once the process drained.
func (p *httpServerProcess) stop() int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	<-p.stderrDone
	return p.wait()
}

// TestHTTPBoundFlagsReachTheirOptions: each HTTP bound's flag sets its
// option, and only it; without the flags each option is its default, and
// -max-line-bytes no longer sets the body limit.
func TestHTTPBoundFlagsReachTheirOptions(t *testing.T) {
	tests := []struct {
		flag, value string
		option      func(o HTTPOptions) any
		def, want   any
	}{
		{"-http-max-sessions", "7", func(o HTTPOptions) any { return o.MaxSessions }, DefaultMaxSessions, 7},
		{"-http-session-idle-timeout", "90s", func(o HTTPOptions) any { return o.SessionIdleTimeout }, DefaultSessionIdleTimeout, 90 * time.Second},
		{"-http-max-listen-streams", "9", func(o HTTPOptions) any { return o.MaxListenStreams }, DefaultMaxListenStreams, 9},
		{"-http-max-replay-bytes", "1001", func(o HTTPOptions) any { return o.MaxReplayBytes }, DefaultMaxReplayBytes, 1001},
		{"-http-max-session-replay-bytes", "1002", func(o HTTPOptions) any { return o.MaxSessionReplayBytes }, DefaultMaxSessionReplayBytes, 1002},
		{"-http-max-body-bytes", "1003", func(o HTTPOptions) any { return o.MaxBodyBytes }, DefaultMaxBodyBytes, 1003},
		{"-http-read-body-timeout", "4s", func(o HTTPOptions) any { return o.ReadBodyTimeout }, DefaultReadBodyTimeout, 4 * time.Second},
	}
	defaults, err := parseFlags([]string{"-http", ":0", "-max-line-bytes", "555"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			if got := tt.option(defaults.httpOptions()); got != tt.def {
				t.Errorf("without %s: %v, want the default %v", tt.flag, got, tt.def)
			}
			c, err := parseFlags([]string{"-http", ":0", tt.flag, tt.value}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.option(c.httpOptions()); got != tt.want {
				t.Errorf("%s %s: %v, want %v", tt.flag, tt.value, got, tt.want)
			}
			for _, other := range tests {
				if other.flag != tt.flag && other.option(c.httpOptions()) != other.def {
					t.Errorf("%s %s also set %s's option to %v", tt.flag, tt.value, other.flag, other.option(c.httpOptions()))
				}
			}
			bad := "-1"
			if _, ok := tt.want.(time.Duration); ok {
				bad = "-1s"
			}
			var stderr strings.Builder
			if _, err := parseFlags([]string{"-http", ":0", tt.flag, bad}, &stderr); err == nil || !strings.Contains(stderr.String(), "for flag "+tt.flag+": must be >= 0, got "+bad) {
				t.Errorf("%s %s: %v, stderr %q; want it refused, naming the flag", tt.flag, bad, err, stderr.String())
			}
			// -h: "  -flag type\n    \twith -http, what it bounds; beyond it ... (default D)"
			var usage strings.Builder
			parseFlags([]string{"-h"}, &usage)
			_, entry, _ := strings.Cut(usage.String(), "  "+tt.flag+" ")
			_, text, _ := strings.Cut(entry, "\n")
			text, _, _ = strings.Cut(text, "\n")
			if !strings.HasPrefix(strings.TrimSpace(text), "with -http, ") || !strings.Contains(text, "beyond") || !strings.HasSuffix(text, fmt.Sprintf("(default %v)", tt.def)) {
				t.Errorf("-h says of %s: %q; want what it bounds with -http, what happens beyond, and the default %v", tt.flag, text, tt.def)
			}
		})
	}
}

// TestBinaryHTTPBoundFlags: the command serves with the bounds its flags
// give: a body over -http-max-body-bytes is refused 413 (with
// -max-line-bytes left at its default), and with -http-max-sessions 1 an
// initialize while the one session has its stream open is refused 503.
func TestBinaryHTTPBoundFlags(t *testing.T) {
	p := startHTTPServer(t, "-http-max-body-bytes", "300", "-http-max-sessions", "1")
	defer p.stop()
	s := &httpTestServer{t: t, url: p.base + mcpPath}
	long := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 300) + `"},` + meta2026 + `}}`
	resp := s.post(stateless("tools/call", "echo"), long)
	if body := readBody(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "300-byte limit") {
		t.Fatalf("a body over -http-max-body-bytes: status %d, body %s; want 413", resp.StatusCode, body)
	}
	session := s.legacySession(ProtocolVersion20251125, `{}`)
	get := s.do(t.Context(), http.MethodGet, map[string]string{headerSessionID: session[headerSessionID], "Accept": "text/event-stream"}, "")
	defer get.Body.Close()
	if ev, err := newSSEReader(t, get).next(); err != nil || ev.id == "" {
		t.Fatalf("the session's GET stream: %+v, %v", ev, err)
	}
	resp = s.post(nil, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, errSessionCapacity.Message) {
		t.Fatalf("a second session beyond -http-max-sessions 1: status %d, body %s; want 503", resp.StatusCode, body)
	}
}

// The soft memory limit counts four of the largest messages of the
// transport served: lines on stdio, POST bodies with -http.
func TestMemoryLimitCountsTheTransportsMessages(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int64
	}{
		{[]string{"-max-inflight-bytes", "1000", "-max-line-bytes", "100", "-http-max-body-bytes", "300"}, 1000 + 4*100 + 16<<20},
		{[]string{"-http", ":0", "-max-inflight-bytes", "1000", "-max-line-bytes", "100", "-http-max-body-bytes", "300"}, 1000 + 4*300 + 16<<20},
	} {
		c, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := memoryLimit(c); got != tt.want {
			t.Errorf("%v: memory limit %d, want %d", tt.args, got, tt.want)
		}
	}
}
