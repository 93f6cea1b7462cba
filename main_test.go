package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBinary builds the real command once per test run.
func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpstdio-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcpstdio")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

// serverProcess is the real binary on OS pipes.
type serverProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	outR   io.ReadCloser
	stderr *strings.Builder
	errMu  *sync.Mutex
}

func startServer(t *testing.T, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(serverBinary(t), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{t: t, cmd: cmd, stdin: stdin, outR: outR, stdout: bufio.NewReaderSize(outR, 1<<20), stderr: &strings.Builder{}, errMu: &sync.Mutex{}}
	cmd.Stderr = lockedWriter{p.errMu, p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (p *serverProcess) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to the server: %v", err)
	}
}

// recv reads one line from the server's stdout.
func (p *serverProcess) recv() map[string]any {
	p.t.Helper()
	line, err := p.stdout.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("reading from the server: %v (stderr: %s)", err, p.stderrText())
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		p.t.Fatalf("server wrote a line that is not JSON: %q", line)
	}
	for _, b := range line {
		if b >= 0x80 {
			p.t.Fatalf("server wrote a non-ASCII byte: %q", line)
		}
	}
	return m
}

// call sends a request and returns its answer, which must be the next line.
func (p *serverProcess) call(line string) map[string]any {
	p.t.Helper()
	p.send(line)
	return p.recv()
}

// exit closes stdin, reads what the server still writes, and returns the exit
// status with those lines.
func (p *serverProcess) exit() (int, []map[string]any) {
	p.t.Helper()
	p.stdin.Close()
	var rest []map[string]any
	for {
		line, err := p.stdout.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				p.t.Fatalf("server wrote a line that is not JSON: %q", line)
			}
			rest = append(rest, m)
		}
		if err != nil {
			break
		}
	}
	return p.wait(), rest
}

// wait returns the exit status; death by a signal fails the test.
func (p *serverProcess) wait() int {
	p.t.Helper()
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.t.Fatalf("server killed by signal %v", ws.Signal())
		}
		return exitErr.ExitCode()
	default:
		p.t.Fatalf("waiting for the server: %v", err)
		return -1
	}
}

func (p *serverProcess) stderrText() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.stderr.String()
}

func resultOf(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", m)
	}
	return r
}

const (
	binMeta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	initLine    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
)

// A whole session over real pipes: a legacy handshake, stateless 2026
// requests on the same process, bad input, and a clean exit at EOF.
func TestBinarySessionOverPipes(t *testing.T) {
	p := startServer(t)
	if v := resultOf(t, p.call(initLine))["protocolVersion"]; v != "2025-11-25" {
		t.Fatalf("negotiated %v", v)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	echo := p.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo  wörld"}}}`)
	content := resultOf(t, echo)["content"].([]any)[0].(map[string]any)
	if content["text"] != "héllo  wörld" {
		t.Fatalf("echo answered %v", echo)
	}
	if got := p.call(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); len(resultOf(t, got)) != 0 {
		t.Fatalf("ping answered %v", got)
	}
	if got := p.call(`{bad json`); got["error"].(map[string]any)["code"] != float64(CodeParseError) {
		t.Fatalf("bad JSON answered %v", got)
	}
	list := p.call(`{"jsonrpc":"2.0","id":"s1","method":"tools/list","params":{` + binMeta2026 + `}}`)
	if resultOf(t, list)["resultType"] != "complete" {
		t.Fatalf("stateless tools/list answered %v", list)
	}
	p.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":100}}}`)
	code, rest := p.exit()
	if code != 0 {
		t.Fatalf("exit status %d, stderr: %s", code, p.stderrText())
	}
	if len(rest) != 1 || rest[0]["id"] != float64(9) || rest[0]["result"] == nil {
		t.Fatalf("request in flight at EOF answered %v", rest)
	}
}

// The Go SDK client's way in: server/discover first, then initialize on the
// same process when it is told to speak 2025-11-25.
func TestBinaryDiscoverThenInitialize(t *testing.T) {
	p := startServer(t)
	disc := resultOf(t, p.call(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+binMeta2026+`}}`))
	if vs := disc["supportedVersions"].([]any); len(vs) != 3 || vs[0] != "2026-07-28" {
		t.Fatalf("supportedVersions %v", vs)
	}
	if v := resultOf(t, p.call(strings.Replace(initLine, `"id":1`, `"id":2`, 1)))["protocolVersion"]; v != "2025-11-25" {
		t.Fatalf("negotiated %v", v)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := resultOf(t, p.call(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	if _, ok := list["resultType"]; ok || len(list["tools"].([]any)) == 0 {
		t.Fatalf("legacy tools/list answered %v", list)
	}
	if code, rest := p.exit(); code != 0 || len(rest) != 0 {
		t.Fatalf("exit status %d, extra lines %v", code, rest)
	}
}

// A vanished reader is an orderly output failure: exit status 1, not death by
// SIGPIPE.
func TestBinaryExitsOneWhenStdoutCloses(t *testing.T) {
	p := startServer(t)
	p.outR.Close()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	p.stdin.Close()
	if code := p.wait(); code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	if !strings.Contains(p.stderrText(), "output failed") {
		t.Fatalf("stderr does not name the output failure: %s", p.stderrText())
	}
}

// Nobody reads stdout: the blocked write times out and the process exits 1
// with an output-failed error instead of hanging.
func TestBinaryWriteTimeoutWhenNobodyReads(t *testing.T) {
	p := startServer(t, "-write-timeout", "200ms")
	big := strings.Repeat("x", 64<<10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"}}}` + "\n"
			if _, err := io.WriteString(p.stdin, line); err != nil {
				return // the server has exited
			}
		}
	}()
	err := p.cmd.Wait()
	<-done
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("server ended with %v, want exit status 1", err)
	}
	if !strings.Contains(p.stderrText(), "output failed: write timeout after 200ms") {
		t.Fatalf("stderr: %s", p.stderrText())
	}
}

func TestBinaryBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"-notification-methods", "notifications/progress"},
		{"-notification-methods", "hello"},
		{"-protocols", "1999-01-01"},
		{"-max-line-bytes", "0"},
		{"-write-timeout", "-1s"},
		{"-notify-every", "1s"},
		{"-log-level", "loud"},
		{"-http", "no-port"},
		{"-http", ":0", "-http-keep-alive", "0s"},
		{"-http", ":0", "-http-allowed-origins", "example.com"},
	} {
		cmd := exec.Command(serverBinary(t), args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 || stderr.Len() == 0 {
			t.Errorf("%v: %v, stderr %q; want exit status 2 and a message", args, err, stderr.String())
		}
	}
}

// -notify-every sends the allowed application notification while the
// connection is open.
func TestBinaryNotifyEvery(t *testing.T) {
	p := startServer(t, "-notification-methods", "notifications/example/heartbeat", "-notify-every", "10ms")
	m := p.recv()
	if m["method"] != "notifications/example/heartbeat" {
		t.Fatalf("got %v", m)
	}
	if _, hasID := m["id"]; hasID {
		t.Fatalf("notification has an id: %v", m)
	}
	if code, _ := p.exit(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}
