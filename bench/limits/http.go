package main

// The HTTP side: a fresh process per run listening on a loopback port, and
// clients that each keep one connection and make one echo call at a time.
// The client is a minimal HTTP/1.1 one (one write per request, the answer
// parsed in place): net/http's would cost the machine's two cores more
// than many a server does.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// httpLoad is the load of one HTTP run: clients clients, each making echo
// calls of size-byte texts one at a time for warmup and then for duration,
// measured; stateless 2026-07-28 calls, or each client in a session of
// 2025-11-25 opened before.
type httpLoad struct {
	stateless        bool
	clients, size    int
	warmup, duration time.Duration
}

// startWait bounds how long a program may take to write its address.
const startWait = 30 * time.Second

// runHTTP starts the program command returns for an address file, waits
// for its address, runs the load against it and stops it with SIGTERM. It
// returns the calls per second and the median latency of the measured
// calls, every one of which must have been answered 200 with its text.
func runHTTP(command func(addrFile string) []string, load httpLoad) (measure, error) {
	dir, err := os.MkdirTemp("", "limits-addr-")
	if err != nil {
		return measure{}, err
	}
	defer os.RemoveAll(dir)
	addrFile := filepath.Join(dir, "addr")
	argv := command(addrFile)
	cmd := exec.Command(argv[0], argv[1:]...)
	output := &tail{}
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		return measure{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	explain := func(err error) error {
		if s := output.String(); s != "" {
			err = fmt.Errorf("%w; its output ends: %s", err, s)
		}
		return err
	}
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				return explain(fmt.Errorf("the program's exit: %w", err))
			}
			return nil
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
			return explain(errors.New("the program did not stop within 5 s of SIGTERM"))
		}
	}
	addr, err := awaitAddress(addrFile, exited)
	if err != nil {
		cmd.Process.Kill()
		return measure{}, explain(err)
	}
	m, calls, err := drive(addr, load)
	if err != nil {
		stop()
		return measure{}, explain(err)
	}
	if err := stop(); err != nil {
		return measure{}, err
	}
	m.cpu = cpuPerCall(cmd.ProcessState, calls)
	return m, nil
}

// awaitAddress returns the address the program writes to file, once it
// has, or an error when it exits first or takes startWait.
func awaitAddress(file string, exited <-chan error) (string, error) {
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b)), nil
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("the program exited before it listened: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("the program wrote no address within %v", startWait)
}

// drive runs the load against the MCP endpoint at addr. It returns the
// figures of the measured calls and how many calls were answered in all
// (warm-up and handshakes included).
func drive(addr string, load httpLoad) (measure, int, error) {
	texts := newTexts(load.size)
	clients := make([]*httpClient, load.clients)
	for i := range clients {
		c, err := dialClient(addr, load.stateless)
		if err != nil {
			return measure{}, 0, fmt.Errorf("client %d: %w", i, err)
		}
		defer c.conn.Close()
		clients[i] = c
	}
	start := time.Now()
	measureAt, endAt := start.Add(load.warmup), start.Add(load.warmup+load.duration)
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := c.load(texts, i, measureAt, endAt); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(measureAt)
	close(errs)
	if err := <-errs; err != nil {
		return measure{}, 0, err
	}
	var latencies []time.Duration
	calls := 0
	for _, c := range clients {
		latencies = append(latencies, c.latencies...)
		calls += c.answered
	}
	if len(latencies) == 0 {
		return measure{}, 0, errors.New("no call was measured")
	}
	return measure{rate: float64(len(latencies)) / elapsed.Seconds(), p50: median(latencies)}, calls, nil
}

// httpClient is one client: a kept-alive connection, and in a session its
// id.
type httpClient struct {
	addr      string
	conn      net.Conn
	r         *bufio.Reader
	stateless bool
	session   string
	request   []byte // reused for each request
	answer    httpAnswer
	latencies []time.Duration
	answered  int // the posts answered, its session's handshake included
}

// httpAnswer is a parsed HTTP response; body is valid until the next one.
type httpAnswer struct {
	status      int
	session     string
	contentType string
	body        []byte
}

