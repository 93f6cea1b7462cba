package main

// A stdio server process and the routing of what it writes: each line it
// prints goes to the HTTP exchange it belongs to.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

var (
	// errChildGone ends the exchanges of a child whose output ended.
	errChildGone = errors.New("the server process exited")
	// errOverflow ends an exchange whose client reads slower than the
	// server writes, once limits.maxQueued messages wait for it.
	errOverflow = errors.New("too many messages wait for the client")
)

// limits bounds what clients and children may make the bridge hold.
type limits struct {
	maxMessage  int // bytes of one message, either way
	maxQueued   int // messages waiting for one exchange's client
	maxBacklog  int // messages of a child waiting for a GET stream to open
	maxSessions int // live sessions, each a child process
}

// stopGrace is how long a child has to exit once its stdin is closed (a
// stdio server exits at end of input) before it is killed, and how long its
// output may stay open once it has exited (a grandchild may hold it).
const stopGrace = 2 * time.Second

// child is one stdio server process. Its owner goroutine (own) holds the
// routing state (a router); HTTP handlers reach it only through do, and
// write to the process's stdin through send.
type child struct {
	label  string
	cmd    *exec.Cmd
	in     chan []byte        // lines for writeLines
	quit   chan struct{}      // closed by stop: writeLines closes stdin
	ops    chan func(*router) // run by the owner, in order
	gone   chan struct{}      // closed by the owner once the output ended and every exchange with it
	waited chan struct{}      // closed once the process has been reaped
	stop1  sync.Once
}

// startChild starts argv with its stdin and stdout on pipes of the bridge's
// and its stderr on stderr.
func startChild(argv []string, label string, stderr io.Writer, lim limits, logger *log.Logger) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", label, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting %s: %w", label, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	err = cmd.Start()
	inR.Close() // the process has its own copies now
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", label, err)
	}
	c := &child{
		label:  label,
		cmd:    cmd,
		in:     make(chan []byte),
		quit:   make(chan struct{}),
		ops:    make(chan func(*router)),
		gone:   make(chan struct{}),
		waited: make(chan struct{}),
	}
	lines := make(chan []byte)
	go readLines(outR, lines, lim.maxMessage, logger, label)
	go c.writeLines(inW, logger)
	go c.own(lines, &router{calls: map[string]*exchange{}, lim: lim, log: logger, label: label})
	go func() {
		err := cmd.Wait()
		logger.Printf("%s: exited (%v)", label, exitStatus(err))
		close(c.waited)
		select {
		case <-c.gone:
		case <-time.After(stopGrace):
			outR.Close() // a grandchild holds the output open: end it
		}
	}()
	logger.Printf("%s: started %q (pid %d)", label, argv, cmd.Process.Pid)
	return c, nil
}

func exitStatus(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// readLines sends each line of the process's output to lines, without its
// line ending, and closes lines when the output ends. A line longer than
// maxLine is dropped (and logged), as is an empty one.
func readLines(out *os.File, lines chan<- []byte, maxLine int, logger *log.Logger, label string) {
	defer close(lines)
	defer out.Close()
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		var line []byte
		tooLong := false
		for {
			chunk, err := r.ReadSlice('\n')
			if !tooLong && len(line)+len(chunk) > maxLine+1 {
				tooLong, line = true, nil
			}
			if !tooLong {
				line = append(line, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
					logger.Printf("%s: reading its output: %v", label, err)
				}
				if len(line) > 0 && !tooLong {
					lines <- line // a last line without a newline
				}
				return
			}
			break
		}
		if tooLong {
			logger.Printf("%s: dropped an output line longer than %d bytes", label, maxLine)
			continue
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines <- line
		}
	}
}

// writeLines writes each line sent on c.in, with a newline, to the
// process's stdin, until stop closes c.quit; then it closes stdin. After a
// failed write it discards what comes, so that no sender waits for it.
func (c *child) writeLines(stdin *os.File, logger *log.Logger) {
	defer stdin.Close()
	failed := false
	for {
		select {
		case line := <-c.in:
			if failed {
				continue
			}
			if _, err := stdin.Write(append(line[:len(line):len(line)], '\n')); err != nil {
				logger.Printf("%s: writing its input: %v", c.label, err)
				failed = true
			}
		case <-c.quit:
			return
		}
	}
}

