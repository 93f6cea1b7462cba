package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpstdio/internal/cannedecho"
)

// baselineEnv makes the test binary act as the baseline program, the limit
// of a Go process on these pipes, which bench/lineecho is too: it reads
// 1 MiB at a time, finds the lines with a byte scan and answers each with a
// canned result carrying its id and its text copied byte for byte, all the
// answers to one read in one write (cannedecho.ServeLines). No JSON
// decoding, no MCP.
const baselineEnv = "MCPSTDIO_BASELINE_SERVER"

// floorEnv makes the test binary act as the pipeline floor: the canned answers
// of the baseline, passed through the goroutines the design prescribes
// (docs/explanation/contract.md, "Layers") (reader, coordinator, worker,
// coordinator, single in-flight writer) with nothing else done on the way. What
// it costs over the baseline is what the architecture costs before any
// JSON-RPC, MCP or bookkeeping work.
//
// Set to "direct" instead of "1", it is the path the server takes for an
// inline tool on a pipe, with nothing done on the way: a reading goroutine
// hands lines to a loop that answers them itself and writes the answers to
// the lines taken between two waits in one write, with no workers and no
// writing goroutine. What it costs over the baseline is the hand-off from
// the reading goroutine, which the design prescribes; what the server costs
// over it is the server's own work.
const floorEnv = "MCPSTDIO_FLOOR_SERVER"

// benchFlagsEnv adds flags to the server the binary benchmarks start, for
// example "-cpuprofile /tmp/cpu.out" to profile it under that load.
const benchFlagsEnv = "MCPSTDIO_BENCH_FLAGS"

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(baselineEnv) == "1":
		if cannedecho.ServeLines(os.Stdin, os.Stdout) != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(httpBaselineEnv) != "":
		if err := runHTTPBaseline(os.Stdin, os.Stdout, os.Getenv(httpBaselineEnv)); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(stdioChildEnv) != "":
		os.Exit(runStdioChild(os.Getenv(stdioChildEnv)))
	case os.Getenv(floorEnv) != "":
		stdio, err := openStdio()
		if err != nil {
			os.Exit(1)
		}
		runPipelineFloor(stdio.in, stdio.out, os.Getenv(floorEnv) == "direct")
		stdio.restore()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// answerDirect answers each line of lines and writes the answers to the
// lines taken in a row (maxReady at most, as the owner loop takes them) in
// one write, until lines is closed or a write fails.
func answerDirect(lines <-chan []byte, out io.Writer) {
	var frames []byte
	for line := range lines {
		frames = cannedecho.AppendLine(frames, line)
	ready:
		for range maxReady - 1 {
			select {
			case next, ok := <-lines:
				if !ok {
					break ready
				}
				frames = cannedecho.AppendLine(frames, next)
			default:
				break ready
			}
		}
		if _, err := out.Write(frames); err != nil {
			return
		}
		frames = frames[:0]
	}
}

// runPipelineFloor is the pipeline floor (see floorEnv): a reading goroutine
// hands lines to a coordinating loop, which hands each to one of 32 workers
// and each worker's frame to a single writing goroutine, one frame in flight.
// When direct, the loop answers and writes each line itself.
func runPipelineFloor(in io.Reader, out io.Writer, direct bool) {
	lines := make(chan []byte, linesBuffer)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(in, defaultReadChunk)
		for {
			line, err := r.ReadBytes('\n') // a copy of its own, of any length
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	if direct {
		answerDirect(lines, out)
		return
	}
	jobs := make(chan []byte, defaultMaxQueue)
	defer close(jobs)
	outcomes := make(chan []byte, outcomeBuffer)
	for range defaultMaxConcurrency {
		go func() {
			for line := range jobs {
				outcomes <- cannedecho.AppendLine(nil, line)
			}
		}()
	}
	frames, results := make(chan []byte), make(chan error, 1)
	defer close(frames)
	go func() {
		for frame := range frames {
			_, err := out.Write(frame)
			results <- err
		}
	}()
	pending, writing := 0, false
	for lines != nil || pending > 0 || writing {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			pending++
			jobs <- l
		case frame := <-outcomes:
			pending--
			if writing && <-results != nil {
				return
			}
			frames <- frame
			writing = true
		case err := <-results:
			if writing = false; err != nil {
				return
			}
		}
	}
}

// pipeClient drives a server process over OS pipes.
type pipeClient struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	closed bool
}

