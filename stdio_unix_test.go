//go:build unix && !solaris

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// blockingPipe returns a pipe in blocking mode whose ends are not inherited
// by other tests' children (os.Pipe's ends are non-blocking, which would hide
// what the server does to them).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	syscall.ForkLock.RLock()
	err := syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// pollable returns f in non-blocking mode, as a file the runtime's poller
// waits on, so that closing it ends a Read in progress at once; f is
// closed. The mode is f's open file description's: use it for the test's
// own end of a pipe only.
func pollable(t *testing.T, f *os.File) *os.File {
	t.Helper()
	fd, err := dupCloseOnExec(int(f.Fd()))
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := os.NewFile(uintptr(fd), f.Name())
	t.Cleanup(func() { p.Close() })
	return p
}

func nonBlocking(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := fileStatusFlags(int(f.Fd()))
	if err != nil {
		t.Fatalf("F_GETFL of %s: %v", f.Name(), err)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// startStdioChild starts the test binary as a server of stdin and stdout
// through ServeStdio with the given WriteTimeout (runStdioChild). Its
// stderr may be read once Wait has returned.
func startStdioChild(t *testing.T, writeTimeout string, stdin, stdout *os.File) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioChildEnv+"="+writeTimeout)
	var stderr strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
	startCommand(t, cmd)
	return cmd, &stderr
}