// own runs the router over the lines the process prints and the handlers'
// operations until the output ends; then it ends every exchange and closes
// c.gone.
func (c *child) own(lines <-chan []byte, r *router) {
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				r.endAll(errChildGone)
				close(c.gone)
				return
			}
			r.route(line)
		case op := <-c.ops:
			op(r)
		}
	}
}

// do runs op on the child's router and returns once it has run; false, with
// op not run, when the child is gone.
func (c *child) do(op func(*router)) bool {
	done := make(chan struct{})
	select {
	case c.ops <- func(r *router) { op(r); close(done) }:
		<-done
		return true
	case <-c.gone:
		return false
	}
}

// send writes line to the process's stdin. It blocks while the process does
// not read, until ctx ends or the child is gone.
func (c *child) send(ctx context.Context, line []byte) error {
	select {
	case c.in <- line:
		return nil
	case <-c.gone:
		return errChildGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the process: its stdin is closed, and after stopGrace it is
// killed. It returns once the process has been reaped and its exchanges
// have ended. Safe to call more than once, concurrently.
func (c *child) stop() {
	c.stop1.Do(func() { close(c.quit) })
	select {
	case <-c.waited:
	case <-time.After(stopGrace):
		c.cmd.Process.Kill()
		<-c.waited
	}
	<-c.gone
}

// isGone reports whether the child's output has ended.
func (c *child) isGone() bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

// exchange is one HTTP request's view of a child: a POSTed request waiting
// for its answer (and taking the messages the server sends before it), or a
// session's GET stream.
type exchange struct {
	get      bool
	clientID json.RawMessage // the request's id as the client sent it
	wireID   json.RawMessage // its id as the server sees it: clientID unless another outstanding request has it
	progress string          // the canonical progress token the request asked for, "" for none
	box      *mailbox
}

// rewritten reports whether the server sees the request under another id.
func (x *exchange) rewritten() bool { return !bytes.Equal(x.clientID, x.wireID) }

// router delivers a child's messages to exchanges. Only the child's owner
// goroutine uses it.
type router struct {
	calls   map[string]*exchange // requests awaiting their answer, by canonical wire id
	open    []*exchange          // requests and GET streams, oldest first
	backlog [][]byte             // messages that arrived while no exchange was open, oldest first
	serial  int                  // for the ids of requests whose own id is taken
	lim     limits
	log     *log.Logger
	label   string
}

// register opens x. A request whose id an outstanding request of the same
// child has (two clients of the stateless child, say) gets a wire id of the
// bridge's. A GET stream takes the backlog.
func (r *router) register(x *exchange) {
	r.open = append(r.open, x)
	if x.get {
		for _, msg := range r.backlog {
			r.deliver(x, msg, false)
		}
		r.backlog = nil
		return
	}
	x.wireID = x.clientID
	for r.calls[canonicalID(x.wireID)] != nil {
		r.serial++
		x.wireID = json.RawMessage(`"bridge-` + strconv.Itoa(r.serial) + `"`)
	}
	r.calls[canonicalID(x.wireID)] = x
}

// unregister closes x: its client is gone, or its answer was delivered.
func (r *router) unregister(x *exchange) {
	if !x.get && r.calls[canonicalID(x.wireID)] == x {
		delete(r.calls, canonicalID(x.wireID))
	}
	for i, y := range r.open {
		if y == x {
			r.open = append(r.open[:i], r.open[i+1:]...)
			break
		}
	}
}

// wireIDOf returns the id under which the server sees the newest open
// request whose client id is clientID, nil when there is none.
func (r *router) wireIDOf(clientID json.RawMessage) json.RawMessage {
	key := canonicalID(clientID)
	for i := len(r.open) - 1; i >= 0; i-- {
		if x := r.open[i]; !x.get && canonicalID(x.clientID) == key {
			return x.wireID
		}
	}
	return nil
}

// route delivers one line of the server's output: an answer to the request
// it answers; a progress notification to the request that asked for it; a
// listen stream's notification to its listen request; anything else to the
// newest open request, else the newest GET stream, else the backlog.
func (r *router) route(line []byte) {
	m, err := parseMessage(line)
	if err != nil {
		r.log.Printf("%s: ignored an output line that is not a JSON-RPC message (%v): %.200q", r.label, err, line)
		return
	}
	if m.isResponse() {
		x := r.calls[canonicalID(m.id)]
		if x == nil {
			r.log.Printf("%s: dropped an answer to id %s, which no open request has", r.label, m.id)
			return
		}
		r.unregister(x)
		if x.rewritten() {
			m.line = withMember(m.line, x.clientID, "id")
		}
		x.box.push(m.line, true)
		return
	}
	if m.id == nil && m.progressToken != nil {
		key := canonicalID(m.progressToken)
		for i := len(r.open) - 1; i >= 0; i-- {
			if x := r.open[i]; !x.get && x.progress == key {
				r.deliver(x, m.line, false)
				return
			}
		}
	}
	if m.subscription != nil {
		if x := r.calls[canonicalID(m.subscription)]; x != nil {
			line := m.line
			if x.rewritten() {
				line = withMember(line, x.clientID, "params", "_meta", metaSubscriptionID)
			}
			r.deliver(x, line, false)
			return
		}
	}
	if x := r.newest(false); x != nil {
		r.deliver(x, m.line, false)
		return
	}
	if x := r.newest(true); x != nil {
		r.deliver(x, m.line, false)
		return
	}
	if len(r.backlog) >= r.lim.maxBacklog {
		r.log.Printf("%s: no stream is open and %d messages wait: dropped the oldest", r.label, len(r.backlog))
		r.backlog = r.backlog[1:]
	}
	r.backlog = append(r.backlog, m.line)
}

// newest returns the newest open GET stream (get) or request, nil when
// there is none.
func (r *router) newest(get bool) *exchange {
	for i := len(r.open) - 1; i >= 0; i-- {
		if r.open[i].get == get {
			return r.open[i]
		}
	}
	return nil
}

// deliver queues msg for x, ending x when its client has fallen too far
// behind.
func (r *router) deliver(x *exchange, msg []byte, final bool) {
	if !x.box.push(msg, final) {
		r.log.Printf("%s: %v: ended its stream", r.label, errOverflow)
		r.unregister(x)
	}
}

// endAll ends every open exchange with err.
func (r *router) endAll(err error) {
	for _, x := range r.open {
		x.box.end(err)
	}
	r.open, r.calls, r.backlog = nil, nil, nil
}

// mailbox is the queue between a child's owner, which must never wait for
// an HTTP client, and the handler that writes to that client. It holds at
// most max messages.
type mailbox struct {
	mu    sync.Mutex
	queue [][]byte
	final bool  // the last message queued is the request's answer
	err   error // why the exchange ended without an answer
	max   int
	wake  chan struct{} // signalled after each change
}

func newMailbox(max int) *mailbox { return &mailbox{max: max, wake: make(chan struct{}, 1)} }

// push queues msg (final: the answer, after which nothing comes); false,
// with the box ended by errOverflow, when max messages wait already.
func (b *mailbox) push(msg []byte, final bool) bool {
	b.mu.Lock()
	ok := len(b.queue) < b.max
	if ok {
		b.queue, b.final = append(b.queue, msg), final
	} else if b.err == nil {
		b.err = errOverflow
	}
	b.mu.Unlock()
	b.signal()
	return ok
}

// end ends the box with err unless its answer came.
func (b *mailbox) end(err error) {
	b.mu.Lock()
	if !b.final && b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	b.signal()
}

func (b *mailbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// take returns the queued messages, whether the last of them is the answer,
// and why the exchange ended when it ended without one.
func (b *mailbox) take() (msgs [][]byte, final bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	msgs, b.queue = b.queue, nil
	return msgs, b.final, b.err
}
