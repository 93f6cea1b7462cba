package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The limits of the command's flags that bound what a client can hold.

func TestBinaryBadLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-max-client-concurrency", "2"}, // stdio has one client
		{"-max-client-inflight-bytes", "100"},
		{"-http", ":0", "-max-client-queue", "-1"},
		{"-http", ":0", "-http-max-connections", "-1"},
		{"-http", ":0", "-http-max-header-bytes", "-5"},
	} {
		cmd := exec.Command(serverBinary(t), args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 || !strings.Contains(stderr.String(), args[len(args)-2]) {
			t.Errorf("%v: %v, stderr %q; want exit status 2 and a message naming the flag", args, err, stderr.String())
		}
	}
}

// The command sets a soft memory limit of -max-inflight-bytes, 4 ×
// -max-line-bytes and 16 MiB, on stdio and with -http, unless GOMEMLIMIT is
// set; it logs the limit the runtime then has.
func TestBinarySoftMemoryLimit(t *testing.T) {
	const want = "bytes=" + "91886080" // 64 MiB + 4 × 2,000,000 + 16 MiB
	t.Setenv("GOMEMLIMIT", "")
	p := startServer(t, "-log-level", "debug")
	if status, _ := p.exit(); status != 0 || !strings.Contains(p.stderrText(), `soft memory limit" `+want) {
		t.Errorf("stdio: exit %d, stderr %s; want the limit %s", status, p.stderrText(), want)
	}
	h := startHTTPServer(t, "-log-level", "debug")
	h.stop()
	if text := h.stderrText(); !strings.Contains(text, `soft memory limit" `+want) {
		t.Errorf("-http: stderr %s; want the limit %s", text, want)
	}
	p = startServer(t, "-log-level", "debug", "-max-inflight-bytes", "1000", "-max-line-bytes", "100")
	if status, _ := p.exit(); status != 0 || !strings.Contains(p.stderrText(), `soft memory limit" bytes=16778616`) {
		t.Errorf("with other flags: exit %d, stderr %s; want the limit 16778616", status, p.stderrText())
	}
	t.Setenv("GOMEMLIMIT", "123MiB")
	h = startHTTPServer(t, "-log-level", "debug")
	h.stop()
	if text := h.stderrText(); !strings.Contains(text, `soft memory limit" bytes=128974848`) {
		t.Errorf("-http with GOMEMLIMIT=123MiB: stderr %s; want that limit", text)
	}
}

// With -http the collector's target is httpGCPercent unless GOGC is set;
// stdio leaves Go's.
func TestBinaryHTTPCollectorTarget(t *testing.T) {
	t.Setenv("GOGC", "")
	h := startHTTPServer(t, "-log-level", "debug")
	h.stop()
	if text := h.stderrText(); !strings.Contains(text, `collector target" gogc=`+strconv.Itoa(httpGCPercent)) {
		t.Errorf("-http: stderr %s; want the target %d", text, httpGCPercent)
	}
	t.Setenv("GOGC", "150")
	h = startHTTPServer(t, "-log-level", "debug")
	h.stop()
	if text := h.stderrText(); !strings.Contains(text, `collector target" gogc=150`) {
		t.Errorf("-http with GOGC=150: stderr %s; want that target", text)
	}
	t.Setenv("GOGC", "")
	p := startServer(t, "-log-level", "debug")
	if status, _ := p.exit(); status != 0 || strings.Contains(p.stderrText(), "collector target") {
		t.Errorf("stdio: exit %d, stderr %s; want Go's target, untouched", status, p.stderrText())
	}
}

// The command serves at most -http-max-connections connections: at the cap
// a third one is served at once, an idle keep-alive connection being
// closed for it, and the one in use stays served.
func TestBinaryHTTPMaxConnections(t *testing.T) {
	p := startHTTPServer(t, "-http-max-connections", "2")
	defer p.stop()
	addr := strings.TrimPrefix(p.base, "http://")
	dial := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(failAfter))
		return conn, bufio.NewReader(conn)
	}
	roundTrip := func(conn net.Conn, r *bufio.Reader) {
		t.Helper()
		if _, err := io.WriteString(conn, rawRequest(addr, "Content-Length: "+strconv.Itoa(len(rawListBody))+"\r\n", rawListBody)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	c1, r1 := dial()
	defer c1.Close()
	roundTrip(c1, r1) // idle from now on
	c2, r2 := dial()
	defer c2.Close()
	roundTrip(c2, r2)
	c3, r3 := dial()
	defer c3.Close()
	roundTrip(c3, r3) // served: an idle connection made room
	// Which idle one is closed depends on when net/http reports each idle,
	// after its answer is written; TestHTTPListenerShedsTheLongestIdleConnection
	// holds the order.
	closed := make(chan error, 2)
	for _, r := range []*bufio.Reader{r1, r2} {
		go func() {
			_, err := r.ReadByte()
			closed <- err
		}()
	}
	if err := <-closed; err != io.EOF {
		t.Fatalf("an idle connection: read %v, want EOF (closed for the third)", err)
	}
	roundTrip(c3, r3)
}

// The command's header limit is 64 KiB by default (-http-max-header-bytes):
// a larger header is answered 431 and its connection closed.
func TestBinaryHTTPMaxHeaderBytes(t *testing.T) {
	tests := []struct {
		args   []string
		header int
		want   int
	}{
		{nil, 60 << 10, http.StatusOK},
		{nil, 80 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{[]string{"-http-max-header-bytes", "200000"}, 80 << 10, http.StatusOK},
	}
	for _, tt := range tests {
		p := startHTTPServer(t, tt.args...)
		s := &httpTestServer{t: t, url: p.base + mcpPath}
		header := stateless("tools/list", "")
		header["X-Padding"] = strings.Repeat("p", tt.header)
		ctx, cancel := context.WithTimeout(context.Background(), failAfter)
		resp := s.do(ctx, http.MethodPost, header, rawListBody)
		io.Copy(io.Discard, resp.Body) // a 431 may be cut short: net/http hangs up after it
		resp.Body.Close()
		cancel()
		if resp.StatusCode != tt.want {
			t.Errorf("%v, a %d-byte header: status %d, want %d", tt.args, tt.header, resp.StatusCode, tt.want)
		}
		p.stop()
	}
}
