package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// newListenerTestServer serves the reference catalog through an
// HTTPListener; it returns the server's address.
func newListenerTestServer(t *testing.T, opts HTTPListenerOptions) (addr string, ln *HTTPListener) {
	t.Helper()
	h, err := NewHTTPHandler(newHTTPCatalogRuntime(t), HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	ln, err = NewHTTPListener(srv.Listener, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	return ln.Addr().String(), ln
}

// rawRequest is a 2026 tools/list over HTTP/1.1, its body framed by the
// headers given.
func rawRequest(addr, framing, body string) string {
	return "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n" + framing + "\r\n" + body
}

const rawListBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`

// chunked frames body as one chunk and the last chunk.
func chunked(body string) string {
	return strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
}

// A request with both Content-Length and Transfer-Encoding is refused 400
// and its connection closed (RFC 9112 §6.1), also after a request served on
// the same connection; a chunked request alone is served and its
// connection kept.
func TestHTTPListenerRefusesContentLengthWithTransferEncoding(t *testing.T) {
	addr, _ := newListenerTestServer(t, HTTPListenerOptions{})
	tests := []struct {
		name    string
		framing string
		served  int // requests answered 200 before the 400
	}{
		{"both", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 0},
		{"both, the other order, other case", "transfer-encoding: chunked\r\ncontent-LENGTH: 5\r\n", 0},
		{"after a request served", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(failAfter))
			var input string
			for range tt.served {
				input += rawRequest(addr, "Content-Length: "+strconv.Itoa(len(rawListBody))+"\r\n", rawListBody)
			}
			input += rawRequest(addr, tt.framing, chunked(rawListBody))
			if _, err := io.WriteString(conn, input); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			for range tt.served {
				resp, err := http.ReadResponse(r, nil)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("the request before: %v %v", resp, err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if n, err := r.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after the 400: read %d bytes, %v; want the connection closed", n, err)
			}
		})
	}

	t.Run("chunked alone", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(failAfter))
		r := bufio.NewReader(conn)
		for range 2 { // the connection is kept: the second request is served on it
			if _, err := io.WriteString(conn, rawRequest(addr, "Transfer-Encoding: chunked\r\n", chunked(rawListBody))); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"tools":[`) {
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			}
		}
	})
}

