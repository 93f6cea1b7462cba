package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func trivialWork(context.Context) any { return nil }

// BenchmarkExecutorRoundTrip measures submit plus receiving the outcome, one
// job at a time and with 4 or 64 jobs outstanding, with and without a
// deadline. With 4 outstanding (fewer than MaxConcurrency) jobs mostly go to
// parked workers; with 64, half of them queue.
func BenchmarkExecutorRoundTrip(b *testing.B) {
	for _, timeout := range []time.Duration{0, -1} {
		name := "deadline=30s"
		if timeout < 0 {
			name = "deadline=none"
		}
		b.Run("sequential/"+name, func(b *testing.B) { benchmarkRoundTrip(b, 1, timeout) })
		b.Run("outstanding=4/"+name, func(b *testing.B) { benchmarkRoundTrip(b, 4, timeout) })
		b.Run("outstanding=64/"+name, func(b *testing.B) { benchmarkRoundTrip(b, 64, timeout) })
	}
}

// benchmarkRoundTrip keeps `outstanding` keyed jobs in flight: every outcome
// received frees its key, which is submitted again at once.
func benchmarkRoundTrip(b *testing.B, outstanding int, timeout time.Duration) {
	e, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s := e.newSubmitter()
	submit := func(key string) {
		if _, err := s.submitWork(key, timeout, trivialWork); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	inFlight := 0
	for i := 0; i < outstanding && i < b.N; i++ {
		submit(fmt.Sprint("k", i))
		inFlight++
	}
	for submitted := inFlight; inFlight > 0; inFlight-- {
		o := <-s.outcomes
		if submitted < b.N {
			submit(o.key)
			submitted++
			inFlight++
		}
	}
}
