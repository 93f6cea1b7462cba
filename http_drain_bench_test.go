package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkBinaryHTTPDrain measures how long the command with -http (default
// flags) takes from SIGTERM to its exit when nothing is in flight and one
// client is connected: a connection that never carried a request (a
// client's spare), or a client trickling a body. Each op is one process;
// starting it is not timed. net/http's own Shutdown held the first for 5s
// and the second until ReadBodyTimeout (30s).
func BenchmarkBinaryHTTPDrain(b *testing.B) {
	for _, bc := range []struct {
		name    string
		connect func(b *testing.B, addr string) net.Conn
	}{
		{"unused-connection", func(b *testing.B, addr string) net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
		{"trickling-body", func(b *testing.B, addr string) net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusContinue {
				b.Fatalf("want 100 Continue, got %v (%v)", resp, err)
			}
			io.WriteString(c, `{"jsonrpc":`)
			return c
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				cmd := exec.Command(serverBinary(b), "-http", "127.0.0.1:0")
				stderr, err := cmd.StderrPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				lines := bufio.NewScanner(stderr)
				var addr string
				for addr == "" && lines.Scan() {
					if _, after, ok := strings.Cut(lines.Text(), "serving MCP over HTTP at http://"); ok {
						addr = strings.TrimSuffix(after, mcpPath)
					}
				}
				if addr == "" {
					cmd.Process.Kill()
					b.Fatal("no address announced")
				}
				go io.Copy(io.Discard, stderr)
				c := bc.connect(b, addr)
				b.StartTimer()
				cmd.Process.Signal(syscall.SIGTERM)
				err = cmd.Wait()
				b.StopTimer()
				c.Close()
				if err != nil {
					b.Fatalf("exit: %v", err)
				}
			}
		})
	}
}
