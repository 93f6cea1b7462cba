package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExampleHelloServer builds examples/hello, the server of the tutorial
// (docs/tutorial/first-server.md), as a newcomer would: in a copy of its
// module it runs vendor.sh (which copies the library with copy.sh), vets
// and builds it, then serves a session over stdio (a typed tool, a tool
// failure, a resource, a prompt) and one over HTTP, which SIGTERM ends
// gracefully.
func TestExampleHelloServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example's module")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("vendor.sh needs a POSIX shell")
	}
	checkout, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "server.go", "main.go", "vendor.sh"} {
		data, err := os.ReadFile(filepath.Join("examples", "hello", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vendor := exec.Command(sh, filepath.Join(dir, "vendor.sh"))
	vendor.Env = append(os.Environ(), "MCPSTDIO="+checkout)
	if out, err := vendor.CombinedOutput(); err != nil {
		t.Fatalf("vendor.sh: %v\n%s", err, out)
	}
	copied, _ := filepath.Glob(filepath.Join(dir, "mcp", "*.go"))
	for _, f := range copied {
		if name := filepath.Base(f); !libraryFile(name) {
			t.Errorf("vendor.sh copied %s, which is not a library file", name)
		}
	}
	if len(copied) < 10 {
		t.Fatalf("vendor.sh copied %d files", len(copied))
	}
	bin := filepath.Join(dir, "hello")
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", bin, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Run("stdio", func(t *testing.T) { checkHelloStdio(t, bin) })
	t.Run("http", func(t *testing.T) { checkHelloHTTP(t, bin) })
}

// checkHelloStdio serves one session with the example over stdio and
// checks each answer, then its exit at end of input.
func checkHelloStdio(t *testing.T, binary string) {
	cmd := exec.Command(binary)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":" "}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"hello://motd"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"welcome","arguments":{"name":"Ada"}}}`,
	}, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the example over stdio: %v; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{
		`"id":1,"result":{"protocolVersion":"2025-11-25"`,
		`"id":2,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}`,
		`"id":3,"result":{"content":[{"type":"text","text":"name is empty"}],"isError":true}`,
		`"id":4,"result":{"contents":[{"uri":"hello://motd","mimeType":"text/plain","text":"Be kind."}]}`,
		`"id":5,"result":{"messages":[{"role":"user","content":{"type":"text","text":"Write a warm welcome for Ada."}}]}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the example over stdio's output lacks %s:\n%s", want, out)
		}
	}
}

// checkHelloHTTP starts the example with -http on a port of its own, serves
// a session, and checks that SIGTERM ends it with status 0.
func checkHelloHTTP(t *testing.T, binary string) {
	cmd := exec.Command(binary, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	startCommand(t, cmd)
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "serving MCP at "); ok {
			url = after
		}
	}
	if url == "" {
		t.Fatalf("the example over HTTP announced no address (%v)", lines.Err())
	}
	go io.Copy(io.Discard, stderr)
	s := &httpTestServer{t: t, url: url}
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	resp := s.post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"structuredContent":{"greeting":"Hello, Ada!"}`) {
		t.Fatalf("tools/call over HTTP: status %d, body %s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the example over HTTP after SIGTERM: %v, want exit status 0", err)
	}
}
