//go:build unix && !solaris

package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The server makes its stdin and stdout pipes non-blocking while it serves
// (it serves them with NewStdioTransport) and puts them back in blocking
// mode however it ends, so the next program of a `server; cat` script does
// not inherit a non-blocking terminal or pipe: the command's signals, exit
// statuses and flag errors keep ServeStdio's contract. The test keeps its own copies of the server's stdin read end and
// stdout write end: they share the open file descriptions whose mode the
// server changes.
func TestBinaryRestoresBlockingStdio(t *testing.T) {
	endOfInput := func(_ *exec.Cmd, inW, _ *os.File) { inW.Close() }
	cases := []struct {
		name     string
		args     []string
		serves   bool // answers a ping before end is called
		end      func(cmd *exec.Cmd, inW, outR *os.File)
		wantCode int
		stderr   string
		// parentNonBlocking starts the server on pipes already in
		// non-blocking mode, which must stay so.
		parentNonBlocking bool
	}{
		{name: "end of input", serves: true, end: endOfInput},
		{name: "output failure", serves: true, end: func(_ *exec.Cmd, inW, outR *os.File) {
			outR.Close()
			io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
		}, wantCode: 1, stderr: "output failed"},
		{name: "SIGTERM", serves: true, end: func(cmd *exec.Cmd, _, _ *os.File) { cmd.Process.Signal(syscall.SIGTERM) }, wantCode: 1, stderr: "stopped by signal"},
		{name: "SIGINT", serves: true, end: func(cmd *exec.Cmd, _, _ *os.File) { cmd.Process.Signal(os.Interrupt) }, wantCode: 1, stderr: "stopped by signal"},
		// The transport refuses the method before stdio changes mode.
		{name: "flag refused by the transport", args: []string{"-notification-methods", "hello"}, end: func(*exec.Cmd, *os.File, *os.File) {}, wantCode: 2, stderr: "hello"},
		{name: "parent's non-blocking mode kept", serves: true, end: endOfInput, parentNonBlocking: true},
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
			var stderr strings.Builder
			cmd := exec.Command(serverBinary(t), tc.args...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
			startCommand(t, cmd)
			if tc.serves {
				if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
					t.Fatal(err)
				}
				if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
					t.Fatalf("ping answered %q, %v", line, err)
				}
				// Serving: both descriptions are non-blocking, which is
				// what this test checks is undone.
				if !nonBlocking(t, inR) || !nonBlocking(t, outW) {
					t.Fatalf("while serving: stdin non-blocking %v, stdout non-blocking %v; want both", nonBlocking(t, inR), nonBlocking(t, outW))
				}
			}
			tc.end(cmd, inW, outR)
			err := cmd.Wait()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("exit status %d, stderr %q; want %d and %q", code, stderr.String(), tc.wantCode, tc.stderr)
			}
			if in, out := nonBlocking(t, inR), nonBlocking(t, outW); in != tc.parentNonBlocking || out != tc.parentNonBlocking {
				t.Fatalf("after exit: stdin non-blocking %v, stdout non-blocking %v; want %v", in, out, tc.parentNonBlocking)
			}
		})
	}
}
