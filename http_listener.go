package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connection-level bounds of the HTTP transport: how many connections are
// served at once, and requests whose framing is ambiguous.

// Defaults of the listener and of the http.Server that serves the handler.
const (
	// DefaultMaxConnections is the default HTTPListenerOptions.MaxConnections.
	DefaultMaxConnections = 1024
	// DefaultMaxHeaderBytes is the header limit to give http.Server
	// (MaxHeaderBytes): room for the Mcp-Param headers, cookies and
	// tokens real clients send, 64 KiB, where net/http's default is 1 MiB.
	// net/http answers 431 beyond it (plus 4 KiB it allows for the request
	// line), and holds no more than that of an unfinished header.
	DefaultMaxHeaderBytes = 64 << 10
)

// HTTPListenerOptions configure NewHTTPListener. A zero value means the
// default (see Unlimited for the rule every options struct follows).
type HTTPListenerOptions struct {
	// MaxConnections bounds the connections open at once (default 1024).
	// At the bound, a new connection is accepted and the keep-alive
	// connection that has been idle longest (between two requests, as
	// ConnState reports it) is closed to make room for it; when none is
	// idle, Accept waits until one closes or goes idle: new connections
	// wait in the operating system's backlog (and are refused by it once
	// that is full), while those being served are unaffected.
	MaxConnections int
	// TLSConfig, when set, makes the listener terminate TLS itself, so that
	// the framing check reads the decrypted requests: serve the listener
	// with http.Server.Serve, not ServeTLS (which would wrap its
	// connections in TLS once more, and the check would read encrypted
	// bytes). The listener uses a clone, offering "http/1.1" alone by ALPN
	// (also from the configurations GetConfigForClient returns): net/http
	// serves HTTP/2 only on a *tls.Conn it handles itself, and the check
	// reads HTTP/1.1. For the same reason a request's TLS field is nil. The
	// handshake happens at the connection's first read, within the read
	// deadline net/http sets for the request's headers
	// (http.Server.ReadHeaderTimeout). It needs Certificates,
	// GetCertificate or GetConfigForClient.
	TLSConfig *tls.Config
}

// HTTPListener is a net.Listener to serve the HTTP transport with
// (http.Server.Serve): it bounds the connections open at once, it ends a
// connection at the first request that carries both Content-Length and
// Transfer-Encoding headers, and with HTTPListenerOptions.TLSConfig it
// terminates TLS beneath that check. RFC 9112 §6.1 asks a server to close
// the connection after such a request (a request smuggling attempt: a proxy
// in front may have framed it by the other header); net/http serves it by
// Transfer-Encoding and drops Content-Length before the handler sees it, so
// the check is made on the bytes of the connection: the connection's reads
// fail there, and net/http answers 400 Bad Request and closes it.
//
// The check looks at header lines (a line starting with either name, in one
// block of lines without a blank one), not at message framing, so it reads
// HTTP/1.1 in plaintext: the listener's own, or the decrypted bytes of the
// TLS it terminates (TLSConfig). Wrapped in TLS by something else
// (http.Server.ServeTLS, tls.NewListener around it) the connection bound
// holds but the check reads encrypted bytes and finds nothing. A body
// holding both header lines at the start of lines in one block (never
// JSON, which has no raw line breaks in strings, unless a chunk boundary
// falls just before each) ends its own connection the same way.
//
// Install its ConnState on the http.Server (srv.ConnState = ln.ConnState,
// or call it from a hook of your own) so that it knows which connections are
// idle between two requests: at MaxConnections those are closed first, and
// without the hook a connection at the bound waits for one to close.
//
// Close, which http.Server.Shutdown calls first, also closes the
// connections on which no byte arrived yet (a client's spare connection),
// which net/http's Shutdown would otherwise wait for, up to 5 seconds.
//
// Its methods are safe for concurrent use.
type HTTPListener struct {
	net.Listener
	tls   *tls.Config   // nil: plaintext; read-only
	slots chan struct{} // one element per open connection; its capacity is MaxConnections
	done  chan struct{} // closed by Close, under mu
	once  sync.Once

	mu    sync.Mutex
	conns map[*guardedConn]struct{} // accepted and not closed; guarded by mu
	// wentIdle has room for one signal, sent when a connection goes idle,
	// for an Accept waiting at the bound.
	wentIdle chan struct{}
	// wentIdleCount counts the connections' moves to idle: the order of
	// their idleOrder (a clock read for each request cost more).
	wentIdleCount atomic.Int64
}

