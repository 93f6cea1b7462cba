// Command hello serves MCP on stdin/stdout, or with -http ADDR over
// Streamable HTTP at http://ADDR/mcp. Logs go to stderr; stdout carries
// only the protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"example.com/hello/mcp"
)

// region main
func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	flag.Parse()
	rt, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *addr != "" {
		err = serveHTTP(ctx, rt, *addr)
	} else {
		err = serveStdio(ctx, rt)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// endregion main

// region stdio
// serveStdio serves rt on stdin/stdout until stdin ends (every request
// answered) or ctx ends. NewStdioTransport guards the process's stdout:
// nothing else the process prints lands in the protocol, and every write
// has its deadline.
func serveStdio(ctx context.Context, rt *mcp.Runtime) error {
	tr, err := mcp.NewStdioTransport(rt, mcp.Options{
		// The only methods tr.Notify may send.
		NotificationMethods: []string{"notifications/hello/tick"},
	})
	if err != nil {
		return err
	}
	go tick(ctx, tr)
	err = tr.Serve(ctx) // nil once stdin ends and every request is answered
	if errors.Is(err, context.Canceled) {
		return nil // a signal
	}
	return err // an *mcp.OutputError after a failed write to stdout
}

// tick sends notifications/hello/tick every minute until the connection ends.
func tick(ctx context.Context, tr *mcp.Transport) {
	ticker := time.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			err := tr.Notify(ctx, "notifications/hello/tick", map[string]string{"time": now.Format(time.RFC3339)})
			if errors.Is(err, mcp.ErrClosed) || errors.Is(err, mcp.ErrTransportDown) || errors.Is(err, mcp.ErrOutputFailed) {
				return
			}
			if err != nil {
				log.Print("tick: ", err)
			}
		}
	}
}

// endregion stdio

// region http
// serveHTTP serves rt over Streamable HTTP at http://addr/mcp until ctx
// ends, then drains: requests in flight finish, streams end.
func serveHTTP(ctx context.Context, rt *mcp.Runtime, addr string) error {
	h, err := mcp.NewHTTPHandler(rt, mcp.HTTPOptions{})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Printf("serving MCP at http://%s/mcp", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Requests in flight have 30s (HTTPOptions.RequestTimeout) to finish.
	drain, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := h.Shutdown(drain); err != nil {
		srv.Close()
		return err
	}
	return srv.Shutdown(drain)
}

// endregion http
