package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The echo pairs compare two kinds of echo call in one run, so that both
// rates are taken under the same load of the (shared) machine: the non-ASCII
// text against ASCII text of as many bytes, and the reference catalog's
// echo (a plain tool that sends its text once) against a typed echo that
// sends it twice, as content and as structuredContent. The two
// kinds alternate in rounds of pairRound calls; each reports its calls/s,
// and the second its rate as a fraction of the first's ("rate-ratio").

// pairRound is how many calls of one kind run before the other kind's turn.
const pairRound = 256

// echoPair is one comparison: two tools/call lines, the reference first.
type echoPair struct {
	name             string
	prefixA, prefixB string // of the metrics' units
	lineA, lineB     string
	wantA, wantB     string // in the answers
}

// echoPairs returns the comparisons, at 100 bytes of text.
func echoPairs() []echoPair {
	const size = 100
	ascii := strings.Repeat("x", size)
	nonASCII := nonASCIIText(size)
	return []echoPair{
		{
			name: "nonASCII", prefixA: "ascii-", prefixB: "nonascii-",
			lineA: echoCallLine("echo", ascii), lineB: echoCallLine("echo", nonASCII),
			wantA: ascii, wantB: `\u00e9`,
		},
		{
			name: "typed", prefixA: "untyped-", prefixB: "typed-",
			lineA: echoCallLine("echo", ascii), lineB: echoCallLine("typed_echo", ascii),
			wantA: ascii, wantB: `"structuredContent":{"text":"` + ascii,
		},
	}
}

// nonASCIIText returns size bytes of UTF-8 text mixing ASCII, Latin,
// CJK and emoji, cut on a character boundary and padded with ASCII.
func nonASCIIText(size int) string {
	const unit = "héllo 世界 😀 "
	text := strings.Repeat(unit, size/len(unit)+1)
	text = text[:strings.LastIndex(text[:size], " ")]
	return text + strings.Repeat(".", size-len(text))
}

// echoCallLine returns a 2026 tools/call of tool with {"text": text}, whose
// string id "0000000000" the benchmarks number.
func echoCallLine(tool, text string) string {
	return `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"` + text + `"},` + binMeta2026 + `}}`
}

// typedEchoOutput is a typed echo's result: the text, as structured
// content and, by its String method, as the text block.
type typedEchoOutput struct {
	Text string `json:"text" jsonschema:"The text given"`
}

func (o typedEchoOutput) String() string { return o.Text }

// typedEcho is the echo tool as a typed tool, as the reference catalog
// served it before it became a plain one.
func typedEcho(_ context.Context, _ *HandlerRequest, in echoInput) (typedEchoOutput, error) {
	return typedEchoOutput(in), nil
}

// newEchoPairRuntime is the reference runtime with typed_echo added.
func newEchoPairRuntime(b *testing.B) *Runtime {
	rt := newCatalogRuntime(b)
	if err := AddTypedTool(rt, Tool{Name: "typed_echo", Inline: true}, typedEcho); err != nil {
		b.Fatal(err)
	}
	return rt
}

// pairTimes is what one kind of call took in all: wall time, and the
// process's CPU time during its turns (zero where it cannot be read).
type pairTimes struct{ wall, cpu time.Duration }

// alternate runs n calls of each of a and c, in alternating rounds of
// pairRound (a first in one round, c first in the next, so that neither
// always follows the other and inherits its garbage), and returns the times
// each took in all.
func alternate(n int, a, c func(calls int)) (timesA, timesC pairTimes) {
	timed := func(t *pairTimes, f func(int), k int) {
		cpu, _ := processCPU()
		start := time.Now()
		f(k)
		t.wall += time.Since(start)
		end, _ := processCPU()
		t.cpu += end - cpu
	}
	for round, done := 0, 0; done < n; round, done = round+1, done+pairRound {
		k := min(pairRound, n-done)
		if round%2 == 0 {
			timed(&timesA, a, k)
			timed(&timesC, c, k)
		} else {
			timed(&timesC, c, k)
			timed(&timesA, a, k)
		}
	}
	return timesA, timesC
}