// NewHTTPListener wraps inner. An invalid option is an error naming it.
func NewHTTPListener(inner net.Listener, opts HTTPListenerOptions) (*HTTPListener, error) {
	if err := checkOption("HTTPListenerOptions.MaxConnections", opts.MaxConnections); err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
	}
	defaultTo(&opts.MaxConnections, DefaultMaxConnections)
	l := &HTTPListener{Listener: inner, slots: make(chan struct{}, opts.MaxConnections), done: make(chan struct{}),
		conns: make(map[*guardedConn]struct{}), wentIdle: make(chan struct{}, 1)}
	if opts.TLSConfig != nil {
		c := opts.TLSConfig
		if len(c.Certificates) == 0 && c.GetCertificate == nil && c.GetConfigForClient == nil {
			return nil, errors.New("mcpstdio: HTTPListenerOptions.TLSConfig has no certificate (Certificates, GetCertificate or GetConfigForClient)")
		}
		l.tls = http1Only(c)
	}
	return l, nil
}

// http1Only returns a clone of c that offers HTTP/1.1 alone by ALPN, as do
// the configurations its GetConfigForClient returns.
func http1Only(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.NextProtos = []string{"http/1.1"}
	if get := c.GetConfigForClient; get != nil {
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			cc, err := get(hello)
			if cc == nil || err != nil {
				return cc, err
			}
			cc = cc.Clone()
			cc.NextProtos = []string{"http/1.1"}
			return cc, nil
		}
	}
	return c
}

// Accept accepts the next connection. Below MaxConnections it returns it at
// once. At the bound it accepts it all the same (else it would wait in the
// backlog), then closes the longest-idle keep-alive connection to make room
// for it, or waits until one goes idle or closes. After Close it returns
// net.ErrClosed, also while it waits.
func (l *HTTPListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	case l.slots <- struct{}{}:
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		return l.guard(c)
	default:
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}: // one closed meanwhile: nothing to shed
			return l.guard(c)
		default:
		}
		l.shedIdle()
		select {
		case l.slots <- struct{}{}:
			return l.guard(c)
		case <-l.wentIdle:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// guard wraps c, which holds a slot, in TLS when the listener has it and in
// the check, and registers it; once Close was called it closes c instead
// and returns net.ErrClosed (Close closes the connections registered before,
// on which nothing was read).
func (l *HTTPListener) guard(c net.Conn) (net.Conn, error) {
	gc := newGuardedConn(c, l)
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		gc.Close()
		return nil, net.ErrClosed
	default:
	}
	l.conns[gc] = struct{}{}
	l.mu.Unlock()
	return gc, nil
}

