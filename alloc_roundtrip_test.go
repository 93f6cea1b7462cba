package main

import (
	"strings"
	"testing"
)

// Echo round trips through Serve allocate no more than they do today: 4 with
// a dispatcher that allocates nothing, 6 through the runtime's echo tool
// (whose call allocates 2: the space of its arguments and result, and
// the text). The limits catch any new per-message allocation. Measured over a whole
// benchmark run, so a stray allocation of another goroutine cannot tip it.
// The echo tool is inline, so its calls reuse one execution record (1,536
// bytes) and allocate only the side record its handler may keep (704): about
// 1,700 bytes a call, where a record each would make it about 2,550.
func TestEchoRoundTripAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two benchmarks")
	}
	rt := newCatalogRuntime(t)
	toolCall := `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 100) + `"},` + binMeta2026 + `}}`
	tests := []struct {
		name      string
		bench     func(b *testing.B)
		maxAllocs int64
		maxBytes  int64 // 0: not checked
	}{
		{"Serve echo", func(b *testing.B) { benchRoundTrip(b, echoDispatcher, 100, 64) }, 4, 0},
		{"runtime echo tool", func(b *testing.B) { benchRoundTripLine(b, rt, 64, toolCall) }, 6, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testing.Benchmark(tt.bench)
			if r.N == 0 {
				t.Fatal("the benchmark failed")
			}
			if got := r.AllocsPerOp(); got > tt.maxAllocs {
				t.Errorf("%d allocations per round trip (over %d round trips), want at most %d", got, r.N, tt.maxAllocs)
			}
			if got := r.AllocedBytesPerOp(); tt.maxBytes > 0 && got > tt.maxBytes {
				t.Errorf("%d bytes allocated per round trip (over %d round trips), want at most %d", got, r.N, tt.maxBytes)
			}
		})
	}
}
