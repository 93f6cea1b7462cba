package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// durationBuckets are the explicit bucket boundaries the MCP semantic
// conventions give mcp.server.operation.duration and
// mcp.server.session.duration, in seconds.
func durationBuckets() [durationBucketCount]float64 {
	return [durationBucketCount]float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

const durationBucketCount = 14

// maxSeries bounds the attribute sets one instrument keeps: a client that
// sends ever new method names cannot grow memory. Beyond it, points are
// recorded under the one attribute otel.metric.overflow=true.
const maxSeries = 512

// telemetryMetrics holds the instruments. Histograms and counters are
// cumulative from start; gauges are read when exported or scraped.
type telemetryMetrics struct {
	start time.Time

	mu       sync.Mutex
	ops      histogramInstrument
	sessions histogramInstrument
	counters []*counterInstrument
	refusals *counterInstrument
	gauges   []*gaugeInstrument
}

type histogramInstrument struct {
	name, unit, description string
	series                  map[string]*histogramSeries
	order                   []string // keys in first-seen order
}

type histogramSeries struct {
	attrs  []telemetryAttr
	counts [durationBucketCount + 1]uint64
	count  uint64
	sum    float64
	min    float64
	max    float64
}

type counterInstrument struct {
	name, unit, description string
	values                  map[string]*counterSeries
	order                   []string
}

type counterSeries struct {
	attrs []telemetryAttr
	value uint64
}

type gaugePoint struct {
	attrs []telemetryAttr
	value float64
}

type gaugeInstrument struct {
	name, unit, description string
	read                    func() []gaugePoint
}

func newTelemetryMetrics() *telemetryMetrics {
	m := &telemetryMetrics{start: time.Now()}
	m.ops = histogramInstrument{name: "mcp.server.operation.duration", unit: "s",
		description: "MCP request duration as observed on the receiver from the time it was received until the result or ack is sent."}
	m.sessions = histogramInstrument{name: "mcp.server.session.duration", unit: "s",
		description: "The duration of the MCP session as observed on the MCP server."}
	m.refusals = m.counter("mcp.server.request.refused", "{request}", "Requests refused before they ran, by reason.")
	return m
}

func (m *telemetryMetrics) counter(name, unit, description string) *counterInstrument {
	c := &counterInstrument{name: name, unit: unit, description: description}
	m.mu.Lock()
	m.counters = append(m.counters, c)
	m.mu.Unlock()
	return c
}

// gauge registers a gauge read by read at each export or scrape.
func (m *telemetryMetrics) gauge(name, unit, description string, read func() []gaugePoint) {
	m.mu.Lock()
	m.gauges = append(m.gauges, &gaugeInstrument{name: name, unit: unit, description: description, read: read})
	m.mu.Unlock()
}

// operationMetricKey reports whether the convention puts the span
// attribute key on mcp.server.operation.duration (the high-cardinality ones,
// ids and URIs, it leaves out).
func operationMetricKey(key string) bool {
	switch key {
	case "mcp.method.name", "error.type", "gen_ai.tool.name", "gen_ai.prompt.name", "rpc.response.status_code",
		"gen_ai.operation.name", "mcp.protocol.version", "network.transport", "network.protocol.name":
		return true
	}
	return false
}

func (m *telemetryMetrics) operation(s *telemetrySpan) {
	var room [12]telemetryAttr
	attrs := room[:0]
	for _, a := range s.attrs {
		if operationMetricKey(a.key) {
			attrs = append(attrs, a)
		}
	}
	m.mu.Lock()
	m.ops.record(attrs, s.end.Sub(s.start).Seconds())
	m.mu.Unlock()
}

// session records a session's duration with the attributes the conventions
// give mcp.server.session.duration: error.type (only when it ended on an
// error), mcp.protocol.version, network.transport and network.protocol.name.
func (m *telemetryMetrics) session(s SessionInfo, seconds float64) {
	var room [4]telemetryAttr
	attrs := room[:0]
	if s.ErrorType != "" {
		attrs = append(attrs, telemetryAttr{key: "error.type", value: s.ErrorType})
	}
	if s.ProtocolVersion != "" {
		attrs = append(attrs, stringAttr("mcp.protocol.version", s.ProtocolVersion))
	}
	if s.Transport == "" {
		attrs = append(attrs, telemetryAttr{key: "network.transport", value: "pipe"})
	} else {
		attrs = append(attrs, telemetryAttr{key: "network.protocol.name", value: "http"}, telemetryAttr{key: "network.transport", value: "tcp"})
	}
	m.mu.Lock()
	m.sessions.record(attrs, seconds)
	m.mu.Unlock()
}

func (m *telemetryMetrics) refused(reason string) {
	m.mu.Lock()
	attrs := [1]telemetryAttr{stringAttr("reason", reason)}
	m.refusals.add(attrs[:], 1)
	m.mu.Unlock()
}

// appendSeriesKey sorts attrs by key and appends their identity to dst:
// each key and value, each followed by a zero byte. A caller looks a series
// up with the key in a buffer of its own (m[string(b)] does not allocate)
// and makes a string of it only for a new series.
func appendSeriesKey(dst []byte, attrs []telemetryAttr) []byte {
	for i := 1; i < len(attrs); i++ { // insertion sort: a few attributes
		for j := i; j > 0 && attrs[j].key < attrs[j-1].key; j-- {
			attrs[j], attrs[j-1] = attrs[j-1], attrs[j]
		}
	}
	for _, a := range attrs {
		dst = append(dst, a.key...)
		dst = append(dst, 0)
		dst = append(dst, a.value...)
		dst = append(dst, 0)
	}
	return dst
}

// seriesKeyBuffer is the room a series key usually needs.
type seriesKeyBuffer [256]byte

func overflowAttrs() []telemetryAttr {
	return []telemetryAttr{{key: "otel.metric.overflow", value: "true"}}
}

// seriesIn returns the series of attrs in *m, the caller holding the
// metrics' lock: an existing one, found without allocating, or a new one
// that create makes from a copy of attrs, its key appended to *order; once
// *m holds maxSeries series, the overflow series.
func seriesIn[S any](m *map[string]*S, order *[]string, attrs []telemetryAttr, create func(attrs []telemetryAttr) *S) *S {
	var buf seriesKeyBuffer
	key := appendSeriesKey(buf[:0], attrs)
	if s := (*m)[string(key)]; s != nil {
		return s
	}
	if *m == nil {
		*m = make(map[string]*S)
	}
	if len(*m) >= maxSeries {
		attrs = overflowAttrs()
		key = appendSeriesKey(buf[:0], attrs)
		if s := (*m)[string(key)]; s != nil {
			return s
		}
	}
	s, k := create(slices.Clone(attrs)), string(key)
	(*m)[k] = s
	*order = append(*order, k)
	return s
}

// record adds one observation; the caller holds the metrics' lock.
func (h *histogramInstrument) record(attrs []telemetryAttr, v float64) {
	s := seriesIn(&h.series, &h.order, attrs, func(attrs []telemetryAttr) *histogramSeries {
		return &histogramSeries{attrs: attrs, min: v, max: v}
	})
	bounds := durationBuckets()
	i := sort.SearchFloat64s(bounds[:], v) // first bound >= v: buckets are (prev, bound]
	s.counts[i]++
	s.count++
	s.sum += v
	s.min, s.max = math.Min(s.min, v), math.Max(s.max, v)
}

// add adds n; the caller holds the metrics' lock.
func (c *counterInstrument) add(attrs []telemetryAttr, n uint64) {
	s := seriesIn(&c.values, &c.order, attrs, func(attrs []telemetryAttr) *counterSeries {
		return &counterSeries{attrs: attrs}
	})
	s.value += n
}

// MetricsHandler serves the metrics in the Prometheus text exposition format
// (version 0.0.4), for -metrics-addr.
func (t *Telemetry) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		t.metrics.writePrometheus(w)
	})
}

