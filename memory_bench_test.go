package main

import (
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// peakRSS runs the server with args, feeds it with feed (which must close
// stdin), reads all its stdout when readOutput is true, and returns the
// process's peak resident set size in bytes and how long it ran.
func peakRSS(b *testing.B, args []string, readOutput bool, feed func(io.WriteCloser)) (int64, time.Duration) {
	start := time.Now()
	p := startPipeClient(b, exec.Command(serverBinary(b), args...))
	go feed(p.in)
	if readOutput {
		io.Copy(io.Discard, p.out)
	}
	cmd := p.cmd
	cmd.Wait()
	elapsed := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Skip("no rusage on this platform")
	}
	return int64(ru.Maxrss) * 1024, elapsed // Linux reports kilobytes
}

const pingLine = `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"

// BenchmarkBinaryMemory measures the real binary's peak RSS (SPEC §3 and
// issue 6's memory targets): a 64 MiB line without a newline, against a
// session of one ping; and 2,000 requests of 64 KiB sent while nobody reads
// stdout, with how long the process lived before the write timeout ended it.
func BenchmarkBinaryMemory(b *testing.B) {
	b.Run("64MiB-line", func(b *testing.B) {
		for range b.N {
			base, _ := peakRSS(b, nil, true, func(in io.WriteCloser) {
				io.WriteString(in, pingLine)
				in.Close()
			})
			peak, _ := peakRSS(b, nil, true, func(in io.WriteCloser) {
				chunk := []byte(strings.Repeat("a", 1<<20))
				for range 64 {
					if _, err := in.Write(chunk); err != nil {
						break
					}
				}
				io.WriteString(in, "\n"+pingLine)
				in.Close()
			})
			b.ReportMetric(float64(base), "base-rss-bytes")
			b.ReportMetric(float64(peak-base), "rss-growth-bytes")
			b.ReportMetric(float64(peak-base)/DefaultMaxLineBytes, "growth/MaxLineBytes")
		}
	})
	b.Run("unread-stdout", func(b *testing.B) {
		for range b.N {
			big := strings.Repeat("x", 64<<10)
			peak, lived := peakRSS(b, []string{"-write-timeout", "1s"}, false, func(in io.WriteCloser) {
				defer in.Close()
				for i := range 2000 {
					line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"},` + binMeta2026 + `}}` + "\n"
					if _, err := io.WriteString(in, line); err != nil {
						return
					}
				}
			})
			b.ReportMetric(float64(peak), "peak-rss-bytes")
			b.ReportMetric(lived.Seconds(), "lived-s")
		}
	})
}
