package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// A pair counts only when both its runs succeeded; each ratio is the
// build's figure over the limit's of the same round.
func TestPairRatios(t *testing.T) {
	tests := []struct {
		limit, build, want []float64
	}{
		{[]float64{100, 200, 50}, []float64{50, 100, 50}, []float64{0.5, 0.5, 1}},
		{[]float64{100, failed, 50}, []float64{50, 100, failed}, []float64{0.5}},
		{[]float64{0, 100}, []float64{5, 300}, []float64{3}}, // a limit of 0 makes no ratio
		{[]float64{100, 100}, []float64{20}, []float64{0.2}},
		{nil, nil, nil},
	}
	for _, tt := range tests {
		if got := pairRatios(tt.limit, tt.build); !slices.Equal(got, tt.want) {
			t.Errorf("pairRatios(%v, %v) = %v, want %v", tt.limit, tt.build, got, tt.want)
		}
	}
}

// The median of an odd count is its middle value, of an even count the
// mean of the two in the middle; failed runs do not count, and the input is
// left as it was.
func TestMedianOf(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
		{[]float64{failed, 5, 1}, 3},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.xs)
		if got := medianOf(tt.xs); got != tt.want {
			t.Errorf("medianOf(%v) = %v, want %v", in, got, tt.want)
		}
		if !slices.EqualFunc(in, tt.xs, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			t.Errorf("medianOf changed its input to %v", tt.xs)
		}
	}
	for _, xs := range [][]float64{nil, {failed}} {
		if got := medianOf(xs); !math.IsNaN(got) {
			t.Errorf("medianOf(%v) = %v, want NaN", xs, got)
		}
	}
}

// A rate's goal is a floor, a latency's a ceiling, each met at the bound.
func TestGoal(t *testing.T) {
	floor, ceiling := goal{bound: 0.5}, goal{atMost: true, bound: 2.5}
	if !floor.met(0.5) || !floor.met(0.9) || floor.met(0.49) || floor.String() != ">= 0.5" {
		t.Errorf("the floor 0.5: met(0.5) %v, met(0.9) %v, met(0.49) %v, %q", floor.met(0.5), floor.met(0.9), floor.met(0.49), floor)
	}
	if !ceiling.met(2.5) || !ceiling.met(1) || ceiling.met(2.6) || ceiling.String() != "<= 2.5" {
		t.Errorf("the ceiling 2.5: met(2.5) %v, met(1) %v, met(2.6) %v, %q", ceiling.met(2.5), ceiling.met(1), ceiling.met(2.6), ceiling)
	}
}

// The report has a line per row and build: the median of the pairs'
// ratios, the goal and whether the median meets it, each pair's ratio in
// round order, the median figures of the limit and the build, and their
// median CPU time per call.
func TestReport(t *testing.T) {
	rows := []row{
		{name: "rate row", metric: rate, goal: goal{bound: 0.5}},
		{name: "latency row", metric: p50, goal: goal{atMost: true, bound: 2}},
	}
	builds := []build{{name: "old"}, {name: "new"}}
	us := func(n float64) float64 { return n * 1e-6 }
	figures := []rowFigures{
		{limit: []float64{200_000, 100_000, 400_000}, builds: [][]float64{{80_000, 60_000, 100_000}, {failed, failed, failed}},
			limitCPU: []float64{us(2), us(3), us(1)}, buildsCPU: [][]float64{{us(5), us(4), us(6)}, {failed, failed, failed}}},
		{limit: []float64{us(10), us(20), failed}, builds: [][]float64{{us(30), us(30), us(5)}, {us(15), us(30), us(5)}},
			limitCPU: []float64{us(8), us(9), failed}, buildsCPU: [][]float64{{us(20), us(21), us(22)}, {us(10), failed, us(12)}}},
	}
	var out strings.Builder
	report(&out, rows, builds, figures)
	want := strings.Join([]string{
		"row          build  median  goal             pairs           limit   build  cpu/call: limit  build",
		"rate row     old    0.40    >= 0.5  missed   0.40 0.60 0.25  200k/s  80k/s  2µs              5µs",
		"rate row     new    -       >= 0.5  no pair                  200k/s  -      2µs              -",
		"latency row  old    2.25    <= 2    missed   3.00 1.50       15µs    30µs   8.5µs            21µs",
		"latency row  new    1.50    <= 2    met      1.50 1.50       15µs    15µs   8.5µs            11µs",
		"",
	}, "\n")
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}

// -builds names distinct builds, each NAME=BINARY; the binaries are made
// absolute.
func TestParseBuilds(t *testing.T) {
	builds, err := parseBuilds("old=/tmp/old,new=bin/new")
	if err != nil || len(builds) != 2 || builds[0] != (build{"old", "/tmp/old"}) || builds[1].name != "new" || !strings.HasSuffix(builds[1].binary, "/bin/new") || !strings.HasPrefix(builds[1].binary, "/") {
		t.Fatalf("parseBuilds: %v, %v", builds, err)
	}
	if builds, err := parseBuilds(""); builds != nil || err != nil {
		t.Fatalf("no builds: %v, %v", builds, err)
	}
	for _, bad := range []string{"old", "=x", "old=", "a=x,a=y", "a=x,"} {
		if _, err := parseBuilds(bad); err == nil {
			t.Errorf("parseBuilds(%q) succeeded", bad)
		}
	}
}

// The figures are written for people: rates in calls per second (in
// thousands from 10,000 on), latencies as durations.
func TestMetricFormat(t *testing.T) {
	tests := []struct {
		m    metric
		v    float64
		want string
	}{
		{rate, 212_345, "212k/s"},
		{rate, 9_385, "9385/s"},
		{p50, (20*time.Microsecond + 740*time.Nanosecond).Seconds(), "20.7µs"},
		{p50, failed, "-"},
	}
	for _, tt := range tests {
		if got := tt.m.format(tt.v); got != tt.want {
			t.Errorf("format(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// -rows selects the rows whose names match; a pattern that matches none,
// or is no regular expression, is an error.
func TestSelectRows(t *testing.T) {
	rows := limitRows()
	names := func(rs []row) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.name)
		}
		return out
	}
	if all, err := selectRows(rows, ""); err != nil || len(all) != 8 {
		t.Fatalf("every row: %d rows, %v", len(all), err)
	}
	got, err := selectRows(rows, "http.*16 clients")
	if want := []string{"http 2026-07-28 stateless, 16 clients: rate / rawhttp", "http 2025-11-25 sessions, 16 clients: rate / rawhttp"}; err != nil || !slices.Equal(names(got), want) {
		t.Fatalf("http.*16 clients: %q, %v", names(got), err)
	}
	for _, bad := range []string{"nosuchrow", "("} {
		if _, err := selectRows(rows, bad); err == nil {
			t.Errorf("selectRows(%q) succeeded", bad)
		}
	}
}