// framingScan finds both headers in one block of lines however the input is
// split, and cuts at the start of the line that completes the pair.
func TestFramingScan(t *testing.T) {
	tests := []struct {
		name, input string
		cut         int // where the input is cut; -1 when it is not
	}{
		{"both", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", len("POST / HTTP/1.1\r\nContent-Length: 5\r\n")},
		{"bare newlines", "POST / HTTP/1.1\nTRANSFER-ENCODING: chunked\ncontent-length: 5\n\n", len("POST / HTTP/1.1\nTRANSFER-ENCODING: chunked\n")},
		{"in two requests", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", -1},
		{"a long line between", "A: " + strings.Repeat("x", 100) + "\r\nContent-Length: 1\r\nB: " + strings.Repeat("y", 100) + "\r\nTransfer-Encoding: x\r\n", len("A: " + strings.Repeat("x", 100) + "\r\nContent-Length: 1\r\nB: " + strings.Repeat("y", 100) + "\r\n")},
		{"names inside lines", "X-Content-Length: 1\r\nX: transfer-encoding: chunked\r\n", -1},
		{"folded", "Content-Length: 1\r\n Transfer-Encoding: chunked\r\n", -1},
		{"JSON", `{"a":"Content-Length: 1","b":"Transfer-Encoding: chunked"}`, -1},
		{"among lines skipped whole", "Host: a\r\nContent-Length: 1\r\nAccept: */*\r\nX: y\r\nTransfer-Encoding: chunked\r\n\r\n", len("Host: a\r\nContent-Length: 1\r\nAccept: */*\r\nX: y\r\n")},
		{"a blank line between", "Content-Length: 1\r\n\r\nTransfer-Encoding: chunked\r\n", -1},
		{"a blank line after a skipped one", "Content-Length: 1\r\nX: y\r\n\r\nTransfer-Encoding: chunked\r\n", -1},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 2, 7, len(tt.input)} {
			var s framingScan
			cut := -1
			for off := 0; off < len(tt.input) && cut < 0; off += step {
				end := min(off+step, len(tt.input))
				if c := s.scan([]byte(tt.input[off:end])); c >= 0 {
					cut = off + c
				}
			}
			// A line that began in an earlier piece is cut where this
			// piece starts: all of it before was handed on already.
			want := tt.cut
			if want >= 0 {
				want = max(want, lastPieceStart(tt.input, tt.cut, step))
			}
			if cut != want {
				t.Errorf("%s, in pieces of %d: cut at %d, want %d", tt.name, step, cut, want)
			}
		}
	}
}

// lastPieceStart is where the piece holding the end of the line that starts
// at lineStart begins, when input is read in pieces of step.
func lastPieceStart(input string, lineStart, step int) int {
	end := lineStart + strings.IndexByte(input[lineStart:], '\n')
	return end / step * step
}

// The listener serves MaxConnections connections; the next one is taken
// from the inner listener but waits, unserved, until one of them closes (none
// is idle), and Close ends the wait.
func TestHTTPListenerBoundsOpenConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &chanListener{conns: make(chan net.Conn, 4), closed: make(chan struct{})}
		var ends []net.Conn
		for range 4 {
			server, client := net.Pipe()
			inner.conns <- server
			ends = append(ends, client)
		}
		ln, err := NewHTTPListener(inner, HTTPListenerOptions{MaxConnections: 2})
		if err != nil {
			t.Fatal(err)
		}
		first, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		second, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				t.Errorf("third Accept: %v", err)
			}
			accepted <- c
		}()
		synctest.Wait()
		if len(inner.conns) != 1 || ln.Open() != 2 {
			t.Fatalf("with 2 open: %d connections taken from the inner listener, %d open; want 3 and 2", 4-len(inner.conns), ln.Open())
		}
		select {
		case <-accepted:
			t.Fatal("a third connection was accepted while two were open")
		default:
		}
		// The open ones are served meanwhile.
		go io.WriteString(ends[1], "x")
		if n, err := second.Read(make([]byte, 1)); n != 1 || err != nil {
			t.Fatalf("reading an open connection: %d, %v", n, err)
		}
		first.Close()
		first.Close() // frees one slot only
		third := <-accepted
		if ln.Open() != 2 {
			t.Fatalf("%d open, want 2", ln.Open())
		}
		go func() {
			_, err := ln.Accept()
			accepted <- nil
			if err != net.ErrClosed {
				t.Errorf("Accept ended by Close: %v, want net.ErrClosed", err)
			}
		}()
		synctest.Wait()
		ln.Close()
		<-accepted
		second.Close()
		third.Close()
		for _, c := range ends {
			c.Close()
		}
	})
}

// At the bound, a new connection is served at once by closing the
// connection idle longest between two requests (as ConnState reports it);
// an active one, or one that went back to active, is never closed for it.
func TestHTTPListenerShedsTheLongestIdleConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &chanListener{conns: make(chan net.Conn, 8), closed: make(chan struct{})}
		var ends []net.Conn
		for range 5 {
			server, client := net.Pipe()
			inner.conns <- server
			ends = append(ends, client)
		}
		ln, err := NewHTTPListener(inner, HTTPListenerOptions{MaxConnections: 3})
		if err != nil {
			t.Fatal(err)
		}
		var open []net.Conn
		for range 3 {
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
		}
		ln.ConnState(open[1], http.StateIdle) // idle longest: first to go idle
		ln.ConnState(open[2], http.StateIdle)
		ln.ConnState(open[0], http.StateActive)
		fourth, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ends[1].Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("the connection idle longest: read %v, want EOF (closed)", err)
		}
		if ln.Open() != 3 {
			t.Fatalf("%d open, want 3", ln.Open())
		}
		// The other idle one went active again: nothing is idle, so the
		// fifth waits until a connection goes idle, which is then shed.
		ln.ConnState(open[2], http.StateActive)
		accepted := make(chan net.Conn)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		synctest.Wait()
		select {
		case <-accepted:
			t.Fatal("a connection was accepted with none idle")
		default:
		}
		ln.ConnState(fourth, http.StateIdle)
		fifth := <-accepted
		if _, err := ends[3].Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("the connection that went idle: read %v, want EOF (closed)", err)
		}
		for _, c := range append(open, fifth) {
			c.Close()
		}
		ln.Close()
		for _, c := range ends {
			c.Close()
		}
	})
}

