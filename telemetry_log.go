package main

import (
	"context"
	"log/slog"
)

// TraceLogHandler wraps a slog.Handler so that every record logged with the
// context of an observed request (a handler's ctx, or one derived from it)
// carries that request's trace_id and span_id, as OpenTelemetry's "trace
// context in non-OTLP log formats" names them. Other records pass unchanged.
func TraceLogHandler(h slog.Handler) slog.Handler { return traceLogHandler{h} }

type traceLogHandler struct{ slog.Handler }

func (h traceLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := SpanContextFromContext(ctx); sc.IsValid() {
			r = r.Clone()
			r.AddAttrs(slog.String("trace_id", sc.TraceIDString()), slog.String("span_id", sc.SpanIDString()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceLogHandler) WithGroup(name string) slog.Handler {
	return traceLogHandler{h.Handler.WithGroup(name)}
}
