//go:build ignore

// This file is copied next to mcpstdio's library files, into the package
// that vendors them (its package clause renamed like theirs); the build
// constraint above keeps it out of this directory's own package and is
// removed in the copy. It needs go.opentelemetry.io/otel, .../otel/trace and
// .../otel/metric (this module's go.mod names the versions it is tested
// with).

package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// OTelObserver implements Observer on an OpenTelemetry TracerProvider and
// MeterProvider: the SERVER span of each request, CLIENT spans of the
// server's requests to the client and linked spans of task runs, named and
// attributed as the MCP semantic conventions say, and the histograms
// mcp.server.operation.duration and mcp.server.session.duration with the
// conventions' buckets. A handler's context carries the span the OTel way
// (trace.SpanFromContext), so tracer.Start(ctx, ...) in a handler starts a
// child of the request's span.
type OTelObserver struct {
	tracer            trace.Tracer
	propagator        propagation.TextMapPropagator
	operationDuration metric.Float64Histogram
	sessionDuration   metric.Float64Histogram
}

// otelDurationBuckets are the conventions' bucket boundaries (seconds).
func otelDurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

// NewOTelObserver returns an Observer that records on tp and mp.
func NewOTelObserver(tp trace.TracerProvider, mp metric.MeterProvider) (*OTelObserver, error) {
	const scope = "mcpstdio"
	meter := mp.Meter(scope)
	ops, err := meter.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(otelDurationBuckets()...))
	if err != nil {
		return nil, err
	}
	sessions, err := meter.Float64Histogram("mcp.server.session.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP session as observed on the MCP server."),
		metric.WithExplicitBucketBoundaries(otelDurationBuckets()...))
	if err != nil {
		return nil, err
	}
	return &OTelObserver{
		tracer:            tp.Tracer(scope),
		propagator:        propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		operationDuration: ops,
		sessionDuration:   sessions,
	}, nil
}

// otelSpan is one span of an OTelObserver. A SERVER span is started in two
// steps, so that the goroutine that owns the connection does little:
// StartOperation keeps the request (op), and resolve, run once by whichever
// of Started (on the request's worker), SpanContext, Context or End comes
// first, reads its trace context and starts the SDK span, timestamped when
// the request was received.
type otelSpan struct {
	o        *OTelObserver
	op       *OperationStart // a SERVER span's request until resolved; nil for others
	resolved sync.Once
	span     trace.Span
	baggage  baggage.Baggage
	start    time.Time
	// metricAttrs are the duration metric's attributes (SERVER spans only).
	metricAttrs []attribute.KeyValue
	server      bool
}

// StartOperation implements Observer: it keeps op; the span starts on the
// request's worker (see otelSpan).
func (o *OTelObserver) StartOperation(op *OperationStart) OperationSpan {
	return &otelSpan{o: o, op: op, start: op.Received, server: true}
}

// resolve starts a SERVER span's SDK span, once: params._meta's trace
// context is the parent; over HTTP a traceparent header is the parent when
// _meta has none, a link when it has.
func (s *otelSpan) resolve() {
	if s.op != nil {
		s.resolved.Do(s.startOperation)
	}
}

func (s *otelSpan) startOperation() {
	o, op := s.o, s.op
	tc := TraceContextFromParams(op.Params)
	ctx := o.propagator.Extract(context.Background(), propagation.MapCarrier{
		"traceparent": tc.Traceparent, "tracestate": tc.Tracestate, "baggage": tc.Baggage,
	})
	var links []trace.Link
	if info, ok := TransportInfoFromContext(op.Values); ok && info.Traceparent != "" {
		header := o.propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": info.Traceparent, "tracestate": info.Tracestate})
		if hsc := trace.SpanContextFromContext(header); hsc.IsValid() {
			if psc := trace.SpanContextFromContext(ctx); !psc.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, hsc)
			} else if !psc.Equal(hsc) {
				links = append(links, trace.Link{SpanContext: hsc})
			}
		}
	}
	name, conv := op.Conventions()
	attrs := make([]attribute.KeyValue, len(conv))
	var metricAttrs []attribute.KeyValue
	for i, a := range conv {
		attrs[i] = attribute.String(a.Key, a.Value)
		switch a.Key {
		case "mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name", "gen_ai.operation.name", "mcp.protocol.version", "network.transport", "network.protocol.name":
			metricAttrs = append(metricAttrs, attrs[i])
		}
	}
	_, s.span = o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...),
		trace.WithLinks(links...), trace.WithTimestamp(op.Received))
	s.baggage, s.metricAttrs = baggage.FromContext(ctx), metricAttrs
}

