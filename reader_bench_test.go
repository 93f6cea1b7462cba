package main

import (
	"bytes"
	"testing"
)

// BenchmarkLineReader reads lines of a fixed size from an endless in-memory source with the transport's default
// limit and chunk size. One iteration is one line; the source never allocates.
func BenchmarkLineReader(b *testing.B) {
	sizes := []struct {
		name string
		size int
	}{
		{"100B", 100},
		{"10KiB", 10 << 10},
		{"1MiB", 1 << 20},
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			pattern := append(bytes.Repeat([]byte("x"), sz.size), '\n')
			lr := newLineReader(&repeatingReader{pattern: pattern}, 2_000_000, defaultReadChunk)
			b.SetBytes(int64(len(pattern)))
			b.ReportAllocs()
			lines := 0
			for b.Loop() {
				line, err := lr.next()
				if err != nil || len(line) != sz.size {
					b.Fatalf("next = %d bytes, %v; want %d bytes", len(line), err, sz.size)
				}
				lines++
			}
			b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
