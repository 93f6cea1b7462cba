// Command bridge serves a stdio MCP server over MCP's Streamable HTTP
// transport, so that the MCP conformance suite, which tests servers over
// HTTP only, can test the stdio transport:
//
//	go run ./conformance/bridge [-listen 127.0.0.1:0] [-addr-file FILE] -- CMD [ARGS...]
//
// Each initialize that names no session starts a process of CMD for a new
// session; the stateless 2026-07-28 messages share one process. The bridge
// does what only HTTP has and a stdio server never sees: the Host and
// Origin check of a loopback listener, Accept and Content-Type, the headers
// a 2026-07-28 request mirrors its body in (MCP-Protocol-Version, Mcp-Method,
// Mcp-Name), and the HTTP statuses of 2026-07-28 errors. It does not check a
// tool's Mcp-Param headers (only the server knows the tool's schema), and
// keeps no event ids (no resumable streams). Standard library only.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "`address` to listen on (port 0: a free port)")
	addrFile := flag.String("addr-file", "", "once listening, write the address (host:port) to this `file`")
	path := flag.String("path", "/mcp", "URL `path` of the MCP endpoint")
	maxMessage := flag.Int("max-message", 16<<20, "`bytes` of one message, either way")
	maxSessions := flag.Int("max-sessions", 256, "live sessions (each a process of CMD); an initialize beyond is refused 503")
	anyHost := flag.Bool("any-host", false, "serve requests whose Host or Origin names no loopback host (a loopback listener refuses them)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] -- CMD [ARGS...]\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *maxMessage < 1 || *maxSessions < 1 {
		flag.Usage()
		os.Exit(2)
	}
	logger := log.New(os.Stderr, "bridge: ", log.LstdFlags)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Fatal(err)
	}
	lim := limits{maxMessage: *maxMessage, maxQueued: 4096, maxBacklog: 1024, maxSessions: *maxSessions}
	b := newBridge(flag.Args(), *path, lim, os.Stderr, logger)
	b.checkHost = !*anyHost && ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	if *addrFile != "" {
		// Written whole under another name first: a reader never sees half.
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			logger.Fatal(err)
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			logger.Fatal(err)
		}
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 30 * time.Second}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Printf("serving %q at http://%s%s", flag.Args(), ln.Addr(), *path)
	select {
	case sig := <-signals:
		logger.Printf("%v: stopping", sig)
	case err := <-served:
		logger.Printf("serving: %v", err)
	}
	srv.Close()
	b.close()
}
