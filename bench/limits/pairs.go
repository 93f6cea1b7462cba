package main

// The arithmetic of the pairs: each round's run of a build over the
// limit's run of the same round, the median of those ratios, and the
// report.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// metric is the figure of a run a row compares.
type metric int

const (
	rate metric = iota // calls per second: higher is better
	p50                // the median latency: lower is better
)

// value returns m's figure of a run: calls per second, or the median
// latency in seconds.
func (m metric) value(x measure) float64 {
	if m == rate {
		return x.rate
	}
	return x.p50.Seconds()
}

// format writes a figure of m for people.
func (m metric) format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case m == rate && v >= 10_000:
		return fmt.Sprintf("%.0fk/s", v/1000)
	case m == rate:
		return fmt.Sprintf("%.0f/s", v)
	}
	return time.Duration(v * float64(time.Second)).Round(100 * time.Nanosecond).String()
}

// goal is a row's performance goal: its ratio at least (or, for a latency,
// at most) bound.
type goal struct {
	atMost bool
	bound  float64
}

func (g goal) String() string {
	if g.atMost {
		return fmt.Sprintf("<= %g", g.bound)
	}
	return fmt.Sprintf(">= %g", g.bound)
}

func (g goal) met(ratio float64) bool {
	if g.atMost {
		return ratio <= g.bound
	}
	return ratio >= g.bound
}

// failed stands for the figure of a run that failed.
var failed = math.NaN()

// pairRatios returns, for each round in which both runs succeeded, the
// build's figure over the limit's (NaN marks a failed run).
func pairRatios(limit, build []float64) []float64 {
	var ratios []float64
	for i := range min(len(limit), len(build)) {
		if !math.IsNaN(limit[i]) && !math.IsNaN(build[i]) && limit[i] > 0 {
			ratios = append(ratios, build[i]/limit[i])
		}
	}
	return ratios
}

// medianOf returns the median of xs (of an even count, the mean of the two
// in the middle), NaN for none and for NaNs. xs is not changed.
func medianOf(xs []float64) float64 {
	var sorted []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			sorted = append(sorted, x)
		}
	}
	if len(sorted) == 0 {
		return math.NaN()
	}
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// rowFigures are a row's figures: per round the limit's, and per round
// each build's, failed for a run that failed; and the same runs' CPU time
// per call, in seconds.
type rowFigures struct {
	limit     []float64
	builds    [][]float64 // in the order of the builds
	limitCPU  []float64
	buildsCPU [][]float64
}

// report writes the table: for each row and build, the median of the
// pairs' ratios, each pair's ratio (in round order), the goal and whether
// the median meets it, the median figures of the limit and the build, and
// their median CPU time per call.
func report(w io.Writer, rows []row, builds []build, figures []rowFigures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tbuild\tmedian\tgoal\t\tpairs\tlimit\tbuild\tcpu/call: limit\tbuild")
	for i, r := range rows {
		for j, b := range builds {
			ratios := pairRatios(figures[i].limit, figures[i].builds[j])
			med := medianOf(ratios)
			median, verdict := "-", "no pair"
			if !math.IsNaN(med) {
				median, verdict = fmt.Sprintf("%.2f", med), "missed"
				if r.goal.met(med) {
					verdict = "met"
				}
			}
			pairs := make([]string, len(ratios))
			for k, x := range ratios {
				pairs[k] = fmt.Sprintf("%.2f", x)
			}
			var buildCPU []float64
			if j < len(figures[i].buildsCPU) {
				buildCPU = figures[i].buildsCPU[j]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, b.name, median, r.goal, verdict, strings.Join(pairs, " "),
				r.metric.format(medianOf(figures[i].limit)), r.metric.format(medianOf(figures[i].builds[j])),
				p50.format(medianOf(figures[i].limitCPU)), p50.format(medianOf(buildCPU)))
		}
	}
	tw.Flush()
}
