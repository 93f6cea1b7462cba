package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// otlpExporter sends spans and metrics to an OTLP/HTTP endpoint in the JSON
// encoding. Spans wait in a bounded queue (a channel): enqueue never blocks,
// and a span that finds the queue full is dropped and counted. One goroutine
// sends batches, one request at a time, each bounded by the options'
// Timeout with its retries (429, 502, 503, 504: exponential backoff from
// 100 ms, or Retry-After when the collector names a shorter one); so the
// memory held is the queue, one batch being sent, and the metrics.
type otlpExporter struct {
	t      *Telemetry
	client *http.Client
	queue  chan *telemetrySpan
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	dropped     atomic.Uint64 // spans dropped: queue full
	failed      atomic.Uint64 // spans whose export failed
	exported    atomic.Uint64 // spans the collector accepted
	failing     atomic.Bool   // a failure was logged and none succeeded since
	exportCount atomic.Uint64 // export requests made (each attempt)
}

func newOTLPExporter(t *Telemetry) *otlpExporter {
	e := &otlpExporter{
		t:      t,
		client: &http.Client{Timeout: t.opts.Timeout},
		queue:  make(chan *telemetrySpan, t.opts.MaxQueue),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	m := t.metrics
	m.gauge("otel.sdk.span.queue.size", "{span}", "Spans waiting for export.", func() []gaugePoint {
		return []gaugePoint{{value: float64(len(e.queue))}}
	})
	m.gauge("otel.sdk.span.dropped", "{span}", "Spans dropped since start, by reason (queue_full: the export queue was full; export_failed: the collector did not take them).", func() []gaugePoint {
		return []gaugePoint{
			{attrs: []telemetryAttr{{key: "reason", value: "queue_full"}}, value: float64(e.dropped.Load())},
			{attrs: []telemetryAttr{{key: "reason", value: "export_failed"}}, value: float64(e.failed.Load())},
		}
	})
	m.gauge("otel.sdk.span.exported", "{span}", "Spans the collector accepted since start.", func() []gaugePoint {
		return []gaugePoint{{value: float64(e.exported.Load())}}
	})
	go e.run()
	return e
}

// enqueue queues s for export, or drops it when the queue is full or the
// exporter stopped.
func (e *otlpExporter) enqueue(s *telemetrySpan) {
	if e.t.opts.TracesEndpoint == "" {
		return
	}
	select {
	case <-e.stop:
		e.dropped.Add(1)
		return
	default:
	}
	select {
	case e.queue <- s:
	default:
		e.dropped.Add(1)
	}
}

// run sends batches of spans when MaxExportBatch are queued or BatchDelay
// passed, and metrics every MetricInterval, until stop; then it sends what
// is queued and the metrics once more.
func (e *otlpExporter) run() {
	defer close(e.done)
	opts := e.t.opts
	batch := make([]*telemetrySpan, 0, opts.MaxExportBatch)
	flushTimer := time.NewTicker(opts.BatchDelay)
	defer flushTimer.Stop()
	metricTimer := time.NewTicker(opts.MetricInterval)
	defer metricTimer.Stop()
	// Shutdown's deadline is enforced by shutdown itself: an export still
	// in flight then is cut when the process exits.
	ctx := context.Background()
	send := func() {
		if len(batch) > 0 {
			e.exportSpans(ctx, batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
			if len(batch) >= opts.MaxExportBatch {
				send()
			}
		case <-flushTimer.C:
			send()
		case <-metricTimer.C:
			e.exportMetrics(ctx)
		case <-e.stop:
			for {
				select {
				case s := <-e.queue:
					batch = append(batch, s)
					if len(batch) >= opts.MaxExportBatch {
						send()
					}
					continue
				default:
				}
				break
			}
			send()
			e.exportMetrics(ctx)
			return
		}
	}
}

// shutdown stops the exporter after a last export, waiting at most until
// ctx ends.
func (e *otlpExporter) shutdown(ctx context.Context) error {
	e.once.Do(func() { close(e.stop) })
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("telemetry: flush on exit: %w", ctx.Err())
	}
}

func (e *otlpExporter) exportSpans(ctx context.Context, spans []*telemetrySpan) {
	body := encodeSpans(e.t, spans)
	if err := e.post(ctx, e.t.opts.TracesEndpoint, body); err != nil {
		e.failed.Add(uint64(len(spans)))
		e.logFailure("traces", err)
		return
	}
	e.exported.Add(uint64(len(spans)))
	e.failing.Store(false)
}

func (e *otlpExporter) exportMetrics(ctx context.Context) {
	if e.t.opts.MetricsEndpoint == "" {
		return
	}
	if err := e.post(ctx, e.t.opts.MetricsEndpoint, encodeMetrics(e.t)); err != nil {
		e.logFailure("metrics", err)
		return
	}
	e.failing.Store(false)
}

// logFailure logs the first failure of a streak at warn level, the rest at
// debug: a collector that is down must not flood stderr.
func (e *otlpExporter) logFailure(signal string, err error) {
	if e.failing.CompareAndSwap(false, true) {
		e.t.opts.Logger.Warn("telemetry: export failed; dropping what failed until the collector answers", "signal", signal, "err", err)
		return
	}
	e.t.opts.Logger.Debug("telemetry: export failed", "signal", signal, "err", err)
}

// errRetryable marks a response worth retrying.
var errRetryable = errors.New("retryable status")

// post sends body, retrying 429, 502, 503 and 504 (and failed connections)
// with exponential backoff, all within the options' Timeout.
func (e *otlpExporter) post(ctx context.Context, url string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.t.opts.Timeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		retryAfter, err := e.postOnce(ctx, url, body)
		if err == nil || !errors.Is(err, errRetryable) {
			return err
		}
		wait := backoff
		if retryAfter > 0 && retryAfter < wait*4 {
			wait = retryAfter
		}
		backoff = min(backoff*2, 5*time.Second)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-timer.C:
		}
	}
}