func startPipeClient(b *testing.B, cmd *exec.Cmd) *pipeClient {
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &pipeClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// close ends the server's input and waits for it to exit; it may be called
// more than once.
func (p *pipeClient) close() {
	if p.closed {
		return
	}
	p.closed = true
	p.in.Close()
	io.Copy(io.Discard, p.out)
	p.cmd.Wait()
}

// cpuTime is the CPU time (user and system) the exited server used.
func (p *pipeClient) cpuTime() time.Duration {
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// run sends n pipelined tools/call requests, window outstanding at a time,
// and returns the elapsed time and each call's latency (for window 1).
func (p *pipeClient) run(b *testing.B, n, window int, payload string) (time.Duration, []time.Duration) {
	line := []byte(`{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + payload + `"},` + binMeta2026 + `}}` + "\n")
	idAt := bytes.Index(line, []byte("0000000000"))
	sent := make([]time.Time, n)
	latencies := make([]time.Duration, 0, n)
	credits := make(chan struct{}, window)
	for range window {
		credits <- struct{}{}
	}
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		buf := slices.Clone(line)
		for i := range n {
			<-credits
			putDigits(buf[idAt:idAt+10], i)
			sent[i] = time.Now()
			if _, err := p.in.Write(buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		resp, err := p.out.ReadSlice('\n')
		if err != nil {
			b.Fatalf("reading a response: %v", err)
		}
		if window == 1 {
			i := bytes.Index(resp, []byte(`"id":"`))
			var id int
			fmt.Sscanf(string(resp[i+6:i+16]), "%d", &id)
			latencies = append(latencies, time.Since(sent[id]))
		}
		credits <- struct{}{}
	}
	elapsed := time.Since(start)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return elapsed, latencies
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkBinaryVsBaseline runs the real server binary, the baseline
// program and the two floors (see floorEnv) one after another over OS pipes
// with the same pipelined load: 100-byte echo texts at window 1 and 64, and
// 10 KB texts at window 16. It reports each one's rate and CPU per call, its
// rate as a ratio of the baseline's, and (window 1) its median latency and
// that as a ratio. The server against the direct floor is what the server's
// own work costs; the direct floor against the baseline is what the hand-off
// from a reading goroutine costs.
func BenchmarkBinaryVsBaseline(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	server := serverBinary(b)
	helper := func(env, value string) *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), env+"="+value)
		return cmd
	}
	cases := []struct {
		name         string
		window, size int
	}{
		{"window1", 1, 100},
		{"window64", 64, 100},
		{"window16-text10KB", 16, 10_000},
	}
	for _, tc := range cases {
		window, payload := tc.window, strings.Repeat("x", tc.size)
		b.Run(tc.name, func(b *testing.B) {
			args := append([]string{"-log-level", "error"}, strings.Fields(os.Getenv(benchFlagsEnv))...)
			runs := []struct {
				prefix string // of the metrics' units
				client *pipeClient
				time   time.Duration
				lat    []time.Duration
			}{
				{prefix: "baseline-", client: startPipeClient(b, helper(baselineEnv, "1"))},
				{prefix: "floor-", client: startPipeClient(b, helper(floorEnv, "1"))},
				{prefix: "direct-", client: startPipeClient(b, helper(floorEnv, "direct"))},
				{prefix: "", client: startPipeClient(b, exec.Command(server, args...))},
			}
			for _, r := range runs {
				defer r.client.close()
				r.client.run(b, 200, window, payload) // warm up
			}
			b.ResetTimer()
			for i := range runs {
				runs[i].time, runs[i].lat = runs[i].client.run(b, b.N, window, payload)
			}
			b.StopTimer()
			rate := func(i int) float64 { return float64(b.N) / runs[i].time.Seconds() }
			baseP50 := median(runs[0].lat)
			for i, r := range runs {
				r.client.close()
				b.ReportMetric(float64(r.client.cpuTime().Nanoseconds())/float64(b.N), r.prefix+"cpu-ns/call")
				b.ReportMetric(rate(i), r.prefix+"calls/s")
				if window == 1 {
					b.ReportMetric(float64(median(r.lat).Nanoseconds()), r.prefix+"p50-ns")
				}
				if i == 0 {
					continue // the ratios are to the baseline
				}
				b.ReportMetric(rate(i)/rate(0), r.prefix+"rate-ratio")
				if window == 1 {
					b.ReportMetric(float64(median(r.lat))/float64(baseP50), r.prefix+"p50-ratio")
				}
			}
		})
	}
}
