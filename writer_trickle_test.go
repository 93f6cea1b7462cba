package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// WriteTimeout bounds each frame, never a write (docs/explanation/contract.md,
// "Framing"): a client that reads a small pipe slowly but steadily gets every
// frame, however many of them join one write.

// tricklePipe is an output that models a small pipe whose reader takes
// perTick bytes at each tick: a Write waits while the pipe holds capacity
// bytes. Without deadlines it is a blocking pipe (the helper writer's
// output); deadlineTricklePipe adds write deadlines (the direct writer's).
type tricklePipe struct {
	capacity, perTick int

	mu       sync.Mutex
	held     int          // bytes written and not yet taken by the reader
	data     bytes.Buffer // everything written, in order
	deadline time.Time
	room     chan struct{} // capacity 1: signalled when the reader took some
}

func newTricklePipe(capacity, perTick int) *tricklePipe {
	return &tricklePipe{capacity: capacity, perTick: perTick, room: make(chan struct{}, 1)}
}

// tick is one read of the pipe's reader, of at most n bytes.
func (p *tricklePipe) tick(n int) {
	p.mu.Lock()
	n = min(n, p.held)
	p.held -= n
	p.mu.Unlock()
	if n > 0 {
		wake(p.room)
	}
}

// drain runs the reader until stop is closed: it reads perTick bytes for
// each period that has passed, so that a reader scheduled late (a busy
// machine drops ticker ticks) catches up and its rate stays steady, never
// faster than perTick a period.
func (p *tricklePipe) drain(period time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case now := <-t.C:
			periods := int(now.Sub(last) / period)
			last = last.Add(time.Duration(periods) * period)
			p.tick(periods * p.perTick)
		case <-stop:
			return
		}
	}
}

func (p *tricklePipe) Write(b []byte) (int, error) { return p.write(b, false) }

func (p *tricklePipe) write(b []byte, deadlines bool) (int, error) {
	var expired <-chan time.Time
	if deadlines {
		p.mu.Lock()
		d := p.deadline
		p.mu.Unlock()
		if !d.IsZero() {
			t := time.NewTimer(time.Until(d))
			defer t.Stop()
			expired = t.C
		}
	}
	n := 0
	for {
		p.mu.Lock()
		k := min(len(b)-n, p.capacity-p.held)
		p.held += k
		p.data.Write(b[n : n+k])
		p.mu.Unlock()
		if n += k; n == len(b) {
			return n, nil
		}
		select {
		case <-p.room:
		case <-expired:
			return n, &os.PathError{Op: "write", Path: "pipe", Err: os.ErrDeadlineExceeded}
		}
	}
}

// written returns everything written so far.
func (p *tricklePipe) written() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.data.Bytes())
}

type deadlineTricklePipe struct{ *tricklePipe }

func (p deadlineTricklePipe) SetWriteDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deadline = t
	return nil
}

func (p deadlineTricklePipe) Write(b []byte) (int, error) { return p.write(b, true) }

// trickleFrame returns a response frame of about 450 bytes with id n.
func trickleFrame(n int) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"text":"%s"}}`+"\n", n, strings.Repeat("x", 400)))
}

// The writer alone, in both modes: 48 frames of about 450 bytes queued at
// once (one write, in direct mode; the first and then the 47 others, in
// helper mode) through a 4 KiB pipe whose reader takes 25 bytes a tick (a millisecond).
// The whole takes several times WriteTimeout, each frame a small part of
// it: every frame is written and acknowledged, none times out.
func TestWriterBoundsEachFrameNotTheWrite(t *testing.T) {
	const frames, timeout = 48, 250 * time.Millisecond
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "helper"}[direct], func(t *testing.T) {
			pipe := newTricklePipe(4096, 25)
			var out io.Writer = pipe
			if direct {
				out = deadlineTricklePipe{pipe}
			}
			w := newFrameWriter(out, timeout)
			defer w.close(nil)
			if got := w.deadlines != nil; got != direct {
				t.Fatalf("direct mode %v, want %v", got, direct)
			}
			stop := make(chan struct{})
			defer close(stop)
			go pipe.drain(time.Millisecond, stop)
			var want []byte
			acks := make([]chan peerReply, frames)
			for i := range frames {
				f := trickleFrame(i + 1)
				want = append(want, f...)
				acks[i] = make(chan peerReply, 1)
				if err := w.queue(f, acks[i]); err != nil {
					t.Fatalf("queue frame %d: %v", i+1, err)
				}
			}
			if err := w.wait(); err != nil {
				t.Fatalf("wait = %v after %d of %d bytes; want every frame written", err, len(pipe.written()), len(want))
			}
			for i, ack := range acks {
				if r := <-ack; r.err != nil {
					t.Fatalf("frame %d acknowledged %v", i+1, r.err)
				}
			}
			if got := pipe.written(); !bytes.Equal(got, want) {
				t.Fatalf("written %d bytes, want the %d bytes of the frames in order", len(got), len(want))
			}
		})
	}
}

// Serve over the same pipe: dozens of pipelined requests whose answers all
// become ready together (the handlers wait until every one has started),
// so that they join writes. Every answer arrives whole and Serve returns nil
// at the end of input.
func TestServeSlowSteadyReaderGetsEveryAnswer(t *testing.T) {
	const requests, timeout = 48, 250 * time.Millisecond
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "helper"}[direct], func(t *testing.T) {
			pipe := newTricklePipe(4096, 25)
			var out io.Writer = pipe
			if direct {
				out = deadlineTricklePipe{pipe}
			}
			var started sync.WaitGroup
			started.Add(requests)
			all := make(chan struct{})
			go func() { started.Wait(); close(all) }()
			d := DispatcherFunc(func(ctx context.Context, req *Request) Reply {
				started.Done()
				<-all
				return Reply{Result: json.RawMessage(`{"text":"` + strings.Repeat("x", 400) + `"}`)}
			})
			var in strings.Builder
			for i := range requests {
				fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"echo"}`+"\n", i+1)
			}
			stop := make(chan struct{})
			defer close(stop)
			go pipe.drain(time.Millisecond, stop)
			err := Serve(context.Background(), d, Options{Input: strings.NewReader(in.String()), Output: out, WriteTimeout: timeout, MaxConcurrency: requests, Logger: quietLogger()})
			written := pipe.written()
			if err != nil {
				t.Fatalf("Serve = %v after %d bytes; want nil, every answer written", err, len(written))
			}
			seen := make(map[string]bool)
			for _, f := range splitWholeFrames(t, written) {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result struct{ Text string }
				}
				if err := json.Unmarshal(f, &m); err != nil || len(m.Result.Text) != 400 {
					t.Fatalf("frame %.80q: %v", f, err)
				}
				seen[string(m.ID)] = true
			}
			if len(seen) != requests {
				t.Fatalf("%d distinct answers, want %d", len(seen), requests)
			}
		})
	}
}
