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
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), d, Options{Input: inR, Output: outW, Logger: quietLogger()})
		outW.Close()
	}()
	line := []byte(request + "\n")
	idAt := strings.Index(string(line), "0000000000")
	sendErr := make(chan error, 1)
	credits := make(chan struct{}, window)
	for range window {
		credits <- struct{}{}
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for i := range b.N {
			<-credits
			putDigits(line[idAt:idAt+10], i)
			if _, err := inW.Write(line); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	br := bufio.NewReaderSize(outR, 128<<10)
	for range b.N {
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatalf("reading a response: %v", err)
		}
		credits <- struct{}{}
	}
	b.StopTimer()
	if err := <-sendErr; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	inW.Close()
	if err := <-done; err != nil {
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
