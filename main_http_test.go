package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
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
