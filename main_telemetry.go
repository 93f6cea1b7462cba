package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// telemetryFlushTimeout bounds the flush of spans and metrics on exit: a
// collector that is down or slow delays the exit by at most this much.
const telemetryFlushTimeout = 5 * time.Second

// telemetryFlags is the command line of telemetry (the rest is read from
// the OpenTelemetry environment variables, TelemetryOptionsFromEnv).
type telemetryFlags struct {
	metricsAddr string
}

func (f *telemetryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics, on a listener of their own (e.g. 127.0.0.1:9464); traces and metrics are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set")
}

// commandTelemetry is the command's telemetry: nil fields when it is off.
type commandTelemetry struct {
	t       *Telemetry
	metrics *http.Server
}

// startTelemetry starts the command's telemetry: an exporter when the
// environment names an OTLP endpoint (OTEL_SDK_DISABLED=true turns it off),
// the /metrics listener when -metrics-addr is set. With neither it returns a
// commandTelemetry whose observer is nil: no cost per request.
func startTelemetry(f telemetryFlags, rt *Runtime, logger *slog.Logger, getenv func(string) string) (*commandTelemetry, error) {
	opts, enabled, err := TelemetryOptionsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	exporting := enabled && (opts.TracesEndpoint != "" || opts.MetricsEndpoint != "")
	if !exporting && f.metricsAddr == "" {
		return &commandTelemetry{}, nil
	}
	if !exporting {
		// Metrics only: spans that nothing exports are not recorded.
		opts = TelemetryOptions{ServiceName: opts.ServiceName, SampleRatio: None}
	}
	opts.Logger = logger
	t, err := NewTelemetry(opts)
	if err != nil {
		return nil, err
	}
	ct := &commandTelemetry{t: t}
	ct.t.ObserveTasks(rt.TaskStore())
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			ct.t.Shutdown(context.Background())
			return nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", ct.t.MetricsHandler())
		ct.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() {
			if err := ct.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("mcpstdio: -metrics-addr", "err", err)
			}
		}()
		logger.Info("mcpstdio: serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	if exporting {
		logger.Debug("mcpstdio: exporting telemetry over OTLP/HTTP", "traces", opts.TracesEndpoint, "metrics", opts.MetricsEndpoint)
	}
	return ct, nil
}

// observer is the Observer to configure: nil (an interface holding no
// value) when telemetry is off.
func (ct *commandTelemetry) observer() Observer {
	if ct.t == nil {
		return nil
	}
	return ct.t
}

// stop flushes what is queued, within telemetryFlushTimeout, and closes the
// metrics listener.
func (ct *commandTelemetry) stop(logger *slog.Logger) {
	if ct.t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := ct.t.Shutdown(ctx); err != nil {
		logger.Warn("mcpstdio: telemetry", "err", err)
	}
	if ct.metrics != nil {
		ct.metrics.Close()
	}
}