func (o *OTelObserver) SessionStarted(SessionInfo) {}

// SessionEnded records mcp.server.session.duration with error.type (only
// when the session ended on an error), mcp.protocol.version and the
// transport's attributes.
func (o *OTelObserver) SessionEnded(s SessionInfo) {
	attrs := make([]attribute.KeyValue, 0, 4)
	if s.ErrorType != "" {
		attrs = append(attrs, attribute.String("error.type", s.ErrorType))
	}
	if s.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", s.ProtocolVersion))
	}
	if s.Transport == "" {
		attrs = append(attrs, attribute.String("network.transport", "pipe"))
	} else {
		attrs = append(attrs, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
	}
	o.sessionDuration.Record(context.Background(), time.Since(s.Started).Seconds(), metric.WithAttributes(attrs...))
}

func (s *otelSpan) SpanContext() SpanContext {
	s.resolve()
	sc := s.span.SpanContext()
	return SpanContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags()), TraceState: sc.TraceState().String()}
}

// Context returns ctx carrying the span and the request's baggage, as the
// OpenTelemetry API expects them.
func (s *otelSpan) Context(ctx context.Context) context.Context {
	s.resolve()
	ctx = trace.ContextWithSpan(ctx, s.span)
	if s.baggage.Len() > 0 {
		ctx = baggage.ContextWithBaggage(ctx, s.baggage)
	}
	return ctx
}

func (s *otelSpan) StartClient(method string) OperationSpan {
	s.resolve()
	_, span := s.o.tracer.Start(trace.ContextWithSpan(context.Background(), s.span), method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attribute.String("mcp.method.name", method)))
	return &otelSpan{o: s.o, span: span, start: time.Now()}
}

func (s *otelSpan) StartLinked(name string) OperationSpan {
	s.resolve()
	_, span := s.o.tracer.Start(context.Background(), name, trace.WithNewRoot(),
		trace.WithLinks(trace.Link{SpanContext: s.span.SpanContext()}))
	return &otelSpan{o: s.o, span: span, start: time.Now()}
}

// Started records the request's start on a worker, after its queue wait:
// the span event mcp.server.request.started with the wait as
// mcp.server.request.queue_wait_ns (the SDK's spans are safe for concurrent
// use, and ignore an event after End).
func (s *otelSpan) Started(at time.Time) {
	s.resolve()
	s.span.AddEvent("mcp.server.request.started", trace.WithTimestamp(at),
		trace.WithAttributes(attribute.Int64("mcp.server.request.queue_wait_ns", int64(max(at.Sub(s.start), 0)))))
}

// End records how the operation ended (error.type,
// rpc.response.status_code, an ERROR status with the JSON-RPC message) and,
// for a SERVER span, its duration.
func (s *otelSpan) End(e OperationEnd) {
	s.resolve()
	var attrs []attribute.KeyValue
	if e.ErrorCode != 0 {
		attrs = append(attrs, attribute.String("rpc.response.status_code", strconv.Itoa(e.ErrorCode)))
	}
	if errType := e.ErrorType(); errType != "" {
		attrs = append(attrs, attribute.String("error.type", errType))
		msg := e.ErrorMessage
		if msg == "" {
			msg = errType
		}
		s.span.SetStatus(codes.Error, msg)
	}
	s.span.SetAttributes(attrs...)
	s.span.End()
	if s.server {
		s.o.operationDuration.Record(context.Background(), time.Since(s.start).Seconds(),
			metric.WithAttributes(append(s.metricAttrs, attrs...)...))
	}
}
