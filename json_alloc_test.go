//go:build !race

package main

import (
	"strings"
	"testing"
)

// TestMarshalJSONAllocations pins the allocation budget: with the pooled
// buffer and encoder, the only allocation for a value encoding/json encodes
// without allocating is the returned slice, ASCII or not. (The race detector
// makes sync.Pool drop items at random, hence the build constraint.)
func TestMarshalJSONAllocations(t *testing.T) {
	values := []any{
		&jsonSampleResult{Content: []jsonSampleContent{{Type: "text", Text: "plain"}}},
		&jsonSampleResult{Content: []jsonSampleContent{{Type: "text", Text: "héllo 😀 " + strings.Repeat("x", 1000)}}},
		"a string",
	}
	for _, v := range values {
		if allocs := testing.AllocsPerRun(20, func() { _, _ = marshalJSON(v) }); allocs > 1 {
			t.Errorf("marshalJSON(%T) allocates %v times, want 1", v, allocs)
		}
	}
}
