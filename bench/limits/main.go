// Command limits measures how close the server comes to the limit of its
// machine, in the ratios the project's performance goals are stated in:
//
//	go run ./bench/limits [-rounds N] [-builds NAME=BINARY,...]
//
// It builds the server of the current checkout and the two limit programs,
// bench/lineecho (a bare stdio line echo: the limit of a Go process on
// these pipes) and bench/rawhttp (a bare net/http handler: the HTTP limit).
// For each row, in each round, it runs the limit program and then the
// server, a fresh process each, driven by the same client code, and prints
// per row the median of the rounds' ratios (the server's figure over the
// limit's of the same round), each round's ratio, the goal, and the median
// figures of both and their median CPU time per call (the process's, from
// its start to its exit, over the calls it answered):
//
//	stdio, 100 B texts, 64 calls in flight: rate, goal >= 0.5
//	stdio, one call at a time: median latency, goal <= 2.5
//	stdio, 10 KB and 1 MB texts, 16 in flight: rate, goal >= 0.6
//	HTTP, 16 loopback clients, 2026-07-28 stateless and 2025-11-25
//	sessions: rate, goal >= 0.85
//	HTTP, 1 client, the same two: median latency, goal <= 1.3
//
// With -builds it compares the builds named instead of the checkout's
// (each against the limit of its round, in the order given; build an
// older commit with git worktree add and go build), and with -rows only the
// rows whose names match a regular expression (-rows 'http.*16 clients',
// say). Absolute figures move
// with the machine's load; the ratios far less, since both sides of a pair
// meet the same neighbours. The goals are reported, never enforced: the
// exit status is 1 only when a run failed (an answer was wrong or missing,
// a program would not start).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// runTimeout bounds one stdio run.
const runTimeout = 2 * time.Minute

// build is a build of the server to measure.
type build struct {
	name, binary string
}

// programs are the binaries a row runs: the limit programs'.
type programs struct {
	lineecho, rawhttp string
}

// row is one line of the report: a load (over stdio, or over HTTP when
// http is set), the figure compared, the goal.
type row struct {
	name   string
	metric metric
	goal   goal
	stdio  stdioLoad
	http   *httpLoad
}

// run runs the row's load against its limit program (binary "") or
// against the build binary, a fresh process.
func (r row) run(p programs, binary string) (measure, error) {
	switch {
	case r.http == nil && binary == "":
		return runStdio([]string{p.lineecho}, r.stdio, runTimeout)
	case r.http == nil:
		return runStdio([]string{binary}, r.stdio, runTimeout)
	case binary == "":
		return runHTTP(func(f string) []string { return []string{p.rawhttp, "-addr", "127.0.0.1:0", "-addr-file", f} }, *r.http)
	}
	return runHTTP(func(f string) []string { return []string{binary, "-http", "127.0.0.1:0", "-http-addr-file", f} }, *r.http)
}

// limitRows are the rows of the project's performance goals.
func limitRows() []row {
	http := func(stateless bool, clients int) *httpLoad {
		return &httpLoad{stateless: stateless, clients: clients, size: 100, warmup: 300 * time.Millisecond, duration: time.Second}
	}
	return []row{
		{name: "stdio 100 B, window 64: rate / lineecho", metric: rate, goal: goal{bound: 0.5}, stdio: stdioLoad{calls: 20_000, window: 64, size: 100}},
		{name: "stdio 100 B, window 1: p50 / lineecho", metric: p50, goal: goal{atMost: true, bound: 2.5}, stdio: stdioLoad{calls: 3_000, window: 1, size: 100}},
		{name: "stdio 10 KB, window 16: rate / lineecho", metric: rate, goal: goal{bound: 0.6}, stdio: stdioLoad{calls: 5_000, window: 16, size: 10_000}},
		{name: "stdio 1 MB, window 16: rate / lineecho", metric: rate, goal: goal{bound: 0.6}, stdio: stdioLoad{calls: 300, window: 16, size: 1_000_000}},
		{name: "http 2026-07-28 stateless, 16 clients: rate / rawhttp", metric: rate, goal: goal{bound: 0.85}, http: http(true, 16)},
		{name: "http 2026-07-28 stateless, 1 client: p50 / rawhttp", metric: p50, goal: goal{atMost: true, bound: 1.3}, http: http(true, 1)},
		{name: "http 2025-11-25 sessions, 16 clients: rate / rawhttp", metric: rate, goal: goal{bound: 0.85}, http: http(false, 16)},
		{name: "http 2025-11-25 sessions, 1 client: p50 / rawhttp", metric: p50, goal: goal{atMost: true, bound: 1.3}, http: http(false, 1)},
	}
}

