package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBinaryHTTPDrainIsBounded runs the command with -http and, on SIGTERM,
// a connection that never carried a request and a client trickling a body:
// nothing being in flight, the second is answered 503 "Server shutting
// down" at once (it used to wait for ReadBodyTimeout, 30s), the first is
// closed, and the process exits 0.
func TestBinaryHTTPDrainIsBounded(t *testing.T) {
	p := startHTTPServer(t, "-write-timeout", "100ms")
	addr := strings.TrimPrefix(p.base, "http://")
	unused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	trickling, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer trickling.Close()
	if _, err := io.WriteString(trickling, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(trickling)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("after the headers: %v (%v), want 100 Continue", resp, err)
	}
	if _, err := io.WriteString(trickling, `{"jsonrpc":`); err != nil {
		t.Fatal(err)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the trickling client: %v, want an answer", err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, errShuttingDown.Message) {
		t.Fatalf("the trickling client: status %d, body %s; want 503 %q", resp.StatusCode, body, errShuttingDown.Message)
	}
	if n, err := unused.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("unused connection: read %d bytes (%v), want EOF", n, err)
	}
	<-p.stderrDone
	if status := p.wait(); status != 0 {
		t.Fatalf("after SIGTERM: exit status %d, want 0; stderr:\n%s", status, p.stderrText())
	}
}

// TestBinaryHTTPWritesProfiles: -cpuprofile and -memprofile work with -http,
// as on stdio: both files are written (gzipped pprof data) when the process
// drains after SIGTERM.
func TestBinaryHTTPWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	p := startHTTPServer(t, "-cpuprofile", cpu, "-memprofile", mem)
	s := &httpTestServer{t: t, url: p.base + mcpPath}
	resp := s.post(stateless("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: status %d, body %.300s", resp.StatusCode, body)
	}
	if status := p.stop(); status != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", status, p.stderrText())
	}
	for _, file := range []string{cpu, mem} {
		data, err := os.ReadFile(file)
		if err != nil || !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes (%v), want a gzipped profile", filepath.Base(file), len(data), err)
		}
	}
}