// dialClient connects a client, and for a session opens one: initialize
// (answered 200 with an Mcp-Session-Id), then notifications/initialized.
func dialClient(addr string, stateless bool) (*httpClient, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := &httpClient{addr: addr, conn: conn, r: bufio.NewReaderSize(conn, 64<<10), stateless: stateless}
	if stateless {
		return c, nil
	}
	if err := c.post([]byte(initializeRequest)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if c.answer.status != 200 || c.answer.session == "" || bytes.Contains(c.answer.body, []byte(`"error":`)) {
		conn.Close()
		return nil, fmt.Errorf("initialize: status %d, session %q: %.300s", c.answer.status, c.answer.session, c.answer.body)
	}
	c.session = c.answer.session
	if err := c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	if c.answer.status != 202 {
		conn.Close()
		return nil, fmt.Errorf("notifications/initialized: status %d: %.300s", c.answer.status, c.answer.body)
	}
	return c, nil
}

// load makes calls until endAt, numbered client*1e9+1 on; it notes the
// latency of each one started at measureAt or later.
func (c *httpClient) load(texts *texts, client int, measureAt, endAt time.Time) error {
	var body []byte
	for id := client*1_000_000_000 + 1; ; id++ {
		begin := time.Now()
		if !begin.Before(endAt) {
			return nil
		}
		body = appendCall(body[:0], id, texts, c.stateless)
		if err := c.post(body); err != nil {
			return err
		}
		took := time.Since(begin)
		a := &c.answer
		if got, ok := answerID(a.body); a.status != 200 || !ok || got != id || bytes.Contains(a.body, []byte(`"error":`)) {
			return fmt.Errorf("call %d: status %d: %.300s", id, a.status, a.body)
		}
		if err := texts.check(a.body, id); err != nil {
			return err
		}
		if !begin.Before(measureAt) {
			c.latencies = append(c.latencies, took)
		}
	}
}

// post sends body in one write, with the headers of the client's calls,
// and reads the answer into c.answer.
func (c *httpClient) post(body []byte) error {
	w := c.request[:0]
	w = append(w, "POST /mcp HTTP/1.1\r\nHost: "...)
	w = append(w, c.addr...)
	w = append(w, "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"...)
	switch {
	case c.stateless:
		w = append(w, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"...)
	case c.session != "":
		w = append(w, "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: "...)
		w = append(w, c.session...)
		w = append(w, "\r\n"...)
	}
	w = append(w, "Content-Length: "...)
	w = strconv.AppendInt(w, int64(len(body)), 10)
	w = append(w, "\r\n\r\n"...)
	w = append(w, body...)
	c.request = w
	if _, err := c.conn.Write(w); err != nil {
		return err
	}
	if err := c.read(); err != nil {
		return err
	}
	c.answered++
	return nil
}

// read reads one HTTP/1.1 response, its body framed by Content-Length or
// chunked.
func (c *httpClient) read() error {
	a := &c.answer
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return fmt.Errorf("a bad status line %q", line)
	}
	if a.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return fmt.Errorf("a bad status line %q", line)
	}
	a.session, a.contentType = "", ""
	length, chunked := -1, false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the headers: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return fmt.Errorf("a bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Mcp-Session-Id")):
			a.session = string(value)
		case bytes.EqualFold(name, []byte("Content-Type")):
			a.contentType = string(value)
		}
	}
	a.body = a.body[:0]
	switch {
	case chunked:
		return c.readChunks()
	case length >= 0:
		return c.readBody(length)
	}
	return errors.New("an answer framed by neither Content-Length nor chunks")
}

// readBody appends n bytes of body to the answer's.
func (c *httpClient) readBody(n int) error {
	a := &c.answer
	start := len(a.body)
	a.body = append(a.body, make([]byte, n)...)
	_, err := io.ReadFull(c.r, a.body[start:])
	return err
}

func (c *httpClient) readChunks() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading a chunk's size: %w", err)
		}
		size, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("a bad chunk size %q", line)
		}
		if size > 0 {
			if err := c.readBody(int(size)); err != nil {
				return err
			}
		}
		if _, err := c.r.Discard(2); err != nil { // the chunk's CRLF, or the last one's
			return err
		}
		if size == 0 {
			return nil
		}
	}
}
