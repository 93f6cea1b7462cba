package main

// Telemetry: an Observer (observer.go) that records OpenTelemetry spans and
// metrics as the MCP semantic conventions name them, and exports them over
// OTLP/HTTP in the JSON encoding (telemetry_otlp.go), with the standard
// library only. The OpenTelemetry SDK adapter (module mcpstdio/otel) is the
// alternative for programs that run the SDK already.

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Span kinds, as OTLP numbers them.
const (
	spanKindInternal = 1
	spanKindServer   = 2
	spanKindClient   = 3
)

// maxAttributeLength bounds each attribute value a client can choose (a
// tool name, a URI, a method), so that a span's size is bounded.
const maxAttributeLength = 1024

// TelemetryOptions configure a Telemetry; TelemetryOptionsFromEnv reads
// them from the OpenTelemetry environment variables. A zero value means the
// default (see Unlimited for the rule every options struct follows): the
// zero TelemetryOptions records metrics (for MetricsHandler) and every
// trace, and exports nothing.
type TelemetryOptions struct {
	ServiceName string
	// ResourceAttributes are added to the resource (service.name aside).
	ResourceAttributes map[string]string
	// TracesEndpoint and MetricsEndpoint are the full OTLP/HTTP URLs
	// (".../v1/traces", ".../v1/metrics"); "" exports nothing of that
	// signal.
	TracesEndpoint, MetricsEndpoint string
	// Headers are sent with each export (OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Timeout bounds one export, retries included (default 10s).
	Timeout time.Duration
	// SampleRatio is the share of new traces recorded, up to 1 (default 1:
	// every trace; None: no trace); ParentBased follows the sampled flag of
	// a propagated parent instead.
	SampleRatio float64
	ParentBased bool
	// MaxQueue bounds the spans waiting for export (default 2048); a span
	// that finds it full is dropped and counted. MaxExportBatch (default
	// 512) spans go in one request, at least every BatchDelay (default 5s).
	MaxQueue, MaxExportBatch int
	BatchDelay               time.Duration
	// MetricInterval is the period of metric exports (default 60s).
	MetricInterval time.Duration
	// Logger receives export failures, at most one record per failure
	// streak (nil: slog.Default()).
	Logger *slog.Logger
}

// Telemetry records spans and metrics and exports them. It implements
// Observer. Its methods are safe for concurrent use and never block on the
// collector: a full queue drops.
type Telemetry struct {
	opts     TelemetryOptions
	resource []telemetryAttr
	metrics  *telemetryMetrics
	export   *otlpExporter // nil when nothing is exported

	sessionsOpen atomic.Int64
}

// Defaults of TelemetryOptions.
const (
	defaultTelemetryTimeout      = 10 * time.Second
	defaultTelemetryMaxQueue     = 2048
	defaultTelemetryExportBatch  = 512
	defaultTelemetryBatchDelay   = 5 * time.Second
	defaultTelemetryMetricPeriod = time.Minute
	defaultTelemetryServiceName  = "mcpstdio"
)

// NewTelemetry validates opts and returns a Telemetry configured by them,
// its exporter started; Shutdown stops it. An invalid option is an error
// naming it.
func NewTelemetry(opts TelemetryOptions) (*Telemetry, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	t := &Telemetry{opts: opts, metrics: newTelemetryMetrics()}
	t.resource = append(t.resource, telemetryAttr{key: "service.name", value: opts.ServiceName})
	for _, k := range sortedKeys(opts.ResourceAttributes) {
		if k != "service.name" {
			t.resource = append(t.resource, telemetryAttr{key: k, value: opts.ResourceAttributes[k]})
		}
	}
	t.resource = append(t.resource, telemetryAttr{key: "telemetry.sdk.name", value: "mcpstdio"}, telemetryAttr{key: "telemetry.sdk.language", value: "go"})
	t.metrics.gauge("mcp.server.session.count", "{session}", "Sessions open (stdio connections and HTTP sessions).", func() []gaugePoint {
		return []gaugePoint{{value: float64(t.sessionsOpen.Load())}}
	})
	if opts.TracesEndpoint != "" || opts.MetricsEndpoint != "" {
		t.export = newOTLPExporter(t)
	}
	return t, nil
}

