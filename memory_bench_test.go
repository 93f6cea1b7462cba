package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// vmHWM returns the peak resident set size, in bytes, of the live process
// pid, from /proc (Linux). Unlike rusage's maxrss it counts only the
// process's own image: a child's maxrss starts at its parent's, here the
// test binary's, which can exceed the server's whole peak.
func vmHWM(pid int) (int64, bool) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// rssSampler follows a live process's peak RSS until stop is called.
type rssSampler struct {
	pid  int
	peak atomic.Int64
	quit chan struct{}
	done chan struct{}
}

func startRSSSampler(b *testing.B, pid int) *rssSampler {
	if _, ok := vmHWM(pid); !ok {
		b.Skip("no /proc/PID/status VmHWM on this platform")
	}
	s := &rssSampler{pid: pid, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	if v, ok := vmHWM(s.pid); ok && v > s.peak.Load() {
		s.peak.Store(v)
	}
}

// stop ends the sampling and returns the highest peak seen.
func (s *rssSampler) stop() int64 {
	close(s.quit)
	<-s.done
	return s.peak.Load()
}

const pingLine = `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"

// sessionPeakRSS runs the server, writes input, reads answers lines of its
// output, and returns its peak RSS then, while it is still running (so the
// reading is exact), before it closes the input.
func sessionPeakRSS(b *testing.B, input func(io.Writer), answers int) int64 {
	p := startPipeClient(b, exec.Command(serverBinary(b)))
	defer p.close()
	s := startRSSSampler(b, p.cmd.Process.Pid)
	go input(p.in)
	r := bufio.NewReader(p.out)
	for range answers {
		if _, err := r.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
			b.Fatalf("reading an answer: %v", err)
		}
	}
	s.sample()
	return s.stop()
}

// BenchmarkBinaryMemory measures the real binary's peak RSS
// (docs/explanation/performance.md): a 64 MiB line without a newline, against a
// session of one ping; and 2,000 requests of 64 KiB sent while nobody reads
// stdout, with how long the process lived before the write timeout ended it.
func BenchmarkBinaryMemory(b *testing.B) {
	b.Run("64MiB-line", func(b *testing.B) {
		for range b.N {
			base := sessionPeakRSS(b, func(in io.Writer) { io.WriteString(in, pingLine) }, 1)
			peak := sessionPeakRSS(b, func(in io.Writer) {
				chunk := []byte(strings.Repeat("a", 1<<20))
				for range 64 {
					if _, err := in.Write(chunk); err != nil {
						return
					}
				}
				io.WriteString(in, "\n"+pingLine)
			}, 2) // the over-long line's error, then the ping's result
			b.ReportMetric(float64(base), "base-rss-bytes")
			b.ReportMetric(float64(peak-base), "rss-growth-bytes")
			b.ReportMetric(float64(peak-base)/DefaultMaxLineBytes, "growth/MaxLineBytes")
		}
	})
	b.Run("unread-stdout", func(b *testing.B) {
		for range b.N {
			big := strings.Repeat("x", 64<<10)
			start := time.Now()
			p := startPipeClient(b, exec.Command(serverBinary(b), "-write-timeout", "1s"))
			s := startRSSSampler(b, p.cmd.Process.Pid)
			go func() {
				defer p.in.Close()
				for i := range 2000 {
					line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"},` + binMeta2026 + `}}` + "\n"
					if _, err := io.WriteString(p.in, line); err != nil {
						return
					}
				}
			}()
			// Nobody reads stdout: the first response blocks, the write
			// timeout ends the process, and its exit closes stdout.
			p.cmd.Wait()
			lived := time.Since(start)
			b.ReportMetric(float64(s.stop()), "peak-rss-bytes")
			b.ReportMetric(lived.Seconds(), "lived-s")
		}
	})
}

// BenchmarkBinaryMemoryLargeInFlight measures the real binary's peak RSS,
// with default flags, while 300 requests of about 1.9 MB each arrive as fast
// as the pipe takes them: tools/call of the sleep tool (one second, with a
// 1.9 MB padding argument, so that admitted ones stay in flight) and of the
// echo tool (1.9 MB of text, answered with as much). MaxInflightBytes bounds
// what is admitted; peak-rss-MiB is the figure to keep under 100. refused
// counts the requests answered "Server execution capacity exhausted".
func BenchmarkBinaryMemoryLargeInFlight(b *testing.B) {
	pad := strings.Repeat("p", 1_900_000)
	cases := []struct{ name, prefix, suffix string }{
		{"sleep", `,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1000,"padding":"`, `"},` + binMeta2026 + `}}` + "\n"},
		{"echo", `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, `"},` + binMeta2026 + `}}` + "\n"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				p := startPipeClient(b, exec.Command(serverBinary(b)))
				s := startRSSSampler(b, p.cmd.Process.Pid)
				go func() {
					for i := range 300 {
						for _, piece := range []string{`{"jsonrpc":"2.0","id":` + strconv.Itoa(i), tc.prefix, pad, tc.suffix} {
							if _, err := io.WriteString(p.in, piece); err != nil {
								return
							}
						}
					}
				}()
				refused := 0
				for range 300 {
					answer, err := p.out.ReadSlice('\n')
					for err == bufio.ErrBufferFull {
						_, err = p.out.ReadSlice('\n')
					}
					if err != nil {
						b.Fatalf("reading an answer: %v", err)
					}
					if bytes.Contains(answer, []byte("Server execution capacity exhausted")) {
						refused++
					}
				}
				s.sample()
				peak := s.stop()
				p.close()
				b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
				b.ReportMetric(float64(refused), "refused")
			}
		})
	}
}
