package main

import (
	"context"
	"time"
)

// The gauges an operator asks for, read from the components that keep the
// numbers (the executor, the HTTP handler, the task store) when the metrics
// are exported or scraped: nothing is counted twice, nothing on the hot path.

// ObserveExecutor registers the executor's gauges: requests running and
// queued, and the bytes of input they hold (MaxInflightBytes' budget).
func (t *Telemetry) ObserveExecutor(e *Executor) {
	t.metrics.gauge("mcp.server.request.running", "{request}", "Requests holding a worker (running, or cancelled and not yet returned).", func() []gaugePoint {
		return []gaugePoint{{value: float64(e.Stats().Running)}}
	})
	t.metrics.gauge("mcp.server.request.queued", "{request}", "Requests waiting for a worker.", func() []gaugePoint {
		return []gaugePoint{{value: float64(e.Stats().Queued)}}
	})
	t.metrics.gauge("mcp.server.request.reserved", "By", "Bytes of input held by admitted requests and reservations (the -max-inflight-bytes budget).", func() []gaugePoint {
		return []gaugePoint{{value: float64(e.Stats().InflightBytes)}}
	})
}

// ObserveTransport registers the gauges of a stdio transport: its
// executor's, and its open subscriptions/listen streams.
func (t *Telemetry) ObserveTransport(tr *Transport) {
	t.ObserveExecutor(tr.executor)
	t.metrics.gauge("mcp.server.listen.streams", "{stream}", "Open subscriptions/listen streams.", func() []gaugePoint {
		return []gaugePoint{{value: float64(tr.ListenStreams())}}
	})
}

// ObserveHTTP registers the gauges of an HTTP handler: its executor's, and
// the open 2026 subscriptions/listen streams.
func (t *Telemetry) ObserveHTTP(h *HTTPHandler) {
	t.ObserveExecutor(h.executor)
	t.metrics.gauge("mcp.server.listen.streams", "{stream}", "Open subscriptions/listen streams.", func() []gaugePoint {
		h.listens.mu.Lock()
		defer h.listens.mu.Unlock()
		return []gaugePoint{{value: float64(h.listens.used)}}
	})
}

// taskGaugeTimeout bounds one reading of the tasks gauge (a store may add a
// bound of its own, as the SQL store's statement timeout): a slow store
// delays a scrape or an export by at most this much, and then the gauge
// reports nothing for that round.
const taskGaugeTimeout = 2 * time.Second

// taskCounter is what the tasks gauge reads: the tasks feature's
// TaskStatusCounter, named here by its method so that telemetry compiles
// without that feature.
type taskCounter interface {
	CountTasksByStatus(ctx context.Context) (map[string]int64, error)
}

// ObserveTasks registers the gauge mcp.server.task.count (tasks kept, by
// status, one series per status) on store, when it can count its tasks
// (a TaskStatusCounter, as Runtime.TaskStore's stores are); it reports
// whether it could. Each reading is one call of CountTasksByStatus, bounded
// in time; a failed one reports nothing and is logged.
func (t *Telemetry) ObserveTasks(store any) bool {
	counter, ok := store.(taskCounter)
	if !ok {
		return false
	}
	t.metrics.gauge("mcp.server.task.count", "{task}", "Tasks kept, by status.", func() []gaugePoint {
		ctx, cancel := context.WithTimeout(context.Background(), taskGaugeTimeout)
		defer cancel()
		counts, err := counter.CountTasksByStatus(ctx)
		if err != nil {
			t.opts.Logger.Warn("mcpstdio: telemetry: counting tasks by status", "err", err)
			return nil
		}
		points := make([]gaugePoint, 0, len(counts))
		for _, status := range sortedKeys(counts) {
			points = append(points, gaugePoint{attrs: []telemetryAttr{{key: "mcp.task.status", value: status}}, value: float64(counts[status])})
		}
		return points
	})
	return true
}