// normalize checks o and fills in the defaults. A MaxExportBatch above
// MaxQueue is MaxQueue.
func (o *TelemetryOptions) normalize() error {
	if err := checkOptions(
		checkOption("TelemetryOptions.Timeout", o.Timeout),
		checkAtMost("TelemetryOptions.SampleRatio", o.SampleRatio, 1, None),
		checkOption("TelemetryOptions.MaxQueue", o.MaxQueue),
		checkOption("TelemetryOptions.MaxExportBatch", o.MaxExportBatch),
		checkOption("TelemetryOptions.BatchDelay", o.BatchDelay),
		checkOption("TelemetryOptions.MetricInterval", o.MetricInterval),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	defaultTo(&o.Timeout, defaultTelemetryTimeout)
	defaultTo(&o.SampleRatio, 1)
	defaultTo(&o.MaxQueue, defaultTelemetryMaxQueue)
	defaultTo(&o.MaxExportBatch, defaultTelemetryExportBatch)
	o.MaxExportBatch = min(o.MaxExportBatch, o.MaxQueue)
	defaultTo(&o.BatchDelay, defaultTelemetryBatchDelay)
	defaultTo(&o.MetricInterval, defaultTelemetryMetricPeriod)
	defaultTo(&o.ServiceName, defaultTelemetryServiceName)
	o.Logger = defaultLogger(o.Logger)
	return nil
}

// telemetryAttr is one span or metric attribute: a string, or an integer when
// isInt.
type telemetryAttr struct {
	key   string
	value string
	num   int64
	isInt bool
}

func stringAttr(key, value string) telemetryAttr {
	if len(value) > maxAttributeLength {
		value = value[:maxAttributeLength]
	}
	return telemetryAttr{key: key, value: value}
}

// telemetrySpan is one span. Its fields are set when it starts and when it
// ends, each by one goroutine; SpanContext, Context, StartClient and
// StartLinked read only what was set at the start. A SERVER span is started
// in two steps, so that the goroutine that owns the connection does little:
// StartOperation keeps the request (op); resolve, run once by whichever of
// Started (the worker), SpanContext or End comes first, reads the trace
// context in its params._meta, names the span, picks its ids and makes the
// sampling decision, exactly as if StartOperation had done it.
type telemetrySpan struct {
	t        *Telemetry
	op       *OperationStart // a SERVER span's request until resolved; nil for others
	resolved sync.Once
	sc       SpanContext
	parent   [8]byte
	name     string
	kind     int
	start    time.Time
	end      time.Time
	attrs    []telemetryAttr
	links    []SpanContext
	baggage  string
	errType  string // error.type; "" when it succeeded
	errMsg   string
	isServer bool
	ended    atomic.Bool
	// running is when the request started running on a worker (Started),
	// in Unix nanoseconds; 0 until then. End reads it once.
	running atomic.Int64
	// startedAt is running as End found it: zero when the request never
	// ran (or End came first). Read by the exporter after End.
	startedAt time.Time
}

// StartOperation implements Observer: the SERVER span of a request. It only
// keeps op: the span is resolved on the request's worker.
func (t *Telemetry) StartOperation(op *OperationStart) OperationSpan {
	return &telemetrySpan{t: t, op: op, kind: spanKindServer, start: op.Received, isServer: true}
}

// resolve completes a SERVER span from its request, once; other spans are
// complete from the start.
func (s *telemetrySpan) resolve() {
	if s.op != nil {
		s.resolved.Do(s.resolveOperation)
	}
}

func (s *telemetrySpan) resolveOperation() {
	op := s.op
	tc := TraceContextFromParams(op.Params)
	parent, hasParent := ParseTraceparent(tc.Traceparent)
	if hasParent && validTracestate(tc.Tracestate) {
		parent.TraceState = tc.Tracestate
	}
	var links []SpanContext
	info, _ := TransportInfoFromContext(op.Values)
	if header, ok := ParseTraceparent(info.Traceparent); ok {
		if validTracestate(info.Tracestate) {
			header.TraceState = info.Tracestate
		}
		if !hasParent {
			parent, hasParent = header, true
		} else if header.TraceID != parent.TraceID || header.SpanID != parent.SpanID {
			links = append(links, header)
		}
	}
	s.t.initSpan(s, op.Method, parent, hasParent)
	// A span that is not recorded needs only what its metric carries.
	var room [12]Attribute
	recorded := s.sc.Sampled()
	name, conv := op.conventions(room[:0], recorded)
	if recorded {
		s.name = spanName(name)
	}
	attrs := make([]telemetryAttr, len(conv), len(conv)+4)
	for i, a := range conv {
		attrs[i] = stringAttr(a.Key, a.Value)
	}
	s.attrs, s.links, s.baggage = attrs, links, tc.Baggage
}

// spanName is name cut to maxAttributeLength bytes.
func spanName(name string) string {
	if len(name) > maxAttributeLength {
		return name[:maxAttributeLength]
	}
	return name
}

// newSpan starts a span under parent (a root when !hasParent), sampled as
// the options say.
func (t *Telemetry) newSpan(name string, kind int, parent SpanContext, hasParent bool, start time.Time) *telemetrySpan {
	s := &telemetrySpan{t: t, kind: kind, start: start}
	t.initSpan(s, name, parent, hasParent)
	return s
}

// initSpan gives s its name, its ids under parent (a new trace when
// !hasParent) and its sampling decision.
func (t *Telemetry) initSpan(s *telemetrySpan, name string, parent SpanContext, hasParent bool) {
	s.name = spanName(name)
	if hasParent {
		s.sc.TraceID, s.sc.TraceState, s.parent = parent.TraceID, parent.TraceState, parent.SpanID
	} else {
		binary.BigEndian.PutUint64(s.sc.TraceID[:8], rand.Uint64())
		binary.BigEndian.PutUint64(s.sc.TraceID[8:], rand.Uint64()|1)
	}
	binary.BigEndian.PutUint64(s.sc.SpanID[:], rand.Uint64()|1)
	if t.sampled(parent, hasParent, s.sc.TraceID) {
		s.sc.Flags = 1
	}
}

// sampled is the sampling decision of a new span: a parent-based sampler
// follows a parent's flag; a root (or every span, without ParentBased) is
// recorded when the lower 8 bytes of its trace id fall in the ratio, as
// OpenTelemetry's TraceIdRatioBased sampler does.
func (t *Telemetry) sampled(parent SpanContext, hasParent bool, traceID [16]byte) bool {
	if hasParent && t.opts.ParentBased {
		return parent.Sampled()
	}
	ratio := t.opts.SampleRatio
	switch {
	case ratio >= 1:
		return true
	case ratio <= 0:
		return false
	}
	bound := uint64(ratio * (1 << 63))
	return binary.BigEndian.Uint64(traceID[8:])>>1 < bound
}

func (s *telemetrySpan) SpanContext() SpanContext {
	s.resolve()
	return s.sc
}

// Started implements OperationSpan: the request began running on a worker
// at at. End records it as the span event mcp.server.request.started and
// the wait before it as mcp.server.request.queue_wait_ns.
func (s *telemetrySpan) Started(at time.Time) {
	s.resolve()
	s.running.CompareAndSwap(0, at.UnixNano())
}

// Context returns ctx as it is: contextWithOperationSpan put s in it under
// the core's key, which is where this package looks for it.
func (s *telemetrySpan) Context(ctx context.Context) context.Context { return ctx }

// StartClient starts the CLIENT span of a server-to-client request.
func (s *telemetrySpan) StartClient(method string) OperationSpan {
	s.resolve()
	c := s.t.newSpan(method, spanKindClient, s.sc, true, time.Now())
	c.sc.Flags = s.sc.Flags
	c.attrs = []telemetryAttr{stringAttr("mcp.method.name", method)}
	return c
}

// StartLinked starts a root span of its own trace linked to s (a task's run).
func (s *telemetrySpan) StartLinked(name string) OperationSpan {
	s.resolve()
	l := s.t.newSpan(name, spanKindInternal, SpanContext{}, false, time.Now())
	l.sc.Flags = s.sc.Flags
	l.links = []SpanContext{s.sc}
	return l
}

// End implements OperationSpan: it records the span's error, its duration
// metric (a SERVER span) and queues it for export when sampled. A second
// End does nothing.
func (s *telemetrySpan) End(e OperationEnd) {
	if !s.ended.CompareAndSwap(false, true) {
		return
	}
	s.resolve()
	s.end = time.Now()
	if ns := s.running.Swap(-1); ns > 0 { // a later Started finds -1 and is dropped
		s.startedAt = time.Unix(0, ns)
		s.attrs = append(s.attrs, telemetryAttr{key: "mcp.server.request.queue_wait_ns", num: int64(max(s.startedAt.Sub(s.start), 0)), isInt: true})
	}
	if e.ErrorCode != 0 {
		s.attrs = append(s.attrs, telemetryAttr{key: "rpc.response.status_code", value: strconv.Itoa(e.ErrorCode)})
	}
	if e.Outcome == OperationRefused {
		s.attrs = append(s.attrs, stringAttr("mcp.request.refused.reason", e.RefusedReason))
		s.t.metrics.refused(e.RefusedReason)
	}
	s.errType = e.ErrorType()
	s.errMsg = e.ErrorMessage
	if s.errMsg == "" && s.errType != "" {
		s.errMsg = s.errType
	}
	if s.errType != "" {
		s.attrs = append(s.attrs, telemetryAttr{key: "error.type", value: s.errType})
	}
	if s.isServer {
		s.t.metrics.operation(s)
	}
	if s.sc.Sampled() && s.t.export != nil {
		s.t.export.enqueue(s)
	}
}

// SessionStarted and SessionEnded implement Observer: the sessions gauge
// and mcp.server.session.duration.
func (t *Telemetry) SessionStarted(SessionInfo) { t.sessionsOpen.Add(1) }

func (t *Telemetry) SessionEnded(s SessionInfo) {
	t.sessionsOpen.Add(-1)
	t.metrics.session(s, time.Since(s.Started).Seconds())
}

// Shutdown exports what is queued and a last round of metrics, then stops
// the exporter; it returns when that is done or ctx ends, whichever is
// first. Spans that end later are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.export == nil {
		return nil
	}
	return t.export.shutdown(ctx)
}

