package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// logLevels are MCP's log levels, least severe first (RFC 5424 severities).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logSeverity returns the rank of level in logLevels, or -1.
func logSeverity(level string) int { return slices.Index(logLevels, level) }

// setLogLevel answers logging/setLevel (initialize era): the transport
// records the level as the connection's before writing the {} reply.
func (rt *Runtime) setLogLevel(c *call) Reply {
	level, ok := decodeString(c.params.get("level"))
	if !ok || logSeverity(level) < 0 {
		return Reply{Error: invalidParams("Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency")}
	}
	return Reply{Result: json.RawMessage(`{}`), LogLevel: level}
}

// logThreshold is the least severe level a request's log messages are sent
// at, or "" when none are: the 2026 request's own _meta logLevel; in the
// initialize era the connection's level from logging/setLevel, else the
// runtime's default.
func (rt *Runtime) logThreshold(c *call) string {
	switch c.era {
	case eraStateless:
		return c.logLevel
	case eraLegacy:
		if c.req.Session.LogLevel != "" {
			return c.req.Session.LogLevel
		}
		return rt.defaultLogLevel
	}
	return ""
}

// ErrNoClient is returned by a HandlerRequest method that needs to reach the
// client when the request has no transport behind it.
var ErrNoClient = errors.New("mcpstdio: no client to send to")

// logMessageParams are the params of notifications/message.
type logMessageParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// Log sends data to the client as a notifications/message at level (one of
// debug, info, notice, warning, error, critical, alert, emergency) from
// logger (may be ""), when the client asked for messages at that level: in
// the initialize era with logging/setLevel, in 2026-07-28 with the request's
// _meta logLevel. Otherwise it does nothing and returns nil. It blocks until
// the message is written, and fails once the request has been answered.
func (r *HandlerRequest) Log(ctx context.Context, level, logger string, data any) error {
	severity := logSeverity(level)
	if severity < 0 {
		return fmt.Errorf("mcpstdio: unknown log level %q", level)
	}
	if r.logThreshold == "" || severity < logSeverity(r.logThreshold) {
		return nil
	}
	if r.peer == nil {
		return ErrNoClient
	}
	params, err := marshalJSON(logMessageParams{Level: level, Logger: logger, Data: data})
	if err != nil {
		return fmt.Errorf("mcpstdio: log data: %w", err)
	}
	return r.peer.Notify(ctx, "notifications/message", params)
}

// Logger returns a *slog.Logger whose records become notifications/message
// to the client through Log: slog's Debug, Info, Warn and Error map to debug,
// info, warning and error; the message and attributes become the data object
// {"msg": ..., attrs...}; name is the logger field. Records the client did
// not ask for are dropped, and failures to send are ignored.
func (r *HandlerRequest) Logger(ctx context.Context, name string) *slog.Logger {
	return slog.New(&clientLogHandler{ctx: ctx, req: r, name: name})
}

// clientLogHandler is the slog.Handler behind HandlerRequest.Logger.
type clientLogHandler struct {
	ctx   context.Context
	req   *HandlerRequest
	name  string
	attrs []slog.Attr
	group string
}

func slogToMCPLevel(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warning"
	}
	return "error"
}

func (h *clientLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	t := h.req.logThreshold
	return t != "" && logSeverity(slogToMCPLevel(l)) >= logSeverity(t)
}

func (h *clientLogHandler) Handle(_ context.Context, rec slog.Record) error {
	data := map[string]any{"msg": rec.Message}
	put := func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		data[key] = a.Value.Resolve().Any()
		return true
	}
	for _, a := range h.attrs {
		put(a)
	}
	rec.Attrs(put)
	h.req.Log(h.ctx, slogToMCPLevel(rec.Level), h.name, data)
	return nil
}

func (h *clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), attrs...)
	return &c
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