// AddGauge registers a gauge that read reports at each export or scrape:
// one value per attribute set (labels), e.g. tasks by status.
func (t *Telemetry) AddGauge(name, unit, description string, read func() map[string]float64, label string) {
	t.metrics.gauge(name, unit, description, func() []gaugePoint {
		values := read()
		points := make([]gaugePoint, 0, len(values))
		for _, k := range sortedKeys(values) {
			p := gaugePoint{value: values[k]}
			if label != "" {
				p.attrs = []telemetryAttr{stringAttr(label, k)}
			}
			points = append(points, p)
		}
		return points
	})
}

// prometheusName turns an OpenTelemetry name and unit into a Prometheus one,
// as OpenTelemetry's Prometheus compatibility rules do: dots become
// underscores and the unit a suffix.
func prometheusName(name, unit string) string {
	n := strings.NewReplacer(".", "_", "-", "_", "/", "_").Replace(name)
	switch unit {
	case "s":
		n += "_seconds"
	case "By":
		n += "_bytes"
	}
	return n
}

func writeLabels(w io.Writer, attrs []telemetryAttr, extra ...string) {
	if len(attrs) == 0 && len(extra) == 0 {
		return
	}
	parts := make([]string, 0, len(attrs)+1)
	for _, a := range attrs {
		v := a.value
		if a.isInt {
			v = strconv.FormatInt(a.num, 10)
		}
		parts = append(parts, strings.NewReplacer(".", "_", "-", "_", "/", "_").Replace(a.key)+`="`+escapeLabel(v)+`"`)
	}
	parts = append(parts, extra...)
	fmt.Fprintf(w, "{%s}", strings.Join(parts, ","))
}