// chanListener is a net.Listener that accepts the connections sent on conns.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { close(l.closed); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// deadlineConn is a net.Conn whose deadlines are recorded and whose reads
// wait for the test: each Read reports that it started on entered, then
// returns what the test sends on reads.
type deadlineConn struct {
	net.Conn // nil: only what is overridden is called
	entered  chan struct{}
	reads    chan string
	gate     chan struct{} // nil: writes do not wait
	mu       sync.Mutex
	readSets []time.Time // SetReadDeadline calls, in order
	writeSet []time.Time
}

func newDeadlineConn() *deadlineConn {
	return &deadlineConn{entered: make(chan struct{}, 2), reads: make(chan string, 2)}
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	c.entered <- struct{}{}
	read := <-c.reads
	if read == timedOut {
		return 0, os.ErrDeadlineExceeded
	}
	return copy(p, read), nil
}

// timedOut, sent on a deadlineConn's reads, makes its Read fail as at a
// deadline.
const timedOut = "\x00timed out"

// Write succeeds; while gate is not nil it first reports that it started
// on entered and waits for gate.
func (c *deadlineConn) Write(p []byte) (int, error) {
	if c.gate != nil {
		c.entered <- struct{}{}
		<-c.gate
	}
	return len(p), nil
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readSets = append(c.readSets, t)
	return nil
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeSet = append(c.writeSet, t)
	return nil
}

// sets returns the read and write deadlines set so far.
func (c *deadlineConn) sets() (read, write []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.readSets), slices.Clone(c.writeSet)
}

// A guarded connection's read deadline reaches the connection when a Read
// starts, the last one set only and only when it changed, or at once while
// a Read is in flight (so that a deadline in the past still ends it); none
// reaches it only when a Read ended at the deadline the connection kept,
// which is then tried again; SetDeadline sets the write deadline too.
func TestGuardedConnReadDeadlineIsLazy(t *testing.T) {
	inner := newDeadlineConn()
	c := newGuardedConn(inner, nil)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	idle, header, body := base.Add(2*time.Minute), base.Add(10*time.Second), base.Add(5*time.Second)
	buf := make([]byte, 16)
	read := func() {
		t.Helper()
		inner.reads <- "x"
		if n, err := c.Read(buf); n != 1 || err != nil {
			t.Fatalf("Read: %d, %v", n, err)
		}
		<-inner.entered
	}
	expect := func(when string, want ...time.Time) {
		t.Helper()
		if got, _ := inner.sets(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s: the connection's read deadlines are %v, want %v", when, got, want)
		}
	}
	c.SetReadDeadline(idle)
	expect("before any read")
	read()
	expect("after the first read", idle)
	for _, d := range []time.Time{header, {}, body, {}} { // as a request from the buffer sets them
		c.SetReadDeadline(d)
	}
	expect("after deadlines that bound no read", idle)
	c.SetReadDeadline(idle)
	read()
	expect("after a read under the same deadline", idle)
	c.SetReadDeadline(time.Time{})
	read()
	expect("after a read under none", idle)

	// A Read under none that ends at the deadline the connection kept is
	// tried again under none; one that ends at a deadline asked fails.
	inner.reads <- timedOut
	inner.reads <- "x"
	if n, err := c.Read(buf); n != 1 || err != nil {
		t.Fatalf("a Read under none, at the kept deadline: %d, %v; want 1 byte", n, err)
	}
	<-inner.entered
	<-inner.entered
	expect("after a read under none that met the kept deadline", idle, time.Time{})
	c.SetReadDeadline(idle)
	inner.reads <- timedOut
	if n, err := c.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a Read at its deadline: %d, %v; want it to fail", n, err)
	}
	<-inner.entered
	expect("after a read that met its deadline", idle, time.Time{}, idle)
	c.SetReadDeadline(time.Time{})
	read()

	// A Read in flight gets a new deadline at once.
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(buf)
		done <- err
	}()
	<-inner.entered
	past := base.Add(-time.Hour)
	c.SetReadDeadline(past)
	expect("while a read is in flight", idle, time.Time{}, idle, past)
	inner.reads <- "x"
	if err := <-done; err != nil {
		t.Fatalf("Read: %v", err)
	}

	c.SetDeadline(body)
	c.Write(buf)
	if _, write := inner.sets(); !slices.EqualFunc(write, []time.Time{body}, time.Time.Equal) {
		t.Errorf("SetDeadline, then a write: write deadlines %v, want %v", write, body)
	}
	expect("after SetDeadline", idle, time.Time{}, idle, past)
	read()
	expect("after SetDeadline and a read", idle, time.Time{}, idle, past, body)
}

