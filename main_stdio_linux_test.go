//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fSetPipeSize is Linux's F_SETPIPE_SZ fcntl command (not in package
// syscall): it sets a pipe's capacity.
const fSetPipeSize = 1031

// The binary's stdout is a 4 KiB pipe whose reader takes 200 bytes every
// 10 ms, while 96 pipelined tools/call answers of about 450 bytes are due,
// with -write-timeout 1s: writing them takes more than twice that (about
// 2.2 s), each answer a small part of it. (The timeout leaves the reader's
// ticks room on a loaded machine: at 250 ms a starved test process failed.)
// Every answer arrives whole, in full, and the server exits 0 at the end of
// input (SPEC §3: WriteTimeout bounds each frame, never a write).
func TestBinarySlowSteadyReaderGetsEveryAnswer(t *testing.T) {
	const calls = 96
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, outW.Fd(), fSetPipeSize, 4096); errno != 0 {
		t.Skipf("F_SETPIPE_SZ: %v", errno)
	}
	var stderr strings.Builder
	cmd := exec.Command(serverBinary(t), "-write-timeout", "1s")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	startCommand(t, cmd)
	inR.Close()
	outW.Close()

	text := strings.Repeat("x", 380) // answers of about 450 bytes
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
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
	waitErr := cmd.Wait()
	all := <-got
	if waitErr != nil {
		t.Fatalf("exit: %v after %d bytes; stderr %q", waitErr, len(all), stderr.String())
	}
	sc := bufio.NewScanner(strings.NewReader(string(all)))
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
	if !strings.HasSuffix(string(all), "\n") || len(answered) != calls+1 {
		t.Fatalf("%d answers of %d (last byte %q); stderr %q", len(answered), calls+1, all[len(all)-1:], stderr.String())
	}
}