func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (m *telemetryMetrics) writePrometheus(w io.Writer) {
	m.mu.Lock()
	gauges := append([]*gaugeInstrument(nil), m.gauges...)
	var b strings.Builder
	for _, h := range []*histogramInstrument{&m.ops, &m.sessions} {
		name := prometheusName(h.name, h.unit)
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, h.description, name)
		for _, key := range h.order {
			s := h.series[key]
			var cumulative uint64
			for i, bound := range durationBuckets() {
				cumulative += s.counts[i]
				b.WriteString(name + "_bucket")
				writeLabels(&b, s.attrs, `le="`+formatFloat(bound)+`"`)
				fmt.Fprintf(&b, " %d\n", cumulative)
			}
			b.WriteString(name + "_bucket")
			writeLabels(&b, s.attrs, `le="+Inf"`)
			fmt.Fprintf(&b, " %d\n", s.count)
			b.WriteString(name + "_sum")
			writeLabels(&b, s.attrs)
			fmt.Fprintf(&b, " %s\n", formatFloat(s.sum))
			b.WriteString(name + "_count")
			writeLabels(&b, s.attrs)
			fmt.Fprintf(&b, " %d\n", s.count)
		}
	}
	for _, c := range m.counters {
		name := prometheusName(c.name, c.unit)
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, c.description, name)
		for _, key := range c.order {
			s := c.values[key]
			b.WriteString(name + "_total")
			writeLabels(&b, s.attrs)
			fmt.Fprintf(&b, " %d\n", s.value)
		}
	}
	m.mu.Unlock()
	// Gauges are read outside the lock: their callbacks take locks of
	// their own (the executor's, the HTTP handler's).
	for _, g := range gauges {
		name := prometheusName(g.name, g.unit)
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, g.description, name)
		for _, p := range g.read() {
			b.WriteString(name)
			writeLabels(&b, p.attrs)
			fmt.Fprintf(&b, " %s\n", formatFloat(p.value))
		}
	}
	io.WriteString(w, b.String())
}
