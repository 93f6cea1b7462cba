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

// TestDocsTutorialServer builds examples/hello, the server of the tutorial
// (docs/tutorial/first-server.md), as a newcomer would: in a copy of its
// module it runs vendor.sh (which copies the library with copy.sh), vets
// and builds it, then runs the tutorial's exchanges with it (its checked
// blocks marked hello, rewritten with -update) and checks that SIGTERM ends
// it gracefully over HTTP.
func TestDocsTutorialServer(t *testing.T) {
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
	err = filepath.WalkDir(filepath.Join("examples", "hello"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("examples", "hello"), path)
		if strings.HasPrefix(rel, "mcp"+string(filepath.Separator)) {
			return nil // a copy of the library made in the checkout
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o755)
	})
	if err != nil {
		t.Fatal(err)
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
	bins := filepath.Join(dir, "bin")
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", bins + string(filepath.Separator), "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	bin := filepath.Join(bins, "hello")
	checkExchanges(t, docsExchanges(t, "hello"), func(t *testing.T, x pageExchange) []string {
		if x.kind == "stdio" {
			return runStdioExchange(t, x, bin)
		}
		base, _ := startHello(t, bin)
		return runCurlExchange(t, x, base)
	})
	t.Run("SIGTERM", func(t *testing.T) {
		base, cmd := startHello(t, bin)
		s := &httpTestServer{t: t, url: base + mcpPath}
		h := s.legacySession(ProtocolVersion20251125, `{}`)
		resp := s.post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
		if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"structuredContent":{"greeting":"Hello, Ada!"}`) {
			t.Fatalf("tools/call over HTTP: status %d, body %s", resp.StatusCode, body)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the example after SIGTERM: %v, want exit status 0", err)
		}
	})
}

// startHello starts the example with -http on a port of its own and
// returns its base URL ("http://127.0.0.1:PORT") and its process.
func startHello(t *testing.T, binary string) (string, *exec.Cmd) {
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
			url = strings.TrimSuffix(after, mcpPath)
		}
	}
	if url == "" {
		t.Fatalf("the example announced no address (%v)", lines.Err())
	}
	go io.Copy(io.Discard, stderr)
	return url, cmd
}