// A guarded connection's write deadline reaches the connection when a
// Write starts, a sixteenth of its distance later than asked, and the
// deadlines asked within that window do not reach it, nor does the none
// net/http sets after each request if no write follows; one before the
// window (one in the past included), one after it, and none before a write,
// do. A Write in flight gets a new deadline at once.
func TestGuardedConnWriteDeadlineIsLazyAndCoarse(t *testing.T) {
	inner := newDeadlineConn()
	c := newGuardedConn(inner, nil)
	frame := []byte("x")
	expect := func(when string, want int) []time.Time {
		t.Helper()
		_, got := inner.sets()
		if len(got) != want {
			t.Fatalf("%s: the connection's write deadlines are %v, want %d of them", when, got, want)
		}
		return got
	}
	// An hour ahead: the connection gets between 60/16 and 61/16 of a
	// minute more (the clock moves between the test's now and the call's).
	asked := time.Now().Add(time.Hour)
	c.SetWriteDeadline(asked)
	expect("before a write", 0)
	c.Write(frame)
	set := expect("after the first write", 1)[0]
	if extra := set.Sub(asked); extra < time.Hour/16-time.Second || extra > time.Hour/16 {
		t.Fatalf("the connection's deadline is %v after the one asked, want about %v", extra, time.Hour/16)
	}
	// Requests as net/http serves them: the answer's deadline, its write,
	// then none.
	for _, d := range []time.Duration{0, time.Second, time.Minute, time.Hour/16 - time.Second} {
		c.SetWriteDeadline(asked.Add(d))
		c.Write(frame)
		c.SetWriteDeadline(time.Time{})
	}
	expect("after requests within the window", 1)
	c.Write(frame)
	if got := expect("after a write under none", 2); !got[1].IsZero() {
		t.Fatalf("none reached the connection as %v", got[1])
	}
	for _, tt := range []struct {
		when     string
		deadline time.Time
	}{
		{"an earlier deadline", asked.Add(-time.Minute)},
		{"a later deadline", set.Add(time.Second)},
		{"a deadline in the past", time.Unix(1, 0)},
	} {
		_, before := inner.sets()
		c.SetWriteDeadline(tt.deadline)
		c.Write(frame)
		expect("after "+tt.when, len(before)+1)
	}
	if got := expect("after the past", 5); !got[4].Equal(time.Unix(1, 0)) {
		t.Errorf("a deadline in the past reached the connection as %v, want it as asked", got[4])
	}
	c.SetWriteDeadline(time.Unix(1, 0))
	c.Write(frame)
	expect("after the same deadline in the past", 5)

	// A write in flight gets a new deadline at once.
	inner.gate = make(chan struct{})
	done := make(chan struct{})
	go func() {
		c.Write(frame)
		close(done)
	}()
	<-inner.entered
	c.SetWriteDeadline(time.Unix(2, 0))
	if got := expect("while a write is in flight", 6); !got[5].Equal(time.Unix(2, 0)) {
		t.Errorf("the deadline set during a write reached the connection as %v", got[5])
	}
	close(inner.gate)
	<-done
}

