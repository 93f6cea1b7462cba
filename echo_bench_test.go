package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The echo pairs compare two kinds of echo call in one run, so that both
// rates are taken under the same load of the (shared) machine: the non-ASCII
// text against ASCII text of as many bytes, and the reference catalog's
// typed echo (which sends its text twice, as content and as
// structuredContent) against an untyped echo that sends it once. The two
// kinds alternate in rounds of pairRound calls; each reports its calls/s,
// and the second its rate as a fraction of the first's ("rate-ratio").

// pairRound is how many calls of one kind run before the other kind's turn.
const pairRound = 256

// echoPair is one comparison: two tools/call lines, the reference first.
type echoPair struct {
	name              string
	prefixA, prefixB  string // of the metrics' units
	lineA, lineB      string
	wantA, wantB      string // in the answers
	untypedEchoNeeded bool
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
			lineA: echoCallLine("untyped_echo", ascii), lineB: echoCallLine("echo", ascii),
			wantA: ascii, wantB: `"structuredContent":{"text":"` + ascii,
			untypedEchoNeeded: true,
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

// untypedEcho is the echo tool as an untyped handler, as the reference
// catalog served it before it became a typed tool: the text member looked
// up and decoded, answered as one text block.
func untypedEcho(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
	raw, found := jsonObject(req.Arguments).lookup("text")
	if !found {
		return nil, errors.New(`missing "text"`)
	}
	text, ok := decodeString(raw)
	if !ok {
		return nil, errors.New(`"text" must be a string`)
	}
	return TextResult(text), nil
}

// newEchoPairRuntime is the reference runtime with untypedEcho added.
func newEchoPairRuntime(b *testing.B) *Runtime {
	rt := newCatalogRuntime(b)
	if err := rt.AddTool(Tool{Name: "untyped_echo", InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}, untypedEcho); err != nil {
		b.Fatal(err)
	}
	return rt
}

// alternate runs n calls of each of a and c, in alternating rounds of
// pairRound (a first in one round, c first in the next, so that neither
// always follows the other and inherits its garbage), and returns the time
// each took in all.
func alternate(n int, a, c func(calls int)) (timeA, timeC time.Duration) {
	timed := func(f func(int), k int) time.Duration {
		start := time.Now()
		f(k)
		return time.Since(start)
	}
	for round, done := 0, 0; done < n; round, done = round+1, done+pairRound {
		k := min(pairRound, n-done)
		if round%2 == 0 {
			timeA += timed(a, k)
			timeC += timed(c, k)
		} else {
			timeC += timed(c, k)
			timeA += timed(a, k)
		}
	}
	return timeA, timeC
}

func reportPair(b *testing.B, p echoPair, timeA, timeC time.Duration) {
	rateA, rateC := float64(b.N)/timeA.Seconds(), float64(b.N)/timeC.Seconds()
	b.ReportMetric(rateA, p.prefixA+"calls/s")
	b.ReportMetric(rateC, p.prefixB+"calls/s")
	b.ReportMetric(rateC/rateA, p.prefixB+"rate-ratio")
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
			timeA, timeC := alternate(b.N, a, c)
			reportPair(b, p, timeA, timeC)
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
			timeA, timeC := alternate(b.N, runA, runC)
			b.StopTimer()
			reportPair(b, p, timeA, timeC)
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
