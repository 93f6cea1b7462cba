package main

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Serving a runtime on the process's stdin and stdout until the client
// closes stdin, or SIGINT or SIGTERM arrives. (Compiled, not run: it would
// serve the test's own stdin.)
func ExampleServeStdio() {
	// region serve-stdio
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "hello", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// Register the tools, resources and prompts on rt here.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// ServeStdio returns nil once stdin ends and every request is answered.
	if err := ServeStdio(ctx, rt, Options{}); err != nil && !errors.Is(err, context.Canceled) {
		log.Print(err) // an *OutputError when stdout failed or stalled
	}
	// endregion serve-stdio
}

// Serving stdin and stdout with a handle on the transport, to send an
// application notification every minute. (Compiled, not run.)
func ExampleNewStdioTransport() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "hello", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region stdio-notify
	tr, err := NewStdioTransport(rt, Options{
		NotificationMethods: []string{"notifications/hello/tick"}, // what tr.Notify may send
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		ticker := time.NewTicker(time.Minute)
		defer ticker.Stop()
		for now := range ticker.C {
			err := tr.Notify(ctx, "notifications/hello/tick", map[string]string{"time": now.Format(time.RFC3339)})
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrTransportDown) || errors.Is(err, ErrOutputFailed) {
				return // the connection has ended
			}
		}
	}()
	if err := tr.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Print(err)
	}
	// endregion stdio-notify
}
