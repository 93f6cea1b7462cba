package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// echoDispatcher answers every request with its params.
var echoDispatcher = DispatcherFunc(func(ctx context.Context, req *Request) Reply {
	return Reply{Result: req.Params}
})

// BenchmarkServeRoundTrip measures pipelined request/response round trips
// through Serve over io.Pipe, keeping `window` requests outstanding.
func BenchmarkServeRoundTrip(b *testing.B) {
	for _, size := range []int{100, 64 << 10} {
		for _, window := range []int{1, 64} {
			b.Run(fmt.Sprintf("echo%dB/window%d", size, window), func(b *testing.B) {
				benchRoundTrip(b, echoDispatcher, size, window)
			})
		}
	}
}

func benchRoundTrip(b *testing.B, d Dispatcher, size, window int) {
	pad := strings.Repeat("x", max(0, size-80))
	benchRoundTripLine(b, d, window, `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"text":"`+pad+`"}}`)
}

// benchRoundTripLine pipelines request, whose fixed-width string id
// "0000000000" it numbers, through Serve.
func benchRoundTripLine(b *testing.B, d Dispatcher, window int, request string) {
	p := startServePipe(b, d)
	b.SetBytes(int64(len(request) + 1))
	b.ReportAllocs()
	b.ResetTimer()
	p.run(b, b.N, window, request, "")
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	p.close(b)
}

// servePipe is a Serve of a dispatcher over io.Pipe, driven by run.
type servePipe struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	line []byte // run's request, reused
	sent int    // requests sent so far, numbering their ids
}

func startServePipe(b *testing.B, d Dispatcher) *servePipe {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &servePipe{in: inW, out: bufio.NewReaderSize(outR, 128<<10), done: make(chan error, 1)}
	go func() {
		p.done <- Serve(context.Background(), d, Options{Input: inR, Output: outW, Logger: quietLogger()})
		outW.Close()
	}()
	return p
}

// run pipelines n copies of request, whose fixed-width string id
// "0000000000" it numbers, keeping window outstanding, and reads their n
// answers. When want is set, the first answer must contain it.
func (p *servePipe) run(b *testing.B, n, window int, request, want string) {
	p.line = append(append(p.line[:0], request...), '\n')
	idAt := strings.Index(request, "0000000000")
	sendErr := make(chan error, 1)
	credits := make(chan struct{}, window)
	for range window {
		credits <- struct{}{}
	}
	go func() {
		for range n {
			<-credits
			p.sent++
			putDigits(p.line[idAt:idAt+10], p.sent)
			if _, err := p.in.Write(p.line); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	for i := range n {
		answer, err := p.out.ReadSlice('\n')
		if err != nil {
			b.Fatalf("reading a response: %v", err)
		}
		if i == 0 && want != "" && !strings.Contains(string(answer), want) {
			b.Fatalf("answer %s lacks %s", answer, want)
		}
		credits <- struct{}{}
	}
	if err := <-sendErr; err != nil {
		b.Fatal(err)
	}
}

// close ends the input and waits for Serve to return.
func (p *servePipe) close(b *testing.B) {
	p.in.Close()
	if err := <-p.done; err != nil {
		b.Fatal(err)
	}
}

// putDigits writes n into dst as fixed-width decimal with leading zeros.
func putDigits(dst []byte, n int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
}

// BenchmarkServeRuntimeEcho is BenchmarkServeRoundTrip through the reference
// runtime: a 2026 tools/call of the echo tool, dialect validation included.
func BenchmarkServeRuntimeEcho(b *testing.B) {
	rt := newCatalogRuntime(b)
	for _, window := range []int{1, 64} {
		b.Run(fmt.Sprintf("window%d", window), func(b *testing.B) {
			benchRoundTripLine(b, rt, window, `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("x", 100)+`"},`+binMeta2026+`}}`)
		})
	}
}
