package main

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

// ObserveTransport registers the gauges of a stdio transport's executor.
func (t *Telemetry) ObserveTransport(tr *Transport) { t.ObserveExecutor(tr.executor) }

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

// ObserveRuntime registers the tasks gauge: tasks kept, by status (for the
// runtime's in-memory task store; another store is not counted).
func (t *Telemetry) ObserveRuntime(rt *Runtime) {
	if rt.tasks == nil {
		return
	}
	m, ok := rt.tasks.(*taskManager)
	if !ok {
		return
	}
	store, ok := m.store.(*memoryTaskStore)
	if !ok {
		return
	}
	t.metrics.gauge("mcp.server.task.count", "{task}", "Tasks kept, by status.", func() []gaugePoint {
		counts := map[string]int{TaskWorking: 0, TaskInputRequired: 0, TaskCompleted: 0, TaskFailed: 0, TaskCancelled: 0}
		store.mu.Lock()
		for _, task := range store.tasks {
			counts[task.rec.Status]++
		}
		store.mu.Unlock()
		points := make([]gaugePoint, 0, len(counts))
		for _, status := range sortedKeys(counts) {
			points = append(points, gaugePoint{attrs: []telemetryAttr{{key: "mcp.task.status", value: status}}, value: float64(counts[status])})
		}
		return points
	})
}
