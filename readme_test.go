package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// readmeBlock matches a fenced block of README.md marked for this test: the
// comment names it, and the block follows on the next line.
var readmeBlock = regexp.MustCompile("(?s)<!-- README test: ([^ ]+) -->\n```[a-z]*\n(.*?)\n```\n")

// readmeBlocks returns README.md's marked blocks by name.
func readmeBlocks(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range readmeBlock.FindAllSubmatch(readme, -1) {
		blocks[string(m[1])] = string(m[2]) + "\n"
	}
	return blocks
}

// TestReadmeLibraryPath follows the README's library section as a newcomer
// would: in an empty module named example.com/hello it runs the copy
// command, adds the example server's files (its stdio main.go at the root,
// its HTTP main.go in httpcmd/), builds and vets them, then serves a session
// with each: a typed tool, a resource, a prompt, a tool failure, and over
// HTTP the graceful shutdown on SIGTERM.
func TestReadmeLibraryPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from the README")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("the copy command needs a POSIX shell")
	}
	blocks := readmeBlocks(t)
	for _, name := range []string{"copy.sh", "hello/server.go", "hello/main.go", "hello-http/main.go"} {
		if blocks[name] == "" {
			t.Fatalf("README.md has no block marked %q", name)
		}
	}
	checkout, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.26\n")
	write("server.go", blocks["hello/server.go"])
	write("main.go", blocks["hello/main.go"])
	write("httpcmd/server.go", blocks["hello/server.go"])
	write("httpcmd/main.go", blocks["hello-http/main.go"])
	copyCmd := exec.Command(bash, "-euc", blocks["copy.sh"])
	copyCmd.Dir = dir
	copyCmd.Env = append(os.Environ(), "MCPSTDIO="+checkout)
	if out, err := copyCmd.CombinedOutput(); err != nil {
		t.Fatalf("the copy command: %v\n%s", err, out)
	}
	copied, _ := filepath.Glob(filepath.Join(dir, "mcp", "*.go"))
	for _, f := range copied {
		if name := filepath.Base(f); !libraryFile(name) {
			t.Errorf("the copy command copied %s, which is not a library file", name)
		}
	}
	if len(copied) < 10 {
		t.Fatalf("the copy command copied %d files", len(copied))
	}
	bin := filepath.Join(dir, "bin")
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", bin + "/", "./", "./httpcmd"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Run("stdio", func(t *testing.T) { checkReadmeStdioServer(t, filepath.Join(bin, "hello")) })
	t.Run("http", func(t *testing.T) { checkReadmeHTTPServer(t, filepath.Join(bin, "httpcmd")) })
}

// checkReadmeStdioServer serves one session with the stdio example and
// checks each answer, then its exit at end of input.
func checkReadmeStdioServer(t *testing.T, binary string) {
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
		t.Fatalf("the stdio example: %v; stderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{
		`"id":1,"result":{"protocolVersion":"2025-11-25"`,
		`"id":2,"result":{"content":[{"type":"text","text":"{\"greeting\":\"Hello, Ada!\"}"}],"structuredContent":{"greeting":"Hello, Ada!"}}`,
		`"id":3,"result":{"content":[{"type":"text","text":"name is empty"}],"isError":true}`,
		`"id":4,"result":{"contents":[{"uri":"hello://motd","mimeType":"text/plain","text":"Be kind."}]}`,
		`"id":5,"result":{"messages":[{"role":"user","content":{"type":"text","text":"Write a warm welcome for Ada."}}]}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the stdio example's output lacks %s:\n%s", want, out)
		}
	}
}

// checkReadmeHTTPServer starts the HTTP example on a port of its own, serves
// a session, and checks that SIGTERM ends it with status 0.
func checkReadmeHTTPServer(t *testing.T, binary string) {
	cmd := exec.Command(binary, "-addr", "127.0.0.1:0")
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
		t.Fatalf("the HTTP example announced no address (%v)", lines.Err())
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
		t.Fatalf("the HTTP example after SIGTERM: %v, want exit status 0", err)
	}
}
