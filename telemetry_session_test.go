package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// mcp.server.session.duration carries error.type when, and only when, the
// session ended on an error (sessionErrorType), with the version the session
// negotiated.
func TestTelemetrySessionDurationErrorType(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	tests := []struct {
		name    string
		opts    func(t *testing.T) Options
		wantErr error
		labels  string
	}{
		{"input ended", func(*testing.T) Options {
			return Options{Input: strings.NewReader(initialize), Output: io.Discard}
		}, nil, `mcp_protocol_version="2025-06-18",network_transport="pipe"`},
		{"output failed", func(*testing.T) Options {
			return Options{Input: strings.NewReader(initialize), Output: &failingWriter{}}
		}, ErrOutputFailed, `error_type="output_failed",mcp_protocol_version="2025-06-18",network_transport="pipe"`},
		{"executor closed", func(t *testing.T) Options {
			exec, err := NewExecutor(ExecutorOptions{})
			if err != nil {
				t.Fatal(err)
			}
			exec.Close()
			input, w := io.Pipe()
			t.Cleanup(func() { w.Close() })
			return Options{Input: input, Output: io.Discard, Executor: exec}
		}, ErrExecutorClosed, `error_type="executor_closed",network_transport="pipe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel := mustTelemetry(t, TelemetryOptions{MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
			opts := tt.opts(t)
			opts.Observer = tel
			opts.Logger = slog.New(slog.DiscardHandler)
			tr, err := NewTransport(telemetryRuntime(t, nil), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Serve(context.Background()); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Serve returned %v, want %v", err, tt.wantErr)
			}
			var b strings.Builder
			tel.metrics.writePrometheus(&b)
			want := "mcp_server_session_duration_seconds_count{" + tt.labels + "} 1"
			if !strings.Contains(b.String(), want) {
				t.Errorf("want %s in:\n%s", want, b.String())
			}
		})
	}
}

func TestSessionErrorType(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.Canceled, ""},
		{&OutputError{Err: io.ErrClosedPipe}, "output_failed"},
		{ErrExecutorClosed, "executor_closed"},
		{errors.New("something else"), "_OTHER"},
	} {
		if got := sessionErrorType(tt.err); got != tt.want {
			t.Errorf("sessionErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
