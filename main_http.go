package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// mcpPath is where the command serves MCP over HTTP.
const mcpPath = "/mcp"

// httpBoundFlags are the flags of the HTTP handler's bounds that stdio has
// no counterpart of.
type httpBoundFlags struct {
	maxSessions, maxListenStreams, maxReplayBytes, maxSessionReplayBytes, maxBodyBytes int
	sessionIdleTimeout, readBodyTimeout                                                time.Duration
}

func (f *httpBoundFlags) register(fs *flag.FlagSet) {
	optionVar(fs, &f.maxSessions, "http-max-sessions", DefaultMaxSessions, "with -http, live sessions (2025-era, made by initialize) of all clients together; an initialize beyond them is refused 503")
	optionVar(fs, &f.sessionIdleTimeout, "http-session-idle-timeout", DefaultSessionIdleTimeout, "with -http, time a session may stay with no request running and no stream open; beyond it the session ends, and its id is answered 404")
	optionVar(fs, &f.maxListenStreams, "http-max-listen-streams", DefaultMaxListenStreams, "with -http, open subscriptions/listen streams of all clients together (one client's: -max-subscriptions); one beyond is answered -32603")
	optionVar(fs, &f.maxReplayBytes, "http-max-replay-bytes", DefaultMaxReplayBytes, "with -http, bytes of SSE events all sessions keep to resume streams after Last-Event-ID; beyond them the oldest go first, of the session keeping the most, and resuming after one gone is refused 400")
	optionVar(fs, &f.maxSessionReplayBytes, "http-max-session-replay-bytes", DefaultMaxSessionReplayBytes, "with -http, bytes of SSE events one session keeps to resume its streams after Last-Event-ID; beyond them its oldest go first, and resuming after one gone is refused 400")
	optionVar(fs, &f.maxBodyBytes, "http-max-body-bytes", DefaultMaxBodyBytes, "with -http, limit of one POST body (413 beyond, without reading it whole)")
	optionVar(fs, &f.readBodyTimeout, "http-read-body-timeout", DefaultReadBodyTimeout, "with -http, time a POST body may take to arrive once the server starts reading it (408 beyond)")
}

// httpOptions are the handler's options the flags set.
func (c *config) httpOptions() HTTPOptions {
	return HTTPOptions{
		MaxBodyBytes:          c.http.maxBodyBytes,
		ReadBodyTimeout:       c.http.readBodyTimeout,
		MaxSessions:           c.http.maxSessions,
		SessionIdleTimeout:    c.http.sessionIdleTimeout,
		MaxListenStreams:      c.http.maxListenStreams,
		MaxReplayBytes:        c.http.maxReplayBytes,
		MaxSessionReplayBytes: c.http.maxSessionReplayBytes,
		RequestTimeout:        c.requestTimeout,
		MaxSubscriptions:      c.maxSubscriptions,
		MaxConcurrency:        c.maxConcurrency,
		MaxQueue:              c.maxQueue,
		MaxInflightBytes:      c.maxInflightBytes,
		// Each client's share; 0 is the whole, as the flags mean it.
		MaxClientConcurrency:   c.maxClientConcurrency,
		MaxClientQueue:         c.maxClientQueue,
		MaxClientInflightBytes: c.maxClientInflightBytes,
		MaxClientSessions:      c.maxClientSessions,
		KeepAlive:              c.keepAlive,
		WriteTimeout:           c.writeTimeout,
		AllowedOrigins:         c.allowedOrigins,
		TrustedProxies:         c.trustedProxies,
	}
}