// reportPair reports each kind's calls/s and CPU time per call, and the
// second kind's rate and CPU rate (calls per CPU second) as fractions of the
// first's. The CPU ratio is the steadier on a busy machine: it does not
// count the turns lost to neighbours.
func reportPair(b *testing.B, p echoPair, timesA, timesC pairTimes) {
	rateA, rateC := float64(b.N)/timesA.wall.Seconds(), float64(b.N)/timesC.wall.Seconds()
	b.ReportMetric(rateA, p.prefixA+"calls/s")
	b.ReportMetric(rateC, p.prefixB+"calls/s")
	b.ReportMetric(rateC/rateA, p.prefixB+"rate-ratio")
	if _, ok := processCPU(); ok && timesC.cpu > 0 {
		b.ReportMetric(float64(timesA.cpu.Nanoseconds())/float64(b.N), p.prefixA+"cpu-ns/call")
		b.ReportMetric(float64(timesC.cpu.Nanoseconds())/float64(b.N), p.prefixB+"cpu-ns/call")
		b.ReportMetric(timesA.cpu.Seconds()/timesC.cpu.Seconds(), p.prefixB+"cpu-rate-ratio")
	}
}

// BenchmarkEchoPair compares the echo pairs on the whole work of one message
// outside the transport's goroutines: decoding and admitting the line,
// Runtime.Dispatch (dialect, binding, the handler, the result's encoding)
// and building the response frame ("call"), and through Serve over io.Pipe
// with 64 requests outstanding ("serve64"). ns/op and allocs/op are of one
// call of each kind together.
func BenchmarkEchoPair(b *testing.B) {
	rt := newEchoPairRuntime(b)
	for _, p := range echoPairs() {
		b.Run(p.name+"/call", func(b *testing.B) {
			a, c := newMessageLoop(b, rt, p.lineA, p.wantA), newMessageLoop(b, rt, p.lineB, p.wantB)
			b.ReportAllocs()
			b.ResetTimer()
			timesA, timesC := alternate(b.N, a, c)
			reportPair(b, p, timesA, timesC)
		})
		b.Run(p.name+"/serve64", func(b *testing.B) {
			a, c := startServePipe(b, rt), startServePipe(b, rt)
			defer a.close(b)
			defer c.close(b)
			runA := func(n int) { a.run(b, n, 64, p.lineA, p.wantA) }
			runC := func(n int) { c.run(b, n, 64, p.lineB, p.wantB) }
			runA(pairRound) // warm up
			runC(pairRound)
			b.ReportAllocs()
			b.ResetTimer()
			timesA, timesC := alternate(b.N, runA, runC)
			b.StopTimer()
			reportPair(b, p, timesA, timesC)
		})
	}
}

// newMessageLoop returns a function that serves n copies of line (each with
// its own id) as the transport serves a message, minus its goroutines:
// decode, admit, dispatch, frame. It checks the first answer holds want.
func newMessageLoop(b *testing.B, d Dispatcher, line, want string) func(n int) {
	buf := []byte(line)
	idAt := strings.Index(line, "0000000000")
	ctx := context.Background()
	serial, checked := 0, false
	return func(n int) {
		for range n {
			serial++
			putDigits(buf[idAt:idAt+10], serial)
			env, err := decodeEnvelope(buf)
			if err != nil {
				b.Fatal(err)
			}
			id, _ := canonicalID(env.id)
			var space handlerRequestSpace
			req := &Request{handlerSpace: &space}
			if ok, rerr := admit(req, env, id); !ok {
				b.Fatal(rerr)
			}
			r := d.Dispatch(ctx, req)
			if r.Error != nil {
				b.Fatal(r.Error)
			}
			frame := replyFrame(id, &r)
			if !checked {
				if checked = true; !strings.Contains(string(frame), want) {
					b.Fatalf("answer %s lacks %s", frame, want)
				}
			}
		}
	}
}
