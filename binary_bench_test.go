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
)

// baselineEnv makes the test binary act as the baseline program: it reads a
// line and writes back a canned result with the same id, nothing else. It is
// what any stdio JSON-RPC server costs at the least.
const baselineEnv = "MCPSTDIO_BASELINE_SERVER"

// benchFlagsEnv adds flags to the server the binary benchmarks start, for
// example "-cpuprofile /tmp/cpu.out" to profile it under that load.
const benchFlagsEnv = "MCPSTDIO_BENCH_FLAGS"

func TestMain(m *testing.M) {
	if os.Getenv(baselineEnv) == "1" {
		runBaseline(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runBaseline(in io.Reader, out io.Writer) {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		id := []byte("null")
		if i := bytes.Index(line, []byte(`"id":`)); i >= 0 {
			rest := line[i+5:]
			if j := bytes.IndexAny(rest, ",}"); j >= 0 {
				id = rest[:j]
			}
		}
		w.WriteString(`{"jsonrpc":"2.0","id":`)
		w.Write(id)
		w.WriteString(`,"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n")
		w.Flush()
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

// BenchmarkBinaryVsBaseline runs the real server binary and the baseline
// program side by side over OS pipes with the same pipelined load, and
// reports both rates, the ratio, and (window 1) both median latencies.
func BenchmarkBinaryVsBaseline(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	server := serverBinary(b)
	payload := strings.Repeat("x", 100)
	for _, window := range []int{1, 64} {
		b.Run(fmt.Sprintf("window%d", window), func(b *testing.B) {
			baseCmd := exec.Command(self)
			baseCmd.Env = append(os.Environ(), baselineEnv+"=1")
			base := startPipeClient(b, baseCmd)
			defer base.close()
			args := append([]string{"-log-level", "error"}, strings.Fields(os.Getenv(benchFlagsEnv))...)
			ours := startPipeClient(b, exec.Command(server, args...))
			defer ours.close()
			// Warm both up, then measure the same number of calls on each.
			base.run(b, 200, window, payload)
			ours.run(b, 200, window, payload)
			b.ResetTimer()
			baseTime, baseLat := base.run(b, b.N, window, payload)
			ourTime, ourLat := ours.run(b, b.N, window, payload)
			b.StopTimer()
			base.close()
			ours.close()
			b.ReportMetric(float64(ours.cpuTime().Nanoseconds())/float64(b.N), "cpu-ns/call")
			b.ReportMetric(float64(base.cpuTime().Nanoseconds())/float64(b.N), "baseline-cpu-ns/call")
			ourRate := float64(b.N) / ourTime.Seconds()
			baseRate := float64(b.N) / baseTime.Seconds()
			b.ReportMetric(ourRate, "calls/s")
			b.ReportMetric(baseRate, "baseline-calls/s")
			b.ReportMetric(ourRate/baseRate, "rate-ratio")
			if window == 1 {
				b.ReportMetric(float64(median(ourLat).Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(median(baseLat).Nanoseconds()), "baseline-p50-ns")
				b.ReportMetric(float64(median(ourLat))/float64(median(baseLat)), "p50-ratio")
			}
		})
	}
}
