package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
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
// default.
type HTTPListenerOptions struct {
	// MaxConnections bounds the connections open at once (default 1024).
	// Beyond it Accept waits until one of them closes: new connections
	// wait in the operating system's backlog (and are refused by it once
	// that is full), while those being served are unaffected.
	MaxConnections int
}

// HTTPListener is a net.Listener to serve the HTTP transport with
// (http.Server.Serve): it bounds the connections open at once, and it ends
// a connection at the first request that carries both Content-Length and
// Transfer-Encoding headers. RFC 9112 §6.1 asks a server to close the
// connection after such a request (a request smuggling attempt: a proxy in
// front may have framed it by the other header); net/http serves it by
// Transfer-Encoding and drops Content-Length before the handler sees it, so
// the check is made on the bytes of the connection: the connection's reads
// fail there, and net/http answers 400 Bad Request and closes it.
//
// The check looks at header lines (a line starting with either name, in one
// block of lines without a blank one), not at message framing, so it sees
// plaintext HTTP/1.1 only: under TLS (http.Server.ServeTLS wraps this
// listener's connections) the connection bound holds but the check sees
// encrypted bytes and finds nothing. A body holding both header lines at
// the start of lines in one block (never JSON, which has no raw line breaks
// in strings, unless a chunk boundary falls just before each) ends its own
// connection the same way.
//
// Its methods are safe for concurrent use.
type HTTPListener struct {
	net.Listener
	slots chan struct{} // one element per open connection; its capacity is MaxConnections
	done  chan struct{} // closed by Close
	once  sync.Once
}

// NewHTTPListener wraps inner. An invalid option is an error naming it.
func NewHTTPListener(inner net.Listener, opts HTTPListenerOptions) (*HTTPListener, error) {
	if opts.MaxConnections < 0 {
		return nil, fmt.Errorf("mcpstdio: HTTPListenerOptions.MaxConnections must be positive, got %d", opts.MaxConnections)
	}
	defaultTo(&opts.MaxConnections, DefaultMaxConnections)
	return &HTTPListener{Listener: inner, slots: make(chan struct{}, opts.MaxConnections), done: make(chan struct{})}, nil
}

// Accept waits until fewer than MaxConnections connections are open, then
// accepts the next one. After Close it returns net.ErrClosed, also while
// it waits.
func (l *HTTPListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &guardedConn{Conn: c, slots: l.slots}, nil
}

// Close stops accepting: it closes the inner listener and ends the waits of
// Accept. Connections already accepted are not closed. Idempotent.
func (l *HTTPListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// Open returns the number of connections accepted and not yet closed.
func (l *HTTPListener) Open() int { return len(l.slots) }

// errAmbiguousFraming fails the reads of a connection whose request has both
// Content-Length and Transfer-Encoding.
var errAmbiguousFraming = errors.New("mcpstdio: a request carries both Content-Length and Transfer-Encoding")

// guardedConn is an accepted connection: it frees its slot when closed, and
// its reads fail at a request with both framing headers.
type guardedConn struct {
	net.Conn
	slots     chan struct{}
	closeOnce sync.Once
	scan      framingScan // used by Read only: net/http reads a connection on one goroutine at a time
}

// Read reads from the connection up to the start of the line that makes a
// block of header lines ambiguous; from there on it fails.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.scan.ambiguous {
		return 0, errAmbiguousFraming
	}
	n, err := c.Conn.Read(p)
	switch cut := c.scan.scan(p[:n]); {
	case cut == 0:
		return 0, errAmbiguousFraming
	case cut > 0:
		return cut, nil // the next Read fails
	}
	return n, err
}

func (c *guardedConn) Close() error {
	c.closeOnce.Do(func() { <-c.slots })
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
