// Package otel holds the OpenTelemetry SDK adapter of mcpstdio's observer
// seam, in a module of its own so that the root module requires nothing.
//
// observer_otel.go is copied next to the library files (into the package
// that vendors them, as the library itself is copied); it implements
// Observer on an OpenTelemetry TracerProvider and MeterProvider. It carries
// a build constraint that keeps it out of this directory's package, which
// holds only the test that builds it with a fresh copy of the library
// (adapter_test.go).
package otel
