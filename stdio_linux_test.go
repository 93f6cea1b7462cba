//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pipeSize is the capacity of the pipe f is an end of (F_GETPIPE_SZ).
func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETPIPE_SZ, 0)
	if errno != 0 {
		t.Fatalf("F_GETPIPE_SZ: %v", errno)
	}
	return int(n)
}

// The child's stdout is a 4 KiB pipe whose reader takes 200 bytes every
// 10 ms, while 96 pipelined tools/call answers of about 450 bytes are due,
// with a WriteTimeout of 1s: writing them takes more than twice that (about
// 2.2 s), each answer a small part of it. (The timeout leaves the reader's
// ticks room on a loaded machine: at 250 ms a starved test process failed.)
// Every answer arrives whole, in full, and ServeStdio returns nil at the end
// of input (docs/explanation/contract.md, "Framing": WriteTimeout bounds each
// frame, never a write).
func TestServeStdioSlowSteadyReaderGetsEveryAnswer(t *testing.T) {
	const calls = 96
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, outW.Fd(), syscall.F_SETPIPE_SZ, 4096); errno != 0 {
		t.Skipf("F_SETPIPE_SZ: %v", errno)
	}
	cmd, stderr := startStdioChild(t, "1s", inR, outW)
	inR.Close()
	outW.Close()

	text := strings.Repeat("x", 380) // answers of about 450 bytes
	var in strings.Builder
	in.WriteString(initializeLine)
	for i := 1; i <= calls; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`+"\n", i, text)
	}
	go func() {
		io.WriteString(inW, in.String())
		inW.Close()
	}()

	// The slow, steady reader: 200 bytes a tick into a reader that takes
	// no more than it is given.
	got := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 200)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			n, err := outR.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- all
	}()
	status := exitStatus(t, cmd)
	all := <-got
	if status != 0 {
		t.Fatalf("exit status %d after %d bytes; stderr %q", status, len(all), stderr.String())
	}
	protocol, ok := strings.CutSuffix(string(all), "returned: <nil>\n")
	if !ok {
		t.Fatalf("stdout does not end with ServeStdio's return: %q", all[max(0, len(all)-100):])
	}
	sc := bufio.NewScanner(strings.NewReader(protocol))
	sc.Buffer(nil, 1<<20)
	answered := map[int]bool{}
	for sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %.100q: %v", sc.Text(), err)
		}
		if m.ID > 0 && (len(m.Result.Content) != 1 || m.Result.Content[0].Text != text) {
			t.Fatalf("answer %d: %.100q", m.ID, sc.Text())
		}
		answered[m.ID] = true
	}
	if len(answered) != calls+1 {
		t.Fatalf("%d answers of %d; stderr %q", len(answered), calls+1, stderr.String())
	}
	if n := pipeSize(t, outR); n != 4096 {
		t.Fatalf("ServeStdio changed the capacity of the pipe its client chose from 4096 to %d", n)
	}
}

// ServeStdio enlarges its stdin and stdout pipes to pipeBytes when they
// have Linux's default capacity (growPipe).
func TestServeStdioGrowsDefaultPipes(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err != nil {
		t.Skipf("pipe-max-size: %v", err)
	} else if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || max < pipeBytes {
		t.Skipf("pipe-max-size %q is below %d", b, pipeBytes)
	}
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	if pipeSize(t, inW) != 16*os.Getpagesize() || pipeSize(t, outR) != 16*os.Getpagesize() {
		t.Skipf("new pipes have %d bytes, not Linux's default", pipeSize(t, inW))
	}
	cmd, stderr := startStdioChild(t, "5s", inR, outW)
	inR.Close()
	outW.Close()
	// The answer to a ping comes after ServeStdio set its pipes up.
	ping(t, inW, newLineFeed(t, outR), 1)
	if in, out := pipeSize(t, inW), pipeSize(t, outR); in != pipeBytes || out != pipeBytes {
		t.Fatalf("pipe capacities: stdin %d, stdout %d; want %d", in, out, pipeBytes)
	}
	inW.Close()
	if status := exitStatus(t, cmd); status != 0 {
		t.Fatalf("exit status %d; stderr %q", status, stderr.String())
	}
}
