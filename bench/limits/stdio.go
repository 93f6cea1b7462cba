package main

// The stdio side: a fresh process per run, an initialize handshake, then
// pipelined echo calls at a window.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// stdioLoad is the load of one stdio run: calls echo calls of size-byte
// texts, at most window of them unanswered at a time.
type stdioLoad struct {
	calls, window, size int
}

// flushAt is how many bytes of requests the writer gathers before it
// writes them, when the window lets it.
const flushAt = 128 << 10

// runStdio starts argv, initializes it (2025-11-25) and makes the load's
// calls, and returns their rate (from the first request to the last
// answer) and median latency. Every answer must carry its request's text.
// The process's stdin is closed at the end and it has to exit; it is
// killed after timeout.
func runStdio(argv []string, load stdioLoad, timeout time.Duration) (measure, error) {
	p, err := startPipes(argv)
	if err != nil {
		return measure{}, err
	}
	defer p.stop()
	timer := time.AfterFunc(timeout, p.kill)
	defer timer.Stop()
	m, err := p.run(load)
	if err != nil {
		return measure{}, p.explain(err)
	}
	if err := p.stop(); err != nil {
		return measure{}, err
	}
	m.cpu = cpuPerCall(p.cmd.ProcessState, load.calls+1)
	return m, nil
}

// pipes is a stdio server process and its pipes.
type pipes struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	exited bool        // stop has waited for the process
	exit   error       // what that wait returned
	killed atomic.Bool // the run's timeout killed the process
}

func startPipes(argv []string) (*pipes, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &pipes{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: &tail{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	return p, nil
}

func (p *pipes) kill() {
	p.killed.Store(true)
	p.cmd.Process.Kill()
}

// stop closes the process's stdin, reads and drops what it still writes,
// and waits for it to exit; an exit status other than 0 is an error.
func (p *pipes) stop() error {
	if !p.exited {
		p.exited = true
		p.in.Close()
		io.Copy(io.Discard, p.out)
		p.exit = p.cmd.Wait()
	}
	if p.exit != nil {
		return p.explain(fmt.Errorf("the process: %w", p.exit))
	}
	return nil
}

// explain adds what the process wrote to stderr last, and whether it was
// killed for taking too long, to err.
func (p *pipes) explain(err error) error {
	if p.killed.Load() {
		err = fmt.Errorf("%w (killed: the run took too long)", err)
	}
	if s := p.stderr.String(); s != "" {
		err = fmt.Errorf("%w; its stderr ends: %s", err, s)
	}
	return err
}

// run makes the handshake and the load's calls.
func (p *pipes) run(load stdioLoad) (measure, error) {
	if _, err := io.WriteString(p.in, initializeRequest+"\n"); err != nil {
		return measure{}, fmt.Errorf("writing initialize: %w", err)
	}
	for {
		line, err := readLine(p.out)
		if err != nil {
			return measure{}, fmt.Errorf("reading the answer to initialize: %w", err)
		}
		if id, ok := answerID(line); ok && id == 0 {
			if bytes.Contains(line, []byte(`"error":`)) {
				return measure{}, fmt.Errorf("initialize failed: %.300s", line)
			}
			break
		}
	}
	if _, err := io.WriteString(p.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return measure{}, fmt.Errorf("writing notifications/initialized: %w", err)
	}

	texts := newTexts(load.size)
	sent := make([]atomic.Int64, load.calls+1) // when each call was written, in ns from start
	credits := make(chan struct{}, load.window)
	for range load.window {
		credits <- struct{}{}
	}
	stopWriting := make(chan struct{})
	writeErr := make(chan error, 1)
	start := time.Now()
	go func() { writeErr <- writeCalls(p.in, load, texts, sent, credits, stopWriting, start) }()
	defer close(stopWriting)

	latencies := make([]time.Duration, 0, load.calls)
	answered := make([]bool, load.calls+1)
	var last time.Duration
	for len(latencies) < load.calls {
		line, err := readLine(p.out)
		if err != nil {
			select {
			case werr := <-writeErr:
				if werr != nil {
					err = fmt.Errorf("%w (writing: %v)", err, werr)
				}
			default:
			}
			return measure{}, fmt.Errorf("reading answers (%d of %d came): %w", len(latencies), load.calls, err)
		}
		if isNotification(line) {
			continue
		}
		id, ok := answerID(line)
		if !ok || id < 1 || id > load.calls || answered[id] {
			return measure{}, fmt.Errorf("an answer to no call outstanding: %.300s", line)
		}
		if err := texts.check(line, id); err != nil {
			return measure{}, err
		}
		answered[id] = true
		last = time.Since(start)
		latencies = append(latencies, last-time.Duration(sent[id].Load()))
		credits <- struct{}{}
	}
	if err := <-writeErr; err != nil {
		return measure{}, err
	}
	return measure{rate: float64(load.calls) / last.Seconds(), p50: median(latencies)}, nil
}

// writeCalls writes the load's calls, taking a credit for each: while
// credits are at hand it gathers the calls (up to flushAt bytes) and then
// writes them at once, noting when each was sent.
func writeCalls(in io.Writer, load stdioLoad, texts *texts, sent []atomic.Int64, credits <-chan struct{}, stop <-chan struct{}, start time.Time) error {
	buf := make([]byte, 0, flushAt+load.size+256)
	var batch []int
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		now := int64(time.Since(start))
		for _, id := range batch {
			sent[id].Store(now)
		}
		_, err := in.Write(buf)
		buf, batch = buf[:0], batch[:0]
		return err
	}
	for id := 1; id <= load.calls; id++ {
		select {
		case <-credits:
		default:
			if err := flush(); err != nil {
				return fmt.Errorf("writing calls: %w", err)
			}
			select {
			case <-credits:
			case <-stop:
				return nil
			}
		}
		buf = append(appendCall(buf, id, texts, false), '\n')
		batch = append(batch, id)
		if len(buf) >= flushAt {
			if err := flush(); err != nil {
				return fmt.Errorf("writing calls: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("writing calls: %w", err)
	}
	return nil
}

// readLine reads one line of any length, without its newline. The line
// stays valid until the next read.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	long := append([]byte(nil), line...)
	for {
		line, err = r.ReadSlice('\n')
		long = append(long, line...)
		switch {
		case err == nil:
			return long[:len(long)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// isNotification reports whether a line of the server's is a message with
// a method (a notification), not an answer.
func isNotification(line []byte) bool { return bytes.Contains(line, []byte(`"method":`)) }

// answerID returns the number of an answer's id (the driver's calls are
// numbered from 0), false when it has none.
func answerID(line []byte) (int, bool) {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	digits := line[i+len(`"id":`):]
	end := 0
	for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	id, err := strconv.Atoi(string(digits[:end]))
	return id, err == nil
}

// tail keeps the last tailBytes a process writes to stderr. exec's
// goroutine writes while a run may read.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailBytes = 2 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
