// Command rawhttp is the limit of a Go MCP server over HTTP: a bare
// net/http server whose handler reads a POST's body and answers a canned
// MCP answer that carries the request's id (and a tools/call's text),
// found by a byte scan with no JSON decoding; an initialize gets an
// Mcp-Session-Id, a notification 202. No header, session or schema is
// checked. go run ./bench/limits compares the server with it.
//
//	rawhttp [-addr 127.0.0.1:0] [-addr-file FILE]
//
// It serves at /mcp until it is killed or gets SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"mcpstdio/internal/cannedecho"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`address` to listen on (port 0: a free port)")
	addrFile := flag.String("addr-file", "", "once listening, write the address (host:port) to this `file`")
	flag.Parse()
	if err := run(*addr, *addrFile); err != nil {
		fmt.Fprintln(os.Stderr, "rawhttp:", err)
		os.Exit(1)
	}
}

func run(addr, addrFile string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if addrFile != "" {
		// Written whole under another name first: a reader never sees half.
		tmp := filepath.Join(filepath.Dir(addrFile), "."+filepath.Base(addrFile)+".tmp")
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, addrFile); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", cannedecho.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "rawhttp: serving MCP at http://%s/mcp\n", ln.Addr())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
