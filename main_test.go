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
	startCommand(t, cmd)
	return p
}

// startCommand starts cmd, and kills it at the end of the test unless it
// has been waited for.
func startCommand(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
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
	if vs := disc["supportedVersions"].([]any); len(vs) != 5 || vs[0] != "2026-07-28" {
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
		// Initialized, so that each answer is the 64 KiB text: more than
		// the 1 MiB the binary gives its stdout pipe (growPipe) soon.
		if _, err := io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
			return
		}
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
		{"-max-line-bytes", "-1"},
		{"-max-inflight-bytes", "-1"},
		{"-max-tasks-per-owner", "-1"},
		{"-task-poll-interval", "-1ms"},
		{"-write-timeout", "-1s"},
		{"-max-concurrency", "unlimited"},
		{"-notify-every", "1s"},
		{"-log-level", "loud"},
		{"-http", "no-port"},
		{"-http", ":0", "-http-keep-alive", "-1s"},
		{"-http", ":0", "-http-allowed-origins", "example.com"},
		{"-http", ":0", "-notification-methods", "notifications/example/x"},
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

// -max-inflight-bytes is the budget of the input admitted: with one byte, a
// request is refused while another runs.
func TestBinaryMaxInflightBytes(t *testing.T) {
	p := startServer(t, "-max-inflight-bytes", "1")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},` + binMeta2026 + `}}`)
	// Lines are admitted in order: the sleep holds the budget when echo comes.
	got := p.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + binMeta2026 + `}}`)
	if e, _ := got["error"].(map[string]any); e == nil || e["message"] != "Server execution capacity exhausted" {
		t.Fatalf("echo answered %v", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if code, _ := p.exit(); code != 0 {
		t.Fatalf("exit status %d", code)
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

// writeKeyFile writes content to a fresh file and returns its name.
func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestParseFlagsStateKeyFile(t *testing.T) {
	base64Key := "q3f0b6Yl0mXh1c4R2Jc0gWm1Yw9pZ2t6b3N0YXRla2V5" // 44 characters
	raw := "\x00\x01 \n\xff" + strings.Repeat("k", 27)          // 32 bytes, whitespace inside
	tests := []struct {
		name    string
		content string
		want    string
		wantErr string
	}{
		{"base64 with a newline", base64Key + "\n", base64Key, ""},
		{"trailing CRLF and spaces", base64Key + " \t\r\n", base64Key, ""},
		{"raw bytes", raw, raw, ""},
		{"31 bytes and a newline", strings.Repeat("k", 31) + "\n", "", "holds 31 bytes once trailing whitespace is trimmed, want at least 32"},
		{"only whitespace", strings.Repeat(" ", 40) + "\n", "", "holds 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			c, err := parseFlags([]string{"-state-key-file", writeKeyFile(t, tt.content)}, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(stderr.String(), "-state-key-file: ") || !strings.Contains(stderr.String(), tt.wantErr) {
					t.Fatalf("parseFlags = %v, stderr %q; want an error mentioning %q", err, stderr.String(), tt.wantErr)
				}
				return
			}
			if err != nil || string(c.stateKey) != tt.want {
				t.Fatalf("parseFlags = %q, %v; want %q", c.stateKey, err, tt.want)
			}
		})
	}
	var stderr strings.Builder
	if _, err := parseFlags([]string{"-state-key-file", filepath.Join(t.TempDir(), "missing")}, &stderr); err == nil || !strings.Contains(stderr.String(), "-state-key-file: open ") {
		t.Errorf("missing file: %v, stderr %q", err, stderr.String())
	}
	if c, err := parseFlags(nil, &stderr); err != nil || c.stateKey != nil {
		t.Errorf("no flag: state key %q, %v; want nil", c.stateKey, err)
	}
}

// A short key file is a bad flag: exit status 2 and a message.
func TestBinaryShortStateKeyFile(t *testing.T) {
	cmd := exec.Command(serverBinary(t), "-state-key-file", writeKeyFile(t, "too short\n"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 || !strings.Contains(stderr.String(), "-state-key-file") {
		t.Fatalf("%v, stderr %q; want exit status 2 and a message naming -state-key-file", err, stderr.String())
	}
}

// Two processes started with the same -state-key-file are replicas: the
// second round of a multi-round tool call may reach either. A process with
// another key refuses the state.
func TestBinaryReplicasShareRequestState(t *testing.T) {
	key := writeKeyFile(t, strings.Repeat("s", 32)+"\n")
	other := writeKeyFile(t, strings.Repeat("o", 32)+"\n")
	call := func(args ...string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{}` + strings.Join(args, "") +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	}
	issuer := startServer(t, "-state-key-file", key)
	first := resultOf(t, issuer.call(call()))
	state, ok := first["requestState"].(string)
	if first["resultType"] != "input_required" || !ok {
		t.Fatalf("round 1 answered %v", first)
	}
	round2 := call(`,"inputResponses":{"step1":{"action":"accept","content":{"name":"Alice"}}},"requestState":` + strconv.Quote(state))

	replica := startServer(t, "-state-key-file", key)
	if got := resultOf(t, replica.call(round2)); got["resultType"] != "input_required" || got["requestState"] == nil {
		t.Fatalf("the replica answered round 2 with %v, want the next round", got)
	}
	stranger := startServer(t, "-state-key-file", other)
	refused := stranger.call(round2)
	if e, _ := refused["error"].(map[string]any); e == nil || e["code"] != float64(CodeInvalidParams) || e["message"] != msgRequestStateInvalid {
		t.Fatalf("a process with another key answered %v, want -32602 %q", refused, msgRequestStateInvalid)
	}
	for _, p := range []*serverProcess{issuer, replica, stranger} {
		if code, _ := p.exit(); code != 0 {
			t.Errorf("exit status %d, stderr %s", code, p.stderrText())
		}
	}
}

// The task flags reach the runtime: a task of the binary suggests
// -task-poll-interval and lives -task-ttl, and -max-tasks-per-owner bounds
// the tasks of one connection.
func TestBinaryTaskFlags(t *testing.T) {
	p := startServer(t, "-max-tasks-per-owner", "1", "-task-poll-interval", "2s", "-task-ttl", "90s")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	created := resultOf(t, p.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":600},`+meta+`}}`))
	if created["resultType"] != "task" || created["pollIntervalMs"] != float64(2000) || created["ttlMs"] != float64(90000) {
		t.Fatalf("tools/call answered %v", created)
	}
	refused := p.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":600},` + meta + `}}`)
	if e, _ := refused["error"].(map[string]any); e["message"] != "Server task capacity exhausted: this client holds 1 tasks, its limit" {
		t.Fatalf("a second task answered %v", refused)
	}
	cancel := p.call(`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"` + created["taskId"].(string) + `",` + meta + `}}`)
	if resultOf(t, cancel)["resultType"] != "complete" {
		t.Fatalf("tasks/cancel answered %v", cancel)
	}
	if code, rest := p.exit(); code != 0 || len(rest) != 0 {
		t.Fatalf("exit status %d, frames %v, stderr: %s", code, rest, p.stderrText())
	}
}
