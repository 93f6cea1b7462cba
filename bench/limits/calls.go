package main

// What both sides send and check: the echo calls, their texts, and the
// figures a run yields.

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
)

// initializeRequest opens a session (of 2025-11-25) on either transport.
const initializeRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"limits","version":"1.0.0"}}}`

// meta2026 is the _meta of a stateless 2026-07-28 call.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// appendCall appends the tools/call of the echo tool with id and the
// text of id, with meta2026 when stateless.
func appendCall(dst []byte, id int, t *texts, stateless bool) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, int64(id), 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`...)
	dst = t.appendText(dst, id)
	dst = append(dst, `"}`...)
	if stateless {
		dst = append(append(dst, ','), meta2026...)
	}
	return append(dst, "}}"...)
}

// idDigits is how many digits of its call's id a text starts with.
const idDigits = 10

// texts are the calls' echo texts: size bytes, the call's id in idDigits
// digits and then letters, so that an answer that carries another call's
// text is caught. Safe for concurrent use: it is read only.
type texts struct {
	size   int
	filler []byte // the letters after the digits
}

func newTexts(size int) *texts {
	filler := make([]byte, max(size-idDigits, 0))
	for i := range filler {
		filler[i] = 'a' + byte(i%26)
	}
	return &texts{size: max(size, idDigits), filler: filler}
}

func (t *texts) appendText(dst []byte, id int) []byte {
	var digits [idDigits]byte
	return append(append(dst, t.digits(&digits, id)...), t.filler...)
}

// digits writes id into d, zero-padded.
func (t *texts) digits(d *[idDigits]byte, id int) []byte {
	for i := idDigits - 1; i >= 0; i-- {
		d[i] = '0' + byte(id%10)
		id /= 10
	}
	return d[:]
}

var textKey = []byte(`"text":"`)

// check returns an error unless the answer carries id's text whole.
func (t *texts) check(answer []byte, id int) error {
	i := bytes.Index(answer, textKey)
	if i < 0 {
		return fmt.Errorf("the answer to call %d has no text: %.300s", id, answer)
	}
	got := answer[i+len(textKey):]
	var digits [idDigits]byte
	if len(got) <= t.size || !bytes.Equal(got[:idDigits], t.digits(&digits, id)) || !bytes.Equal(got[idDigits:t.size], t.filler) || got[t.size] != '"' {
		return fmt.Errorf("the answer to call %d does not carry its text: %.300s", id, answer)
	}
	return nil
}

// measure is what one run yields: calls per second, the median latency of
// a call, and the process's CPU time (user and system, from its start to its
// exit) over the calls it answered, warm-up and handshake included.
type measure struct {
	rate float64
	p50  time.Duration
	cpu  time.Duration
}

// cpuPerCall returns the CPU time of an exited process over calls.
func cpuPerCall(state *os.ProcessState, calls int) time.Duration {
	if state == nil || calls <= 0 {
		return 0
	}
	return (state.UserTime() + state.SystemTime()) / time.Duration(calls)
}

// median returns the median of ds (the upper one of an even count), 0 for
// none; ds is sorted.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