// exitStatus waits for cmd and returns its exit status.
func exitStatus(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// lineFeed reads r's lines on a goroutine of its own, so that a test can
// wait for the next one and fail rather than hang when it never comes.
type lineFeed struct {
	t     *testing.T
	lines chan string
}

func newLineFeed(t *testing.T, r io.Reader) *lineFeed {
	f := &lineFeed{t: t, lines: make(chan string, 16)}
	go func() {
		defer close(f.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	return f
}

// next returns the next line; it fails the test at the end of r, or when
// no line came within failAfter.
func (f *lineFeed) next() string {
	f.t.Helper()
	select {
	case line, ok := <-f.lines:
		if !ok {
			f.t.Fatal("the server's stdout ended")
		}
		return line
	case <-time.After(failAfter):
		f.t.Fatalf("no line from the server's stdout in %v", failAfter)
	}
	return ""
}

// ping sends a ping with id and checks that the next line answers it.
func ping(t *testing.T, in io.Writer, out *lineFeed, id int) {
	t.Helper()
	if _, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id); err != nil {
		t.Fatal(err)
	}
	if line, want := out.next(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id); line != want {
		t.Fatalf("ping answered %q, want %q", line, want)
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// ServeStdio makes its stdin and stdout pipes non-blocking while it serves
// and leaves the process as it found it however it returns: the pipes in
// their mode (blocking, or non-blocking when the parent chose so),
// descriptor 1 on the pipe again (the line the child prints after the
// return reaches the stream's reader), SIGPIPE still ignored; and after
// a cancelled ServeStdio the next one serves the same streams, with no read
// of the first one left to take its input. The test keeps its own copies of
// the child's stdin read end and stdout write end: they share the open file
// descriptions whose mode ServeStdio changes.
func TestServeStdioRestoresTheProcess(t *testing.T) {
	type pipes struct {
		cmd      *exec.Cmd
		inW      *os.File
		outR     *os.File
		out      *lineFeed
		inR      *os.File
		outW     *os.File
		serving  func() // checks that both pipes are non-blocking
		returned func(err string)
	}
	cases := []struct {
		name string
		end  func(t *testing.T, p pipes)
		// status is the child's exit status; stderr, what it reported.
		status int
		stderr []string
		// parentNonBlocking starts the child on pipes already in
		// non-blocking mode, which must stay so.
		parentNonBlocking bool
	}{
		{name: "end of input", end: func(t *testing.T, p pipes) {
			p.inW.Close()
			p.returned("<nil>")
		}, stderr: []string{"ServeStdio returned: <nil>; SIGPIPE ignored after: true"}},
		// The child's print to its stdout after the return meets the
		// closed pipe on descriptor 1: an error, SIGPIPE being ignored
		// still, not the end of the process.
		{name: "output failure", end: func(t *testing.T, p pipes) {
			p.outR.Close()
			io.WriteString(p.inW, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
		}, status: 1, stderr: []string{"ServeStdio returned: output failed", "; SIGPIPE ignored after: true"}},
		{name: "cancelled, then served again", end: func(t *testing.T, p pipes) {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.returned("context canceled")
			ping(t, p.inW, p.out, 2)
			p.serving()
			p.inW.Close()
			p.returned("<nil>")
		}, stderr: []string{
			"ServeStdio returned: context canceled; SIGPIPE ignored after: true",
			"ServeStdio returned: <nil>; SIGPIPE ignored after: true",
		}},
		{name: "parent's non-blocking mode kept", end: func(t *testing.T, p pipes) {
			p.inW.Close()
			p.returned("<nil>")
		}, stderr: []string{"ServeStdio returned: <nil>; SIGPIPE ignored after: true"}, parentNonBlocking: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW := blockingPipe(t)
			outR, outW := blockingPipe(t)
			if tc.parentNonBlocking {
				for _, f := range []*os.File{inR, outW} {
					if err := syscall.SetNonblock(int(f.Fd()), true); err != nil {
						t.Fatal(err)
					}
				}
			}
			outR = pollable(t, outR) // closed under the reading lineFeed
			cmd, stderr := startStdioChild(t, "5s", inR, outW)
			p := pipes{cmd: cmd, inW: inW, outR: outR, out: newLineFeed(t, outR), inR: inR, outW: outW}
			p.serving = func() {
				t.Helper()
				if in, out := nonBlocking(t, inR), nonBlocking(t, outW); !in || !out {
					t.Fatalf("while serving: stdin non-blocking %v, stdout non-blocking %v; want both", in, out)
				}
			}
			p.returned = func(err string) {
				t.Helper()
				if line, want := p.out.next(), "returned: "+err; line != want {
					t.Fatalf("after ServeStdio returned, stdout got %q, want %q", line, want)
				}
			}
			ping(t, inW, p.out, 1)
			p.serving()
			tc.end(t, p)
			if status := exitStatus(t, cmd); status != tc.status {
				t.Fatalf("exit status %d, want %d; stderr %q", status, tc.status, stderr.String())
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Fatalf("stderr %q lacks %q", stderr.String(), want)
				}
			}
			if in, out := nonBlocking(t, inR), nonBlocking(t, outW); in != tc.parentNonBlocking || out != tc.parentNonBlocking {
				t.Fatalf("after exit: stdin non-blocking %v, stdout non-blocking %v; want %v", in, out, tc.parentNonBlocking)
			}
		})
	}
}

// What else in the process writes to os.Stdout while ServeStdio serves (a
// tool's fmt.Println) lands on stderr, never in the protocol: over pipes
// (the coordinator writes with deadlines) and over regular files, which
// ServeStdio leaves blocking (the fallback: its writing goroutine writes).
// After the return, descriptor 1 is the stream again.
func TestServeStdioKeepsStrayWritesOutOfTheStream(t *testing.T) {
	const requests = initializeLine +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stray","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}` + "\n"
	serveOver := map[string]func(t *testing.T) (stdout []byte, stderr string){
		"pipes": func(t *testing.T) ([]byte, string) {
			inR, inW := blockingPipe(t)
			outR, outW := blockingPipe(t)
			cmd, stderr := startStdioChild(t, "5s", inR, outW)
			inR.Close()
			outW.Close()
			go func() {
				io.WriteString(inW, requests)
				inW.Close()
			}()
			stdout, err := io.ReadAll(outR)
			if err != nil {
				t.Fatal(err)
			}
			if status := exitStatus(t, cmd); status != 0 {
				t.Fatalf("exit status %d; stderr %q", status, stderr.String())
			}
			return stdout, stderr.String()
		},
		"regular files": func(t *testing.T) ([]byte, string) {
			in, err := os.CreateTemp(t.TempDir(), "stdin")
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if _, err := in.WriteString(requests); err != nil {
				t.Fatal(err)
			}
			if _, err := in.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			out, err := os.CreateTemp(t.TempDir(), "stdout")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd, stderr := startStdioChild(t, "5s", in, out)
			if status := exitStatus(t, cmd); status != 0 {
				t.Fatalf("exit status %d; stderr %q", status, stderr.String())
			}
			stdout, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			return stdout, stderr.String()
		},
	}
	for name, serve := range serveOver {
		t.Run(name, func(t *testing.T) {
			stdout, stderr := serve(t)
			lines := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n")
			// The answers come in no set order, before the return.
			slices.Sort(lines[:max(0, len(lines)-1)])
			want := []string{
				`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"`,
				`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"printed"}]}}`,
				`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`,
				"returned: <nil>",
			}
			if len(lines) != len(want) {
				t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(want), stdout)
			}
			for i, w := range want {
				if !strings.HasPrefix(lines[i], w) {
					t.Fatalf("stdout line %d is %q, want it to start with %q:\n%s", i+1, lines[i], w, stdout)
				}
			}
			if !strings.Contains(stderr, strayLine+"\n") {
				t.Fatalf("stderr lacks the stray line %q: %q", strayLine, stderr)
			}
		})
	}
}