func (e *otlpExporter) postOnce(ctx context.Context, url string, body []byte) (time.Duration, error) {
	e.exportCount.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.t.opts.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %v", errRetryable, err)
	}
	// The body is read (to reuse the connection) but never more than 64 KiB
	// of it, whatever a broken collector sends; it is not parsed.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		var after time.Duration
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			after = time.Duration(secs) * time.Second
		}
		return after, fmt.Errorf("%w: HTTP %d", errRetryable, resp.StatusCode)
	}
	return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// jsonBuffer builds OTLP/JSON by hand: hex ids, decimal strings for 64-bit
// integers, as the OTLP/HTTP JSON encoding requires.
type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) raw(s string) { j.b = append(j.b, s...) }
func (j *jsonBuffer) str(s string) { j.b = appendJSONString(j.b, s) }
func (j *jsonBuffer) uint64s(v uint64) {
	j.b = append(strconv.AppendUint(append(j.b, '"'), v, 10), '"')
}
func (j *jsonBuffer) nanos(t time.Time) { j.uint64s(uint64(t.UnixNano())) }
func (j *jsonBuffer) hexID(id []byte)   { j.raw(`"` + hex.EncodeToString(id) + `"`) }
func (j *jsonBuffer) float(v float64)   { j.b = strconv.AppendFloat(j.b, v, 'g', -1, 64) }
func (j *jsonBuffer) comma(i int) {
	if i > 0 {
		j.b = append(j.b, ',')
	}
}
func (j *jsonBuffer) attributes(attrs []telemetryAttr) {
	j.raw(`[`)
	for i, a := range attrs {
		j.comma(i)
		j.raw(`{"key":`)
		j.str(a.key)
		if a.isInt {
			j.raw(`,"value":{"intValue":`)
			j.uint64s(uint64(a.num))
			j.raw(`}}`)
			continue
		}
		j.raw(`,"value":{"stringValue":`)
		j.str(a.value)
		j.raw(`}}`)
	}
	j.raw(`]`)
}

func (j *jsonBuffer) resourceAndScope(t *Telemetry, kind string) {
	j.raw(`{"resource` + kind + `":[{"resource":{"attributes":`)
	j.attributes(t.resource)
	j.raw(`},"scope` + kind + `":[{"scope":{"name":"mcpstdio","version":`)
	j.str(serverVersionForTelemetry)
	j.raw(`},`)
}

// spanEventStarted is the event of a SERVER span at the moment its request
// started running on a worker, after its wait in the executor's queue.
const spanEventStarted = "mcp.server.request.started"

// serverVersionForTelemetry is the instrumentation scope's version.
const serverVersionForTelemetry = "1"

