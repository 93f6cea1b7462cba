package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// otlpSpan is a span as a test collector decoded it from OTLP/JSON.
type otlpSpan struct {
	TraceID, SpanID, ParentSpanID, TraceState, Name string
	Kind                                            int
	Attributes                                      map[string]string
	Links                                           []struct{ TraceID, SpanID string }
	Status                                          struct {
		Code    int
		Message string
	}
	Start, End uint64 // Unix nanoseconds
	Events     []struct {
		Name string
		Time uint64
	}
}

// testCollector is an OTLP/HTTP JSON receiver: it decodes the spans posted
// to /v1/traces and keeps the bodies posted to /v1/metrics. status, when set,
// chooses each response's status code.
type testCollector struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []otlpSpan
	metrics  [][]byte
	requests int
	status   func(n int) int
}

func newTestCollector(t *testing.T, status func(n int) int) *testCollector {
	c := &testCollector{status: status}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *testCollector) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.requests++
	n := c.requests
	c.mu.Unlock()
	if c.status != nil {
		if code := c.status(n); code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
	}
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
		return
	}
	switch r.URL.Path {
	case "/v1/traces":
		spans, err := decodeOTLPSpans(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.spans = append(c.spans, spans...)
		c.mu.Unlock()
	case "/v1/metrics":
		if !json.Valid(body) {
			http.Error(w, "invalid JSON", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.metrics = append(c.metrics, body)
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}")
}

func decodeOTLPSpans(body []byte) ([]otlpSpan, error) {
	type anyValue struct {
		StringValue *string `json:"stringValue"`
		IntValue    *string `json:"intValue"`
	}
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					TraceState   string `json:"traceState"`
					Name         string `json:"name"`
					Kind         int    `json:"kind"`
					Attributes   []struct {
						Key   string   `json:"key"`
						Value anyValue `json:"value"`
					} `json:"attributes"`
					Links []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
					} `json:"links"`
					Status struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
					Start  uint64 `json:"startTimeUnixNano,string"`
					End    uint64 `json:"endTimeUnixNano,string"`
					Events []struct {
						Name string `json:"name"`
						Time uint64 `json:"timeUnixNano,string"`
					} `json:"events"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []otlpSpan
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				span := otlpSpan{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, TraceState: s.TraceState, Name: s.Name, Kind: s.Kind, Attributes: map[string]string{}}
				for _, a := range s.Attributes {
					switch {
					case a.Value.StringValue != nil:
						span.Attributes[a.Key] = *a.Value.StringValue
					case a.Value.IntValue != nil:
						span.Attributes[a.Key] = *a.Value.IntValue
					}
				}
				for _, l := range s.Links {
					span.Links = append(span.Links, struct{ TraceID, SpanID string }{l.TraceID, l.SpanID})
				}
				span.Status.Code, span.Status.Message = s.Status.Code, s.Status.Message
				span.Start, span.End = s.Start, s.End
				for _, e := range s.Events {
					span.Events = append(span.Events, struct {
						Name string
						Time uint64
					}{e.Name, e.Time})
				}
				out = append(out, span)
			}
		}
	}
	return out, nil
}

// exported returns the spans received so far.
func (c *testCollector) exported() []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans...)
}

// spanNamed returns the one exported span named name.
func spanNamed(t *testing.T, spans []otlpSpan, name string) otlpSpan {
	t.Helper()
	var found []otlpSpan
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one span named %q, got %d among %+v", name, len(found), spans)
	}
	return found[0]
}

// mustTelemetry returns NewTelemetry(opts), failing tb on an error.
func mustTelemetry(tb testing.TB, opts TelemetryOptions) *Telemetry {
	tb.Helper()
	tel, err := NewTelemetry(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return tel
}

// newTestTelemetry returns a Telemetry that exports to c only when shut
// down (or when a batch fills), so that tests decide when spans arrive.
func newTestTelemetry(t *testing.T, c *testCollector, maxQueue int) *Telemetry {
	tel := mustTelemetry(t, TelemetryOptions{
		ServiceName: "mcpstdio-test", TracesEndpoint: c.URL + "/v1/traces", MetricsEndpoint: c.URL + "/v1/metrics",
		SampleRatio: 1, ParentBased: true, MaxQueue: maxQueue, BatchDelay: time.Hour, MetricInterval: time.Hour,
		Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel
}

// flush exports what tel holds and returns what c received.
func flush(t *testing.T, tel *Telemetry, c *testCollector) []otlpSpan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return c.exported()
}
