package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TelemetryOptionsFromEnv reads the OpenTelemetry SDK environment variables
// through getenv (os.Getenv in the command):
//
//   - OTEL_SDK_DISABLED=true: no telemetry at all (enabled false);
//   - OTEL_EXPORTER_OTLP_ENDPOINT: base URL, to which /v1/traces and
//     /v1/metrics are appended; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: full URLs that win over it;
//   - OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER: "none" turns a signal's
//     export off ("otlp", the default, keeps it);
//   - OTEL_EXPORTER_OTLP_PROTOCOL (and the per-signal ones): only
//     http/json is spoken; another value is an error;
//   - OTEL_EXPORTER_OTLP_HEADERS: k=v,k=v (values URL-encoded);
//   - OTEL_EXPORTER_OTLP_TIMEOUT (ms, default 10000);
//   - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES (k=v,k=v);
//   - OTEL_TRACES_SAMPLER: always_on, always_off, traceidratio,
//     parentbased_always_on (the default), parentbased_always_off,
//     parentbased_traceidratio; OTEL_TRACES_SAMPLER_ARG: the ratio (default 1);
//   - OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
//     OTEL_BSP_SCHEDULE_DELAY (ms), OTEL_METRIC_EXPORT_INTERVAL (ms).
//
// Without an endpoint nothing is exported (the metrics are still served by
// MetricsHandler). A malformed value is an error naming the variable.
func TelemetryOptionsFromEnv(getenv func(string) string) (opts TelemetryOptions, enabled bool, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return opts, false, nil
	}
	opts.ServiceName = getenv("OTEL_SERVICE_NAME")
	if opts.ResourceAttributes, err = parseKeyValues(getenv("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return opts, false, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if opts.ServiceName == "" {
		opts.ServiceName = opts.ResourceAttributes["service.name"]
	}
	if opts.Headers, err = parseKeyValues(getenv("OTEL_EXPORTER_OTLP_HEADERS")); err != nil {
		return opts, false, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if v := getenv(name); v != "" && v != "http/json" {
			return opts, false, fmt.Errorf("%s: only http/json is supported, got %q", name, v)
		}
	}
	base := strings.TrimRight(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/")
	endpoint := func(signal, path string) (string, error) {
		if exporter := getenv("OTEL_" + signal + "_EXPORTER"); exporter == "none" {
			return "", nil
		} else if exporter != "" && exporter != "otlp" {
			return "", fmt.Errorf("OTEL_%s_EXPORTER: only otlp or none, got %q", signal, exporter)
		}
		u := getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")
		if u == "" && base != "" {
			u = base + path
		}
		if u == "" {
			return "", nil
		}
		if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || parsed.Scheme != "http" && parsed.Scheme != "https" {
			return "", fmt.Errorf("OTEL_EXPORTER_OTLP_%s_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT): not an http(s) URL: %q", signal, u)
		}
		return u, nil
	}
	if opts.TracesEndpoint, err = endpoint("TRACES", "/v1/traces"); err != nil {
		return opts, false, err
	}
	if opts.MetricsEndpoint, err = endpoint("METRICS", "/v1/metrics"); err != nil {
		return opts, false, err
	}
	millis := func(name string, dst *time.Duration) error {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("%s: want a positive number of milliseconds, got %q", name, v)
			}
			*dst = time.Duration(n) * time.Millisecond
		}
		return nil
	}
	count := func(name string, dst *int) error {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("%s: want a positive integer, got %q", name, v)
			}
			*dst = n
		}
		return nil
	}
	for _, err := range []error{
		millis("OTEL_EXPORTER_OTLP_TIMEOUT", &opts.Timeout),
		millis("OTEL_BSP_SCHEDULE_DELAY", &opts.BatchDelay),
		millis("OTEL_METRIC_EXPORT_INTERVAL", &opts.MetricInterval),
		count("OTEL_BSP_MAX_QUEUE_SIZE", &opts.MaxQueue),
		count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &opts.MaxExportBatch),
	} {
		if err != nil {
			return opts, false, err
		}
	}
	opts.SampleRatio, opts.ParentBased = 1, true
	sampler := getenv("OTEL_TRACES_SAMPLER")
	ratio := 1.0
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" && strings.HasSuffix(sampler, "traceidratio") {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return opts, false, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: want a ratio from 0 to 1, got %q", arg)
		}
		ratio = r
	}
	if ratio == 0 {
		ratio = None // a SampleRatio of 0 would be the default, 1
	}
	switch sampler {
	case "", "parentbased_always_on":
	case "always_on":
		opts.ParentBased = false
	case "always_off":
		opts.SampleRatio, opts.ParentBased = None, false
	case "traceidratio":
		opts.SampleRatio, opts.ParentBased = ratio, false
	case "parentbased_always_off":
		opts.SampleRatio = None
	case "parentbased_traceidratio":
		opts.SampleRatio = ratio
	default:
		return opts, false, fmt.Errorf("OTEL_TRACES_SAMPLER: unsupported sampler %q", sampler)
	}
	return opts, true, nil
}

// parseKeyValues parses k=v,k=v with URL-encoded values (the W3C Baggage
// form the OpenTelemetry variables use).
func parseKeyValues(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := make(map[string]string)
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("want key=value pairs separated by commas, got %q", pair)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("value of %s: %v", k, err)
		}
		out[k] = value
	}
	return out, nil
}