// serveHTTP is the command with -http: it serves rt over Streamable HTTP at
// mcpPath of c.httpAddr (and, with authorization, the protected resource
// metadata at its well-known paths) until SIGINT or SIGTERM, then drains:
// the server stops accepting and closes the connections no request arrived
// on, while the handler drains (HTTPHandler.Shutdown: open streams end,
// requests in flight finish within the request timeout, bodies still
// trickling in are cut); once it has, WriteTimeout plus a second later
// whatever clients are still connected are cut. It returns the exit status:
// 0 after the drain, 1 when serving failed, 2 for a bad address.
func serveHTTP(c config, rt *Runtime, logger *slog.Logger, stderr io.Writer, tel *commandTelemetry) int {
	if c.notifyEvery > 0 || len(c.notificationMethods) > 0 {
		fmt.Fprintln(stderr, "mcpstdio: -notification-methods and -notify-every apply to stdio only, not with -http")
		return 2
	}
	host, port, err := net.SplitHostPort(c.httpAddr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio: -http %q: %v\n", c.httpAddr, err)
		return 2
	}
	if host == "" {
		host = "127.0.0.1" // never all interfaces unless the user names them
	}
	if err := registerHTTPReferenceTools(rt); err != nil {
		logger.Error("mcpstdio: building the catalog failed", "err", err)
		return 1
	}
	allowed := c.allowedHosts
	if !isLoopbackHost(host) {
		allowed = append(allowed, host)
	}
	auth, err := c.auth.options(logger)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if auth != nil {
		allowed = append(allowed, c.auth.resourceHost()) // clients name the resource's host
	}
	opts := c.httpOptions()
	opts.AllowedHosts, opts.Logger, opts.Auth, opts.Observer = allowed, logger, auth, tel.observer()
	h, err := NewHTTPHandler(rt, opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if tel.t != nil {
		tel.t.ObserveHTTP(h)
	}
	tcp, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		logger.Error("mcpstdio: listening failed", "addr", c.httpAddr, "err", err)
		h.Close()
		return 1
	}
	ln, err := NewHTTPListener(tcp, HTTPListenerOptions{MaxConnections: c.maxConnections})
	if err != nil {
		fmt.Fprintln(stderr, err)
		tcp.Close()
		h.Close()
		return 2
	}
	bound := ln.Addr().String()
	if c.httpAddrFile != "" {
		if err := writeFileAtomic(c.httpAddrFile, bound+"\n"); err != nil {
			logger.Error("mcpstdio: -http-addr-file", "err", err)
			ln.Close()
			h.Close()
			return 1
		}
	}
	mux := http.NewServeMux()
	mux.Handle(mcpPath, h)
	if path, metadata := h.ProtectedResourceMetadata(); metadata != nil {
		mux.Handle(path, metadata)
		if path != wellKnownProtectedResource {
			mux.Handle(wellKnownProtectedResource, metadata) // where clients look when a challenge names none
		}
	}
	srv := newHTTPServer(mux, c.maxHeaderBytes, logger, ln.ConnState) // idle connections are shed first at the bound
	setMemoryLimit(memoryLimit(c), logger)
	setGCPercent(httpGCPercent, logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "mcpstdio: serving MCP over HTTP at http://%s%s\n", bound, mcpPath)
	select {
	case err := <-served:
		logger.Error("mcpstdio: serving HTTP failed", "err", err)
		h.Close()
		return 1
	case <-ctx.Done():
	}
	logger.Info("mcpstdio: stopping: draining requests in flight")
	// The requests in flight have their deadlines; this bounds the drain
	// also when they have none, or wait in the queue.
	drain := c.requestTimeout
	if drain <= 0 {
		drain = defaultJobTimeout
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain+c.writeTimeout+time.Second)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		srv.Shutdown(sctx) // its only errors are sctx's and the listener's close
		close(stopped)
	}()
	if err := h.Shutdown(sctx); err != nil {
		logger.Warn("mcpstdio: drain cut short", "err", err)
	}
	// Drained, the handler runs nothing: what can be left is net/http's,
	// answers' last bytes being flushed or a client sending a next
	// request's headers (up to ReadHeaderTimeout).
	grace := time.NewTimer(c.writeTimeout + time.Second)
	defer grace.Stop()
	select {
	case <-stopped:
	case <-grace.C:
	}
	srv.Close()
	<-stopped
	return 0
}

// writeFileAtomic writes content to path through a temporary file, so a
// reader never sees it half written.
func writeFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mcpstdio-addr-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// headerParamSchema is the input schema of test_header_param: its region
// is mirrored in the Mcp-Param-Region header (2026-07-28, x-mcp-header).
const headerParamSchema = `{"type":"object","properties":{"region":{"type":"string","description":"Mirrored in the Mcp-Param-Region header","x-mcp-header":"Region"}},"required":["region"]}`

// registerHTTPReferenceTools adds the tools only the HTTP reference server
// has: test_header_param, whose argument travels in a header too.
func registerHTTPReferenceTools(rt *Runtime) error {
	return rt.AddTool(Tool{Name: "test_header_param", Description: "Returns its region argument, which the client mirrors in the Mcp-Param-Region header", InputSchema: json.RawMessage(headerParamSchema)},
		func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
			var args struct {
				Region string `json:"region"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return TextResult("region: " + args.Region), nil
		})
}

// newHTTPServer is the http.Server of -http around handler: the header
// lines' timeout and bound (431 beyond maxHeaderBytes), the idle timeout,
// net/http's own errors logged at warn level, and connState called at every
// connection's change of state. The benchmarks' transport floor serves
// through it too, so that it measures what the server's settings cost.
func newHTTPServer(handler http.Handler, maxHeaderBytes int, logger *slog.Logger, connState func(net.Conn, http.ConnState)) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnState:         connState,
	}
}
