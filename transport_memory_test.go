package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// startMemory serves rt over an in-memory pair and returns the client and
// Serve's result channel.
func startMemory(t *testing.T, d Dispatcher, opts Options) (*MemoryClient, <-chan error) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	tr, client, err := NewMemoryTransport(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tr.Serve(context.Background()) }()
	return client, done
}

// roundTripMemory sends msg and returns the next message received.
func roundTripMemory(t *testing.T, c *MemoryClient, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	if err := c.Send(ctx, []byte(msg)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return string(got)
}

// The reference catalog served in memory, with no pipe: a session of both
// eras, a cancelled request, bad input, and the end of input.
func TestMemoryTransportServesARuntime(t *testing.T) {
	rt := newHTTPCatalogRuntime(t)
	c, done := startMemory(t, rt, Options{MaxLineBytes: 4096})
	init := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !strings.Contains(init, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answered %s", init)
	}
	echo := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo"}}}`)
	if !strings.Contains(echo, `"text":"h\u00e9llo"`) || strings.Contains(echo, "\n") {
		t.Fatalf("echo answered %q, want one message with the ASCII-escaped text", echo)
	}
	stateless := roundTripMemory(t, c, toolCall("3", "echo", meta2026With("")))
	if !strings.Contains(stateless, `"resultType":"complete"`) {
		t.Fatalf("a 2026 call answered %s", stateless)
	}

	// A sleep cancelled by the client is never answered; the next request is.
	ctx := context.Background()
	c.Send(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`))
	c.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`))
	if got := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Fatalf("after the cancel, id 4 again: %s", got)
	}

	if got := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":5,`); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` {
		t.Fatalf("a broken message: %s", got)
	}
	if got := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"`+strings.Repeat("x", 4096)+`"}}`); !strings.Contains(got, "4096-byte line limit") {
		t.Fatalf("an over-long message: %s", got)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, done, "Serve to return"); err != nil {
		t.Fatalf("Serve = %v after Close", err)
	}
	if _, err := c.Receive(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive after Serve returned = %v, want io.EOF", err)
	}
	if err := c.Send(ctx, []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close = %v", err)
	}
}

// A client that does not receive fails the server's write as a pipe nobody
// reads does, once a pipe's worth of messages waits: Serve returns the write
// timeout and nothing is left running; what was written before the timeout
// is still received, the message that timed out is gone.
func TestMemoryTransportUnreadOutputTimesOut(t *testing.T) {
	// One worker: the answers are written in order.
	c, done := startMemory(t, newTestDispatcher(), Options{WriteTimeout: 20 * time.Millisecond, MaxConcurrency: 1})
	pad := strings.Repeat("x", memoryOutputBytes/3)
	for id := range 3 { // the third answer does not fit beside the first two
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"pad":"%s"}}`, id, pad)
		if err := c.Send(context.Background(), []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	err := waitFor(t, done, "Serve to return")
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Serve = %v, want the write timeout of the output's deadline", err)
	}
	for id := range 2 {
		m, err := c.Receive(context.Background())
		if err != nil || !strings.HasPrefix(string(m), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id)) {
			t.Fatalf("Receive = %.40q, %v; want the answer to %d, written before the timeout", m, err, id)
		}
	}
	if _, err := c.Receive(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive = %v, want io.EOF: the timed-out message is gone", err)
	}
}

// A client may send far ahead of receiving, as over pipes: the answers wait
// for it (up to a pipe's worth) while the server goes on taking messages.
func TestMemoryTransportClientSendsAheadOfReceiving(t *testing.T) {
	const n = 200 // far more than the server takes ahead of its answers
	c, done := startMemory(t, newTestDispatcher(), Options{WriteTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	for id := range n {
		if err := c.Send(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{}}`, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for range n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive after %d answers: %v", len(answered), err)
		}
		answered[string(m)] = true
	}
	for id := range n {
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id); !answered[want] {
			t.Fatalf("no answer %s", want)
		}
	}
	if err := waitFor(t, done, "Serve to return"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

func TestNewMemoryTransportRefusesStreams(t *testing.T) {
	if _, _, err := NewMemoryTransport(newTestDispatcher(), Options{Input: strings.NewReader("")}); err == nil {
		t.Fatal("NewMemoryTransport with an Input: want an error")
	}
	if _, _, err := NewMemoryTransport(newTestDispatcher(), Options{MaxLineBytes: -1}); err == nil {
		t.Fatal("NewMemoryTransport with a bad option: want an error")
	}
}

// Several goroutines receiving at once get every message exactly once, and
// none waits while a message is there to take: all arrive before the input
// ends.
func TestMemoryTransportConcurrentReceivers(t *testing.T) {
	const n, receivers = 500, 4
	c, done := startMemory(t, newTestDispatcher(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	got := make(chan string, n)
	var wg sync.WaitGroup
	for range receivers {
		wg.Go(func() {
			for {
				m, err := c.Receive(ctx)
				if err != nil {
					return
				}
				got <- string(m)
			}
		})
	}
	for id := range n {
		if err := c.Send(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{}}`, id)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range n {
		m := waitFor(t, got, "the next message")
		if seen[m] {
			t.Fatalf("%s received twice", m)
		}
		seen[m] = true
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, done, "Serve to return"); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	wg.Wait() // each receiver got io.EOF
	if len(got) != 0 {
		t.Fatalf("%d more messages than sent", len(got))
	}
}