// encodeSpans is the OTLP/JSON ExportTraceServiceRequest of spans.
func encodeSpans(t *Telemetry, spans []*telemetrySpan) []byte {
	var j jsonBuffer
	j.resourceAndScope(t, "Spans")
	j.raw(`"spans":[`)
	for i, s := range spans {
		j.comma(i)
		j.raw(`{"traceId":`)
		j.hexID(s.sc.TraceID[:])
		j.raw(`,"spanId":`)
		j.hexID(s.sc.SpanID[:])
		if s.parent != [8]byte{} {
			j.raw(`,"parentSpanId":`)
			j.hexID(s.parent[:])
		}
		if s.sc.TraceState != "" {
			j.raw(`,"traceState":`)
			j.str(s.sc.TraceState)
		}
		j.raw(`,"name":`)
		j.str(s.name)
		j.raw(`,"kind":` + strconv.Itoa(s.kind) + `,"startTimeUnixNano":`)
		j.nanos(s.start)
		j.raw(`,"endTimeUnixNano":`)
		j.nanos(s.end)
		j.raw(`,"attributes":`)
		j.attributes(s.attrs)
		if len(s.links) > 0 {
			j.raw(`,"links":[`)
			for k, l := range s.links {
				j.comma(k)
				j.raw(`{"traceId":`)
				j.hexID(l.TraceID[:])
				j.raw(`,"spanId":`)
				j.hexID(l.SpanID[:])
				j.raw(`}`)
			}
			j.raw(`]`)
		}
		if !s.startedAt.IsZero() {
			j.raw(`,"events":[{"timeUnixNano":`)
			j.nanos(s.startedAt)
			j.raw(`,"name":"` + spanEventStarted + `"}]`)
		}
		if s.errType != "" {
			j.raw(`,"status":{"code":2,"message":`)
			j.str(s.errMsg)
			j.raw(`}`)
		}
		j.raw(`}`)
	}
	j.raw(`]}]}]}`)
	return j.b
}

// encodeMetrics is the OTLP/JSON ExportMetricsServiceRequest of the
// instruments' current values (cumulative temporality).
func encodeMetrics(t *Telemetry) []byte {
	m := t.metrics
	now := time.Now()
	var j jsonBuffer
	j.resourceAndScope(t, "Metrics")
	j.raw(`"metrics":[`)
	n := 0
	m.mu.Lock()
	for _, h := range []*histogramInstrument{&m.ops, &m.sessions} {
		j.comma(n)
		n++
		j.raw(`{"name":`)
		j.str(h.name)
		j.raw(`,"unit":`)
		j.str(h.unit)
		j.raw(`,"description":`)
		j.str(h.description)
		j.raw(`,"histogram":{"aggregationTemporality":2,"dataPoints":[`)
		for i, key := range h.order {
			s := h.series[key]
			j.comma(i)
			j.raw(`{"attributes":`)
			j.attributes(s.attrs)
			j.raw(`,"startTimeUnixNano":`)
			j.nanos(m.start)
			j.raw(`,"timeUnixNano":`)
			j.nanos(now)
			j.raw(`,"count":`)
			j.uint64s(s.count)
			j.raw(`,"sum":`)
			j.float(s.sum)
			j.raw(`,"min":`)
			j.float(s.min)
			j.raw(`,"max":`)
			j.float(s.max)
			j.raw(`,"bucketCounts":[`)
			for k, c := range s.counts {
				j.comma(k)
				j.uint64s(c)
			}
			j.raw(`],"explicitBounds":[`)
			for k, bound := range durationBuckets() {
				j.comma(k)
				j.float(bound)
			}
			j.raw(`]}`)
		}
		j.raw(`]}}`)
	}
	for _, c := range m.counters {
		j.comma(n)
		n++
		j.raw(`{"name":`)
		j.str(c.name)
		j.raw(`,"unit":`)
		j.str(c.unit)
		j.raw(`,"sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[`)
		for i, key := range c.order {
			s := c.values[key]
			j.comma(i)
			j.raw(`{"attributes":`)
			j.attributes(s.attrs)
			j.raw(`,"startTimeUnixNano":`)
			j.nanos(m.start)
			j.raw(`,"timeUnixNano":`)
			j.nanos(now)
			j.raw(`,"asInt":`)
			j.uint64s(s.value)
			j.raw(`}`)
		}
		j.raw(`]}}`)
	}
	gauges := append([]*gaugeInstrument(nil), m.gauges...)
	m.mu.Unlock()
	for _, g := range gauges {
		j.comma(n)
		n++
		j.raw(`{"name":`)
		j.str(g.name)
		j.raw(`,"unit":`)
		j.str(g.unit)
		j.raw(`,"gauge":{"dataPoints":[`)
		for i, p := range g.read() {
			j.comma(i)
			j.raw(`{"attributes":`)
			j.attributes(p.attrs)
			j.raw(`,"timeUnixNano":`)
			j.nanos(now)
			j.raw(`,"asDouble":`)
			j.float(p.value)
			j.raw(`}`)
		}
		j.raw(`]}}`)
	}
	j.raw(`]}]}]}`)
	return j.b
}