func main() {
	rounds := flag.Int("rounds", 3, "rounds: pairs of runs per row and build")
	buildList := flag.String("builds", "", "compare these builds of the server instead of the checkout's: `NAME=BINARY,...`")
	rowPattern := flag.String("rows", "", "run only the rows whose names match this `regexp`")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./bench/limits [-rounds N] [-builds NAME=BINARY,...] [-rows REGEXP]")
		flag.PrintDefaults()
	}
	flag.Parse()
	builds, err := parseBuilds(*buildList)
	var rows []row
	if err == nil {
		rows, err = selectRows(limitRows(), *rowPattern)
	}
	if err != nil || *rounds < 1 || flag.NArg() > 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "limits:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*rounds, builds, rows); err != nil {
		fmt.Fprintln(os.Stderr, "limits:", err)
		os.Exit(1)
	}
}

// parseBuilds parses -builds: names must be distinct, binaries are made
// absolute. None: nil.
func parseBuilds(list string) ([]build, error) {
	if list == "" {
		return nil, nil
	}
	var builds []build
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		name, binary, ok := strings.Cut(item, "=")
		if !ok || name == "" || binary == "" {
			return nil, fmt.Errorf("-builds: %q is not NAME=BINARY", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("-builds: %q is named twice", name)
		}
		seen[name] = true
		abs, err := filepath.Abs(binary)
		if err != nil {
			return nil, err
		}
		builds = append(builds, build{name: name, binary: abs})
	}
	return builds, nil
}

// selectRows returns the rows whose names match pattern (all for "").
func selectRows(rows []row, pattern string) ([]row, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("-rows: %w", err)
	}
	var selected []row
	for _, r := range rows {
		if re.MatchString(r.name) {
			selected = append(selected, r)
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("-rows: %q matches no row", pattern)
	}
	return selected, nil
}

// errRunsFailed reports that some run failed (each was reported).
var errRunsFailed = errors.New("some runs failed (see above); their pairs are left out")

// run builds what it needs, runs the rounds of rows and prints the report.
func run(rounds int, builds []build, rows []row) error {
	root, err := checkoutRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "limits-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	packages := []string{"./bench/lineecho", "./bench/rawhttp"}
	if builds == nil {
		builds = []build{{name: "checkout", binary: filepath.Join(work, "mcpstdio")}}
		packages = append(packages, ".")
	}
	if err := goBuild(root, work, packages...); err != nil {
		return err
	}
	p := programs{lineecho: filepath.Join(work, "lineecho"), rawhttp: filepath.Join(work, "rawhttp")}
	figures := make([]rowFigures, len(rows))
	for i := range figures {
		figures[i].builds = make([][]float64, len(builds))
		figures[i].buildsCPU = make([][]float64, len(builds))
	}
	names := make([]string, len(builds))
	for i, b := range builds {
		names[i] = b.name
	}
	fmt.Printf("limits: %d rounds; in each, per row, a fresh limit program and then a fresh server of %s, driven by the same client\n", rounds, strings.Join(names, ", "))
	failures := 0
	for round := 1; round <= rounds; round++ {
		for i, r := range rows {
			m, err := r.run(p, "")
			figures[i].limit = append(figures[i].limit, valueOrFailed(r.metric, m, err, &failures, round, r.name, "the limit"))
			figures[i].limitCPU = append(figures[i].limitCPU, cpuOrFailed(m, err))
			for j, b := range builds {
				m, err := r.run(p, b.binary)
				figures[i].builds[j] = append(figures[i].builds[j], valueOrFailed(r.metric, m, err, &failures, round, r.name, b.name))
				figures[i].buildsCPU[j] = append(figures[i].buildsCPU[j], cpuOrFailed(m, err))
			}
		}
		fmt.Fprintf(os.Stderr, "limits: round %d of %d done\n", round, rounds)
	}
	report(os.Stdout, rows, builds, figures)
	if failures > 0 {
		return errRunsFailed
	}
	return nil
}

// valueOrFailed returns the run's figure, or reports its error and counts
// it and returns failed.
func valueOrFailed(m metric, x measure, err error, failures *int, round int, row, who string) float64 {
	if err != nil {
		*failures++
		fmt.Fprintf(os.Stderr, "limits: round %d, %s, %s: %v\n", round, row, who, err)
		return failed
	}
	return m.value(x)
}

// cpuOrFailed returns the run's CPU time per call in seconds, failed for a
// run that failed or whose CPU time is unknown.
func cpuOrFailed(x measure, err error) float64 {
	if err != nil || x.cpu <= 0 {
		return failed
	}
	return x.cpu.Seconds()
}

// checkoutRoot returns the directory of the checkout's root module.
func checkoutRoot() (string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "mcpstdio").Output()
	if err != nil {
		return "", fmt.Errorf("finding the checkout (run this from inside it): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goBuild builds the packages of the checkout at root into dir.
func goBuild(root, dir string, packages ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, packages...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(packages, " "), err, out)
	}
	return nil
}