// Nobody reads the child's stdout: the blocked write times out after
// WriteTimeout, ServeStdio returns the output-failed error, and the process
// ends instead of hanging.
func TestServeStdioStalledOutputEndsTheConnection(t *testing.T) {
	inR, inW := blockingPipe(t)
	_, outW := blockingPipe(t) // its read end is never read
	cmd, stderr := startStdioChild(t, "200ms", inR, outW)
	inR.Close()
	outW.Close()
	big := strings.Repeat("x", 64<<10)
	written := make(chan struct{})
	go func() {
		defer close(written)
		// Initialized, so that each answer is the 64 KiB text: more than
		// the 1 MiB a Linux pipe is grown to soon.
		if _, err := io.WriteString(inW, initializeLine); err != nil {
			return
		}
		for i := range 2000 {
			line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"}}}` + "\n"
			if _, err := io.WriteString(inW, line); err != nil {
				return // the child has exited
			}
		}
	}()
	status := exitStatus(t, cmd)
	inW.Close()
	<-written
	if status != 1 || !strings.Contains(stderr.String(), "ServeStdio returned: output failed: write timeout after 200ms") {
		t.Fatalf("exit status %d, stderr %q; want 1 and the write timeout", status, stderr.String())
	}
}

// The child's stderr is a pipe nobody reads any more, as when a client
// that went away took it along: what the process writes there (a tool's
// print to os.Stdout, which lands on stderr; the child's report after the
// return) fails with an error instead of ending the process with SIGPIPE,
// while ServeStdio serves and after it returned.
func TestServeStdioSurvivesAClosedStderr(t *testing.T) {
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	errR, errW := blockingPipe(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioChildEnv+"=5s")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	startCommand(t, cmd)
	inR.Close()
	outW.Close()
	errW.Close()
	errR.Close()
	out := newLineFeed(t, outR)
	if _, err := io.WriteString(inW, initializeLine+`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stray","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"jsonrpc":"2.0","id":0,"result":`, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"printed"}]}}`} {
		if line := out.next(); !strings.HasPrefix(line, want) {
			t.Fatalf("stdout got %q, want %q", line, want)
		}
	}
	ping(t, inW, out, 2)
	inW.Close()
	if line := out.next(); line != "returned: <nil>" {
		t.Fatalf("after ServeStdio returned, stdout got %q", line)
	}
	if status := exitStatus(t, cmd); status != 0 {
		t.Fatalf("the child ended with %v, want exit status 0", cmd.ProcessState)
	}
}