// shedIdle closes the connection that has been idle longest, if any; its
// Close frees its slot. It scans the open connections: it runs only at the
// bound, so that a request costs no lock here.
func (l *HTTPListener) shedIdle() {
	l.mu.Lock()
	var oldest *guardedConn
	var first int64
	for c := range l.conns {
		if n := c.idleOrder.Load(); n != 0 && (oldest == nil || n < first) {
			oldest, first = c, n
		}
	}
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

// ConnState records which of the listener's connections are idle between
// two requests, the ones Accept closes first at MaxConnections. Install it
// as (or call it from) the http.Server's ConnState hook. Connections it did
// not accept (another listener's, or wrapped in TLS by something else than
// the listener) are ignored.
func (l *HTTPListener) ConnState(c net.Conn, state http.ConnState) {
	gc, ok := c.(*guardedConn)
	if !ok || gc.l != l {
		return
	}
	if state != http.StateIdle {
		gc.idleOrder.Store(0)
		return
	}
	gc.idleOrder.Store(l.wentIdleCount.Add(1))
	if len(l.slots) == cap(l.slots) { // an Accept may be waiting for this
		select {
		case l.wentIdle <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting: it closes the inner listener, ends the waits of
// Accept, and closes the connections accepted on which no byte has arrived
// yet (with TLSConfig: no byte of a request). The others are left to their
// server, which closes them once idle (http.Server.Shutdown) or at once
// (http.Server.Close). Idempotent.
func (l *HTTPListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		var unused []*guardedConn
		l.mu.Lock()
		close(l.done)
		for c := range l.conns {
			if !c.used.Load() {
				unused = append(unused, c)
			}
		}
		l.mu.Unlock()
		err = l.Listener.Close()
		for _, c := range unused {
			c.Close()
		}
	})
	return err
}

// Open returns the number of connections accepted and not yet closed.
func (l *HTTPListener) Open() int { return len(l.slots) }

// errAmbiguousFraming fails the reads of a connection whose request has both
// Content-Length and Transfer-Encoding.
var errAmbiguousFraming = errors.New("mcpstdio: a request carries both Content-Length and Transfer-Encoding")

// guardedConn is an accepted connection: it frees its slot when closed, and
// its reads fail at a request with both framing headers. Its read deadline
// and its write deadlines are lazy, the write deadline coarse too (see
// lazyDeadline). With the listener's TLS, Conn is the *tls.Conn over the
// accepted connection, and tls is it.
type guardedConn struct {
	net.Conn
	l   *HTTPListener
	tls *tls.Conn // nil without TLS
	// idleOrder orders the connections idle between two requests by when
	// they went idle (HTTPListener.wentIdleCount; the lowest, the longest
	// idle), 0 while it is not idle; see ConnState.
	idleOrder atomic.Int64
	// used is set once a Read returned bytes: Close of the listener closes
	// the connections without.
	used      atomic.Bool
	closeOnce sync.Once
	// Used by Read only: net/http reads a connection on one goroutine at a
	// time.
	scan      framingScan
	handshook bool // the TLS handshake is done (or was tried and failed)
	rdeadline lazyDeadline
	wdeadline lazyDeadline // write is set
}

// lazyDeadline is one of a connection's deadlines, given to the connection
// only when it matters: at once while a Read (for the write deadline, a
// Write) is in flight, else when the next one starts. A deadline only
// bounds reads (writes), so each sees what it would have seen; the
// deadlines set and replaced between two are never set. Serving a request,
// net/http sets its connection's read deadline five times or more (the idle
// timeout, the header timeout, none, and the handler's body timeout, then
// none), and every one moves a runtime timer; with its reads from the
// buffer it filled at the request's start, most of them bound no read at
// all. Its write deadline it clears after each request, and the handler
// sets it a WriteTimeout ahead for each answer.
//
// A read deadline of none is not given while the connection has another:
// that one stays, and a Read it ends is tried again once none is given
// (end). net/http asks for none as its background read starts, between
// the idle deadline of the request's start and the one in the past that
// ends that read, so this saves a timer move per request; a Read still
// fails only at a deadline asked.
//
// A coarse one (the write deadline) is also given to the connection a
// little later than asked, so that the next ones asked need not move it:
// up to a sixteenth of its distance later (5s becomes at most 5.3s), and a
// deadline asked within that window is met by the one the connection has.
// A deadline earlier than the window (one in the past, to end a write),
// later than it, or none, is given as asked.
type lazyDeadline struct {
	mu     sync.Mutex
	want   time.Time     // the deadline last set
	set    time.Time     // the deadline the connection has
	slack  time.Duration // how much earlier than set a deadline may be and be met by it
	busy   bool          // a Read (Write) is in flight
	write  bool          // the write deadline, and coarse; else the read deadline
	failed bool          // the connection refused the last one given: set is unknown
}

// newGuardedConn returns c guarded, accepted by l, in TLS when l has it.
func newGuardedConn(c net.Conn, l *HTTPListener) *guardedConn {
	gc := &guardedConn{Conn: c, l: l}
	if l != nil && l.tls != nil {
		gc.tls = tls.Server(c, l.tls)
		gc.Conn = gc.tls
	}
	gc.wdeadline.write = true
	return gc
}

// SetReadDeadline sets the read deadline: now if a Read is in flight, else
// for the next Read.
func (c *guardedConn) SetReadDeadline(t time.Time) error { return c.rdeadline.ask(c.Conn, t) }

// SetWriteDeadline sets the write deadline: now if a Write is in flight,
// else for the next Write; it may leave the connection's, a little later
// (lazyDeadline).
func (c *guardedConn) SetWriteDeadline(t time.Time) error { return c.wdeadline.ask(c.Conn, t) }

// SetDeadline sets both deadlines, as SetReadDeadline and SetWriteDeadline
// do.
func (c *guardedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// ask records t, and gives it to conn at once if a Read (Write) is in
// flight.
func (d *lazyDeadline) ask(conn net.Conn, t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if d.busy {
		return d.apply(conn)
	}
	return nil
}

// apply gives conn the deadline last set, unless it has it or, when
// coarse, one that meets it; d.mu is held.
func (d *lazyDeadline) apply(conn net.Conn) error {
	want, slack := d.want, time.Duration(0)
	switch {
	case d.failed:
	case d.set.Equal(want):
		return nil
	case d.write && !want.IsZero() && !d.set.IsZero() && !want.After(d.set) && d.set.Sub(want) <= d.slack:
		return nil
	case !d.write && want.IsZero():
		return nil // the deadline it has stays, and a read it ends is tried again (end)
	}
	if d.write && !want.IsZero() {
		if left := time.Until(want); left > 0 {
			slack = left / 16
			want = want.Add(slack)
		}
	}
	var err error
	if d.write {
		err = conn.SetWriteDeadline(want)
	} else {
		err = conn.SetReadDeadline(want)
	}
	d.set, d.slack, d.failed = want, slack, err != nil
	return err
}

// start gives conn its deadline as a Read (Write) starts; end is called
// when it returned.
func (d *lazyDeadline) start(conn net.Conn) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busy = true
	if err := d.apply(conn); err != nil {
		d.busy = false
		return err
	}
	return nil
}

// end is called when a Read (Write) that start let begin returned n and
// err. It reports whether a Read should be tried again: it ended at the
// deadline the connection kept where none was asked, which is then lifted.
func (d *lazyDeadline) end(conn net.Conn, n int, err error) (again bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busy = false
	if d.write || n != 0 || !d.want.IsZero() || d.set.IsZero() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if conn.SetReadDeadline(time.Time{}) != nil {
		d.failed = true
		return false
	}
	d.set = time.Time{}
	return true
}

// Write writes to the connection under its write deadline.
func (c *guardedConn) Write(p []byte) (int, error) {
	if err := c.wdeadline.start(c.Conn); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	c.wdeadline.end(c.Conn, n, err)
	return n, err
}

// Read reads from the connection up to the start of the line that makes a
// block of header lines ambiguous; from there on it fails. With TLS, the
// first Read makes the handshake first.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.scan.ambiguous {
		return 0, errAmbiguousFraming
	}
	if c.tls != nil && !c.handshook {
		c.handshook = true
		if err := c.handshake(); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	for again := true; again; again = c.rdeadline.end(c.Conn, n, err) {
		if err := c.rdeadline.start(c.Conn); err != nil {
			return 0, err
		}
		n, err = c.Conn.Read(p)
	}
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	switch cut := c.scan.scan(p[:n]); {
	case cut == 0:
		return 0, errAmbiguousFraming
	case cut > 0:
		return cut, nil // the next Read fails
	}
	return n, err
}

// handshake makes the TLS handshake, its reads and writes bounded by the
// read deadline last asked (net/http's for the request's headers), as
// net/http bounds the handshakes it makes itself. The connection's
// deadlines are unknown afterwards: the next Read and Write give theirs.
func (c *guardedConn) handshake() error {
	c.rdeadline.mu.Lock()
	deadline := c.rdeadline.want
	c.rdeadline.mu.Unlock()
	err := c.tls.SetDeadline(deadline)
	if err == nil {
		err = c.tls.Handshake()
	}
	c.rdeadline.forget()
	c.wdeadline.forget()
	return err
}

// forget records that the connection's deadline is not known: the next
// Read (Write) gives it the one last asked.
func (d *lazyDeadline) forget() {
	d.mu.Lock()
	d.failed = true
	d.mu.Unlock()
}

// Close closes the connection and frees its slot, once.
func (c *guardedConn) Close() error {
	c.closeOnce.Do(func() {
		c.idleOrder.Store(0)
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection, as net/http does after an error
// answer so that the client reads it before the connection is reset.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// framingScan follows the lines of a connection's input to find a block of
// header lines (lines without a blank one between them) that names both
// Content-Length and Transfer-Encoding. It keeps a few bytes of the current
// line only, and looks at each line's first bytes, not at the rest: a line
// whose first byte starts neither header nor a blank line is skipped to its
// end at once.
type framingScan struct {
	start     [len("transfer-encoding:")]byte // the current line's first bytes, lower-cased
	n         int                             // how many of them
	long      bool                            // the line has more bytes than start holds
	other     bool                            // the line's first byte rules it out: none of it is kept
	length    bool                            // the block names Content-Length
	encoding  bool                            // the block names Transfer-Encoding
	ambiguous bool                            // a block named both: reads fail
}

// scan follows p, the next bytes of the input. When a line completes a block
// that names both headers, it records it and returns where that line starts
// in p (0 when it started in an earlier read); otherwise -1.
func (s *framingScan) scan(p []byte) int {
	lineStart := 0
	if s.n > 0 || s.long {
		lineStart = -1 // the current line began in an earlier read
	}
	for i := 0; i < len(p); {
		if s.n == 0 && !s.long {
			switch lower(p[i]) {
			case 'c', 't', '\r', '\n':
			default:
				s.other = true
			}
		}
		// Take the line's first bytes, up to what start holds.
		for ; !s.other && i < len(p) && p[i] != '\n' && s.n < len(s.start); i++ {
			s.start[s.n] = lower(p[i])
			s.n++
		}
		if i < len(p) && p[i] != '\n' {
			s.long = true
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				return -1
			}
			i += j
		}
		if i == len(p) {
			return -1
		}
		// p[i] ends the line.
		line := s.start[:s.n]
		switch {
		case !s.long && (s.n == 0 || s.n == 1 && line[0] == '\r'): // a blank line ends the block
			s.length, s.encoding = false, false
		case bytes.HasPrefix(line, []byte("content-length:")):
			s.length = true
		case bytes.HasPrefix(line, []byte("transfer-encoding:")):
			s.encoding = true
		}
		if s.length && s.encoding {
			s.ambiguous = true
			return max(lineStart, 0)
		}
		s.n, s.long, s.other = 0, false, false
		i++
		lineStart = i
	}
	return -1
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
