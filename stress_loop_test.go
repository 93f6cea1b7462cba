package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// Stress tests of the one owner loop (serveConnection) on the transports the
// other stress tests leave out, meant for -race -count=N: stdio over a pipe
// with write deadlines (the coordinator writes) and over one without (a
// writing goroutine), with requests, cancellations and Notify calls from
// many goroutines; Serve cancelled while all of that goes on; and 2026 POSTs
// whose clients leave.

// stdioStressOutput returns the server's end and the reader's end of a pipe:
// an *os.File pipe (write deadlines: direct mode) or an io.Pipe (none: the
// helper writer).
func stdioStressOutput(t *testing.T, direct bool) (io.Writer, io.ReadCloser) {
	if !direct {
		r, w := io.Pipe()
		t.Cleanup(func() { r.Close(); w.Close() })
		return w, r
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return w, r
}

// Pipelined requests, cancellations of some of them and Notify calls from
// several goroutines, then the end of input: Serve returns nil, every
// request not cancelled is answered exactly once, every frame arrives whole,
// and every Notify that returned nil wrote exactly one frame.
func TestStressStdioLoop(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "helper"}[direct], func(t *testing.T) {
			out, outR := stdioStressOutput(t, direct)
			inR, inW := io.Pipe()
			t.Cleanup(func() { inR.Close(); inW.Close() })
			tr, err := NewTransport(newTestDispatcher(), Options{Input: inR, Output: out, NotificationMethods: []string{appNotification}, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- tr.Serve(context.Background()) }()
			waitFor(t, tr.started, "Serve to start")

			frames := make(chan []string, 1)
			go func() {
				var got []string
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					got = append(got, sc.Text())
				}
				frames <- got
			}()
			const requests, notifiers, notifies = 200, 4, 25
			var written sync.WaitGroup
			var notified sync.Mutex
			sent := 0
			for g := range notifiers {
				written.Go(func() {
					for i := range notifies {
						err := tr.Notify(context.Background(), appNotification, map[string]int{"g": g, "i": i})
						switch {
						case err == nil:
							notified.Lock()
							sent++
							notified.Unlock()
						case !errors.Is(err, ErrClosed):
							t.Errorf("Notify = %v", err)
						}
					}
				})
			}
			cancelled := map[int]bool{}
			var in strings.Builder
			for i := range requests {
				fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d}}`+"\n", i, i)
				if i%7 == 3 {
					cancelled[i] = true
					fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`+"\n", i)
				}
			}
			if _, err := io.WriteString(inW, in.String()); err != nil {
				t.Fatal(err)
			}
			written.Wait()
			inW.Close()
			if err := waitFor(t, served, "Serve to return"); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			closeWriter(out)
			answers, notifications := map[int]int{}, 0
			for _, f := range waitFor(t, frames, "the output to end") {
				var id int
				switch {
				case strings.Contains(f, `"method":"`+appNotification+`"`):
					notifications++
				case strings.HasPrefix(f, `{"jsonrpc":"2.0","id":`) && strings.HasSuffix(f, "}"):
					fmt.Sscanf(f, `{"jsonrpc":"2.0","id":%d`, &id)
					answers[id]++
				default:
					t.Fatalf("frame %q", f)
				}
			}
			for i := range requests {
				if n := answers[i]; n > 1 || n == 0 && !cancelled[i] {
					t.Fatalf("request %d answered %d times", i, n)
				}
			}
			if notifications != sent {
				t.Fatalf("%d notification frames for %d Notify calls that returned nil", notifications, sent)
			}
		})
	}
}

// closeWriter closes the server's end of the output once Serve returned, so
// that the reader sees the end of it.
func closeWriter(w io.Writer) {
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
}

// Serve cancelled while handlers run, requests arrive and Notify calls from
// several goroutines wait or write: Serve returns context.Canceled, and
// every Notify returns (none hangs) with nil, ErrClosed or an error
// matching ErrTransportDown.
func TestStressStdioLoopCancelled(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "helper"}[direct], func(t *testing.T) {
			out, outR := stdioStressOutput(t, direct)
			go io.Copy(io.Discard, outR)
			inR, inW := io.Pipe()
			t.Cleanup(func() { inR.Close(); inW.Close() })
			started := make(chan struct{})
			var once sync.Once
			d := DispatcherFunc(func(ctx context.Context, req *Request) Reply {
				if req.Method == "block" {
					once.Do(func() { close(started) })
					<-ctx.Done()
				}
				return Reply{Result: json.RawMessage(`{}`)}
			})
			tr, err := NewTransport(d, Options{Input: inR, Output: out, NotificationMethods: []string{appNotification}, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- tr.Serve(ctx) }()
			waitFor(t, tr.started, "Serve to start")
			go func() {
				for i := 0; ; i++ {
					method := "echo"
					if i%5 == 0 {
						method = "block"
					}
					if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"%s"}`+"\n", i, method); err != nil {
						return
					}
				}
			}()
			var callers sync.WaitGroup
			for g := range 4 {
				callers.Go(func() {
					for i := 0; ; i++ {
						err := tr.Notify(context.Background(), appNotification, map[string]int{"g": g, "i": i})
						switch {
						case err == nil:
						case errors.Is(err, ErrClosed) || errors.Is(err, ErrTransportDown):
							return
						default:
							t.Errorf("Notify = %v", err)
							return
						}
					}
				})
			}
			waitFor(t, started, "a handler to start")
			cancel()
			if err := waitFor(t, served, "Serve to return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Serve = %v, want context.Canceled", err)
			}
			returned := make(chan struct{})
			go func() { callers.Wait(); close(returned) }()
			waitFor(t, returned, "every Notify to return")
		})
	}
}

// 2026-07-28 POSTs from many goroutines, some of whose clients leave before
// the answer: every other POST is answered 200 with its own id, and the
// handler goes on serving.
func TestStressHTTPStatelessPosts(t *testing.T) {
	s, release, logged := newRaceServer(t)
	const posters, posts = 8, 10
	var wg sync.WaitGroup
	failures := make(chan string, posters*posts)
	for g := range posters {
		wg.Go(func() {
			for i := range posts {
				id := g*posts + i
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold",%s}}`, id, meta2026)
				if i%3 == 0 {
					// A client that leaves while its request is held.
					ctx, cancel := context.WithCancel(context.Background())
					resp := make(chan struct{})
					go func() {
						defer close(resp)
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
						for k, v := range stateless("tools/call", "hold") {
							req.Header.Set(k, v)
						}
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", "application/json, text/event-stream")
						if r, err := http.DefaultClient.Do(req); err == nil {
							r.Body.Close()
						}
					}()
					cancel()
					<-resp
					continue
				}
				got := waitFor(t, s.postAsync(stateless("tools/call", "hold"), body), "an answer")
				if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, id)) {
					failures <- fmt.Sprintf("POST %d answered %q", id, got)
				}
			}
		})
	}
	close(release)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	got := waitFor(t, s.postAsync(stateless("tools/call", "hold"), `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"hold",`+meta2026+`}}`), "an answer")
	if !strings.Contains(got, `"id":"after","result"`) {
		t.Fatalf("after the stress: %q", got)
	}
	logged.check(t)
}
