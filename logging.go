package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// logLevels are MCP's log levels, least severe first (RFC 5424 severities).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logSeverity returns the rank of level in logLevels, or -1.
func logSeverity(level string) int { return slices.Index(logLevels, level) }

// setLogLevel answers logging/setLevel (initialize era): the transport
// records the level as the connection's before writing the {} reply.
func (rt *Runtime) setLogLevel(c *methodCall) Reply {
	level, ok := decodeString(c.params.get("level"))
	if !ok || logSeverity(level) < 0 {
		return Reply{Error: invalidParams("Invalid params: level must be one of " + strings.Join(logLevels, ", "))}
	}
	return Reply{Result: json.RawMessage(`{}`), LogLevel: level}
}

// logThreshold is the least severe level a request's log messages are sent
// at, or "" when none are: the 2026 request's own _meta logLevel; in the
// initialize era the connection's level from logging/setLevel, else the
// runtime's default.
func (rt *Runtime) logThreshold(c *methodCall) string {
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
// the message is written, and fails once the request has been answered. In
// a call that became a task nothing is sent and it returns nil.
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
	return r.peer.Notify(ctx, methodMessage, params)
}

// Logger returns a *slog.Logger whose records become notifications/message
// to the client through Log: slog's Debug, Info, Warn and Error map to debug,
// info, warning and error; the message and attributes become the data object
// {"msg": ..., attrs...}, where an attribute inside a group (slog.Group or
// WithGroup) is keyed "group.key" and an error value is its text; name is the
// logger field. Records the client did not ask for are dropped, and failures
// to send are ignored.
func (r *HandlerRequest) Logger(ctx context.Context, name string) *slog.Logger {
	return slog.New(&clientLogHandler{ctx: ctx, req: r, name: name})
}

// clientLogHandler is the slog.Handler behind HandlerRequest.Logger.
type clientLogHandler struct {
	ctx    context.Context
	req    *HandlerRequest
	name   string
	fields []logField // from WithAttrs, keyed by the groups open when added
	group  string     // "" or the open groups, each followed by "."
}

// logField is one attribute of the data object, its key fully qualified.
type logField struct {
	key   string
	value any
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
	for _, f := range h.fields {
		data[f.key] = f.value
	}
	rec.Attrs(func(a slog.Attr) bool {
		flattenAttr(h.group, a, func(f logField) { data[f.key] = f.value })
		return true
	})
	h.req.Log(h.ctx, slogToMCPLevel(rec.Level), h.name, data)
	return nil
}

// flattenAttr passes a to put as fields keyed prefix+key: a group's members
// as prefix+"group.member", an error as its text. Empty attributes and
// groups are dropped, as slog's own handlers do.
func flattenAttr(prefix string, a slog.Attr, put func(logField)) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, member := range a.Value.Group() {
			flattenAttr(prefix, member, put)
		}
		return
	}
	v := a.Value.Any()
	if err, ok := v.(error); ok {
		v = err.Error()
	}
	put(logField{key: prefix + a.Key, value: v})
}

func (h *clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.fields = slices.Clip(h.fields)
	for _, a := range attrs {
		flattenAttr(h.group, a, func(f logField) { c.fields = append(c.fields, f) })
	}
	return &c
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	return &c
}
