package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBinaryServesHTTPAndDrainsOnSIGTERM runs the real command with -http on
// port 0: it names the bound address on stderr and in -http-addr-file,
// serves MCP at /mcp, and on SIGTERM lets the request in flight finish
// before it exits 0.
func TestBinaryServesHTTPAndDrainsOnSIGTERM(t *testing.T) {
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(serverBinary(t), "-http", "127.0.0.1:0", "-http-addr-file", addrFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "serving MCP over HTTP at "); ok {
			url = after
		}
	}
	if url == "" {
		t.Fatalf("no address on stderr (%v)", lines.Err())
	}
	go func() {
		for lines.Scan() {
		}
	}()
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
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
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
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v, want exit status 0", err)
	}
}