// Close closes the accepted connections on which no byte arrived (a
// client's spare), which http.Server.Shutdown would wait for, and leaves
// the others to their server; Accept then returns net.ErrClosed.
func TestHTTPListenerCloseClosesUnusedConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &chanListener{conns: make(chan net.Conn, 2), closed: make(chan struct{})}
		var clients []net.Conn
		for range 2 {
			server, client := net.Pipe()
			inner.conns <- server
			clients = append(clients, client)
		}
		ln, err := NewHTTPListener(inner, HTTPListenerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		used, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ln.Accept(); err != nil {
			t.Fatal(err)
		}
		go io.WriteString(clients[0], "x")
		if n, err := used.Read(make([]byte, 1)); n != 1 || err != nil {
			t.Fatalf("reading the used connection: %d, %v", n, err)
		}
		ln.Close()
		if n, err := clients[1].Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("the unused connection after Close: read %d, %v; want EOF", n, err)
		}
		go io.WriteString(clients[0], "y")
		if n, err := used.Read(make([]byte, 1)); n != 1 || err != nil {
			t.Fatalf("the used connection after Close: read %d, %v; want it open", n, err)
		}
		if ln.Open() != 1 {
			t.Fatalf("%d open, want 1", ln.Open())
		}
		if _, err := ln.Accept(); err != net.ErrClosed {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
		used.Close()
		for _, c := range clients {
			c.Close()
		}
	})
}

// selfSignedTLS returns a server configuration with a certificate for
// 127.0.0.1 made now, and a client configuration that trusts it; both offer
// HTTP/2 and HTTP/1.1 by ALPN.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	protos := []string{"h2", "http/1.1"}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: protos},
		&tls.Config{RootCAs: roots, NextProtos: protos}
}

// With TLSConfig the listener terminates TLS beneath the framing check: over
// TLS a request with both Content-Length and Transfer-Encoding is refused
// 400 and its connection closed, a chunked one is served, and so is an
// ordinary client's request, in HTTP/1.1 (the only protocol offered by
// ALPN, though the configuration given offers h2).
func TestHTTPListenerChecksFramingUnderTLS(t *testing.T) {
	serverTLS, clientTLS := selfSignedTLS(t)
	h, err := NewHTTPHandler(newHTTPCatalogRuntime(t), HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewHTTPListener(tcp, HTTPListenerOptions{TLSConfig: serverTLS})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(mcpPath, h)
	srv := &http.Server{Handler: mux, ConnState: ln.ConnState, ReadHeaderTimeout: failAfter}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	addr := ln.Addr().String()
	roundTrip := func(framing, body string) (*http.Response, *bufio.Reader) {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, clientTLS)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(failAfter))
		if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
			t.Fatalf("ALPN chose %q, want http/1.1", got)
		}
		if _, err := io.WriteString(conn, rawRequest(addr, framing, body)); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp, r
	}

	resp, r := roundTrip("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", chunked(rawListBody))
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("both framing headers over TLS: status %d, want 400", resp.StatusCode)
	}
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the 400: read %d bytes, %v; want the connection closed", n, err)
	}

	resp, _ = roundTrip("Transfer-Encoding: chunked\r\n", chunked(rawListBody))
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tools":[`) {
		t.Fatalf("a chunked request over TLS: status %d, body %.200s", resp.StatusCode, body)
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS, ForceAttemptHTTP2: true}}
	defer client.CloseIdleConnections()
	s := &httpTestServer{t: t, url: "https://" + addr + mcpPath}
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(rawListBody))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range stateless("tools/list", "") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/1.1" || !strings.Contains(body, `"tools":[`) {
		t.Fatalf("net/http's client over TLS: %s %d, body %.200s; want HTTP/1.1 200", resp.Proto, resp.StatusCode, body)
	}
}

// A TLSConfig without a certificate is refused by NewHTTPListener.
func TestNewHTTPListenerRefusesTLSWithoutCertificate(t *testing.T) {
	if _, err := NewHTTPListener(&chanListener{}, HTTPListenerOptions{TLSConfig: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "TLSConfig") {
		t.Fatalf("NewHTTPListener: %v, want an error naming TLSConfig", err)
	}
}