// Span is a span a handler starts under its request's span (StartSpan).
type Span struct{ s *telemetrySpan }

// StartSpan starts an INTERNAL span named name as a child of the span ctx
// carries (a request's, or another Span's) and returns a context carrying
// the new span. When ctx carries no span of a Telemetry, or one that is not
// recorded (not sampled, so neither would its children be), the returned
// Span is nil, whose methods do nothing, and ctx is returned as is: no
// allocation. What the handler sends then carries the request's span.
func StartSpan(ctx context.Context, name string) (context.Context, *Span) {
	parent, ok := operationSpanFromContext(ctx).(*telemetrySpan)
	if !ok {
		return ctx, nil
	}
	parent.resolve()
	if !parent.sc.Sampled() {
		return ctx, nil
	}
	s := parent.t.newSpan(name, spanKindInternal, parent.sc, true, time.Now())
	s.sc.Flags = parent.sc.Flags
	return contextWithOperationSpan(ctx, s), &Span{s: s}
}

// SetAttribute sets a string attribute; call it before End.
func (sp *Span) SetAttribute(key, value string) {
	if sp != nil && !sp.s.ended.Load() {
		sp.s.attrs = append(sp.s.attrs, stringAttr(key, value))
	}
}

// End ends the span; err, when not nil, marks it failed (error.type
// "_OTHER", the status message err's text).
func (sp *Span) End(err error) {
	if sp == nil {
		return
	}
	e := OperationEnd{Outcome: OperationAnswered}
	if err != nil {
		e.Outcome, e.ErrorMessage = OperationFailed, err.Error()
	}
	sp.s.End(e)
}

// SpanContext is the span's identity (invalid for a nil Span).
func (sp *Span) SpanContext() SpanContext {
	if sp == nil {
		return SpanContext{}
	}
	return sp.s.sc
}

// BaggageFromContext returns the W3C baggage the request whose handler's
// context ctx is carried in params._meta ("" when none).
func BaggageFromContext(ctx context.Context) string {
	if s, ok := operationSpanFromContext(ctx).(*telemetrySpan); ok {
		s.resolve()
		return s.baggage
	}
	return ""
}

// validTracestate accepts a tracestate of at most 512 characters of
// printable ASCII (W3C's size bound; its members are not checked further).
func validTracestate(v string) bool {
	if v == "" || len(v) > 512 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
