package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// Events of a lineReader session, written as strings so that whole sessions compare with one slices check.
const (
	eventTooLong = "TOO_LONG"
	eventEOF     = "EOF"
)

func lineEvent(line []byte) string { return fmt.Sprintf("line %q", line) }

// readEvents calls next until it returns an error other than errLineTooLong, and returns what each call produced.
// It fails the test if a line is nil or an error comes with data, or if the session does not end within limit calls.
func readEvents(t *testing.T, lr interface{ next() ([]byte, error) }, limit int) []string {
	t.Helper()
	var events []string
	for range limit {
		line, err := lr.next()
		switch {
		case err == nil && line == nil:
			t.Fatalf("next returned a nil line without an error after %q", events)
		case err != nil && line != nil:
			t.Fatalf("next returned %q together with error %v", line, err)
		case err == nil:
			events = append(events, lineEvent(line))
		case errors.Is(err, errLineTooLong):
			events = append(events, eventTooLong)
		case err == io.EOF:
			return append(events, eventEOF)
		default:
			return append(events, "error "+err.Error())
		}
	}
	t.Fatalf("no end of input after %d calls: %q", limit, events)
	return nil
}

func lines(contents ...string) []string {
	events := make([]string, len(contents))
	for i, c := range contents {
		events[i] = lineEvent([]byte(c))
	}
	return events
}

func then(events []string, more ...string) []string {
	return append(append([]string{}, events...), more...)
}

// readerKinds wrap the test input in the ways a real source may deliver it.
var readerKinds = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte per Read", iotest.OneByteReader},
	{"EOF with the last data", iotest.DataErrReader},
	{"one byte per Read, EOF with the last byte", func(r io.Reader) io.Reader {
		return iotest.DataErrReader(iotest.OneByteReader(r))
	}},
}

func TestLineReaderSessions(t *testing.T) {
	x := strings.Repeat
	cases := []struct {
		name    string
		maxLine int
		input   string
		want    []string
	}{
		{"empty input", 10, "", []string{eventEOF}},
		{"9 bytes and newline fit in 10", 10, x("a", 9) + "\n", then(lines(x("a", 9)), eventEOF)},
		{"10 bytes and newline exceed 10", 10, x("a", 10) + "\n", []string{eventTooLong, eventEOF}},
		{"unterminated 10 bytes at EOF fit in 10", 10, x("a", 10), then(lines(x("a", 10)), eventEOF)},
		{"unterminated 11 bytes at EOF exceed 10", 10, x("a", 11), []string{eventTooLong, eventEOF}},
		{"CRLF line of 10 raw bytes fits", 10, x("a", 8) + "\r\n", then(lines(x("a", 8)), eventEOF)},
		{"CRLF line of 11 raw bytes exceeds", 10, x("a", 9) + "\r\n", []string{eventTooLong, eventEOF}},
		{"unterminated line ending in CR at EOF fits", 10, x("a", 9) + "\r", then(lines(x("a", 9)), eventEOF)},
		{"BOM line of 10 raw bytes fits", 10, utf8BOM + x("a", 6) + "\n", then(lines(x("a", 6)), eventEOF)},
		{"BOM line of 11 raw bytes exceeds", 10, utf8BOM + x("a", 7) + "\n", []string{eventTooLong, eventEOF}},
		{"unterminated BOM line of 10 bytes fits", 10, utf8BOM + x("a", 7), then(lines(x("a", 7)), eventEOF)},
		{"BOM and CRLF of 10 raw bytes fit", 10, utf8BOM + x("a", 5) + "\r\n", then(lines(x("a", 5)), eventEOF)},
		{"over-long line then a normal one", 10, x("b", 25) + "\n{}\n", then([]string{eventTooLong}, lineEvent([]byte("{}")), eventEOF)},
		{
			"several over-long lines in a row", 4,
			"abcd\n" + x("z", 9) + "\n" + "abcde\r\n" + "ok\n",
			[]string{eventTooLong, eventTooLong, eventTooLong, lineEvent([]byte("ok")), eventEOF},
		},
		{"over-long line is discarded up to its own newline only", 4, "abcdef\nxyz\nabcd\n", then([]string{eventTooLong}, lineEvent([]byte("xyz")), eventTooLong, eventEOF)},
		{"over-long unterminated final line after a normal one", 4, "ok\nabcdefgh", then(lines("ok"), eventTooLong, eventEOF)},
		{"empty lines are served", 10, "\n\na\n\n", then(lines("", "", "a", ""), eventEOF)},
		{"no extra line after a final newline", 10, "a\nb\n", then(lines("a", "b"), eventEOF)},
		{"unterminated final line is served", 10, "a\nb", then(lines("a", "b"), eventEOF)},
		{"CRLF only and BOM only lines are empty", 10, "\r\n" + utf8BOM + "\n" + utf8BOM, then(lines("", "", ""), eventEOF)},
		{"one CR and one BOM are removed", 10, utf8BOM + utf8BOM + "a\r\r\n", then(lines(utf8BOM+"a\r"), eventEOF)},
		{"BOM and CR are kept inside a line", 20, "a" + utf8BOM + "\rb\n", then(lines("a"+utf8BOM+"\rb"), eventEOF)},
		{"partial BOM is kept", 10, "\xEF\xBBa\n", then(lines("\xEF\xBBa"), eventEOF)},
		{"limit 1 admits only empty lines", 1, "\na\n\nb", then(lines(""), eventTooLong, lineEvent([]byte{}), lineEvent([]byte("b")), eventEOF)},
		{"limit 1 rejects a CRLF line", 1, "\r\n\n", then([]string{eventTooLong}, lineEvent([]byte{}), eventEOF)},
	}
	for _, tc := range cases {
		for _, kind := range readerKinds {
			for _, chunk := range []int{1, 2, 3, 4, 5, 6, 7, defaultReadChunk} {
				name := fmt.Sprintf("%s/%s/chunk=%d", tc.name, kind.name, chunk)
				t.Run(name, func(t *testing.T) {
					lr := newLineReader(kind.wrap(strings.NewReader(tc.input)), tc.maxLine, chunk)
					got := readEvents(t, lr, 100)
					if !slices.Equal(got, tc.want) {
						t.Fatalf("input %q, maxLine %d:\n got  %q\n want %q", tc.input, tc.maxLine, got, tc.want)
					}
				})
			}
		}
	}
}

// readStep is one Read of a scriptedReader: data (split over several Reads when p is shorter) and the error that
// comes with its last byte.
type readStep struct {
	data string
	err  error
}

// scriptedReader plays its steps in order, then reports io.EOF.
type scriptedReader struct {
	steps []readStep
	reads int
}

func (r *scriptedReader) Read(p []byte) (int, error) {
	r.reads++
	if len(r.steps) == 0 {
		return 0, io.EOF
	}
	step := &r.steps[0]
	n := copy(p, step.data)
	step.data = step.data[n:]
	if step.data != "" {
		return n, nil
	}
	err := step.err
	r.steps = r.steps[1:]
	return n, err
}

func TestLineReaderSplitAtEveryPosition(t *testing.T) {
	input := utf8BOM + "first\r\n\nsecond line\n" + strings.Repeat("x", 30) + "\nlast"
	want := then(lines("first", "", "second line"), eventTooLong, lineEvent([]byte("last")), eventEOF)
	for split := range len(input) + 1 {
		for _, chunk := range []int{3, 7, defaultReadChunk} {
			t.Run(fmt.Sprintf("split=%d/chunk=%d", split, chunk), func(t *testing.T) {
				src := &scriptedReader{steps: []readStep{{data: input[:split]}, {data: input[split:], err: io.EOF}}}
				got := readEvents(t, newLineReader(src, 20, chunk), 100)
				if !slices.Equal(got, want) {
					t.Fatalf("got %q, want %q", got, want)
				}
			})
		}
	}
}

func TestLineReaderReadErrors(t *testing.T) {
	failure := errors.New("device failure")
	cases := []struct {
		name  string
		steps []readStep
		want  []string
	}{
		{"error mid-line drops the partial line", []readStep{{data: "ok\npart"}, {err: failure}}, then(lines("ok"), "error read input: device failure")},
		{"data that comes with the error is served first", []readStep{{data: "a\nb\nparti", err: failure}}, then(lines("a", "b"), "error read input: device failure")},
		{"error while discarding an over-long line", []readStep{{data: "0123456789abc"}, {err: failure}}, []string{eventTooLong, "error read input: device failure"}},
		{"error at the start", []readStep{{err: failure}}, []string{"error read input: device failure"}},
		{"a few empty Reads are retried", []readStep{{data: "a"}, {}, {}, {}, {data: "\n"}}, then(lines("a"), eventEOF)},
		{"error after a complete line with nothing pending", []readStep{{data: "a\n"}, {err: failure}}, then(lines("a"), "error read input: device failure")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLineReader(&scriptedReader{steps: tc.steps}, 10, 4)
			got := readEvents(t, lr, 100)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineReaderReadErrorIsStickyAndWrapped(t *testing.T) {
	// TimeoutReader fails its second Read only; every later Read of it succeeds, but the reader must not resume.
	lr := newLineReader(iotest.TimeoutReader(strings.NewReader("ok\npartial line\nnext\n")), 100, 8)
	if line, err := lr.next(); err != nil || string(line) != "ok" {
		t.Fatalf("first next = %q, %v; want \"ok\", nil", line, err)
	}
	_, first := lr.next()
	if !errors.Is(first, iotest.ErrTimeout) || !strings.HasPrefix(first.Error(), "read input: ") {
		t.Fatalf("second next error = %v; want read input: wrapping %v", first, iotest.ErrTimeout)
	}
	for range 3 {
		line, err := lr.next()
		if line != nil || err != first {
			t.Fatalf("later next = %q, %v; want nil and the same error value %v", line, err, first)
		}
	}
}

func TestLineReaderErrReader(t *testing.T) {
	failure := errors.New("closed pipe")
	lr := newLineReader(iotest.ErrReader(failure), 10, 4)
	if _, err := lr.next(); !errors.Is(err, failure) {
		t.Fatalf("next error = %v; want one wrapping %v", err, failure)
	}
}

func TestLineReaderEOFIsSticky(t *testing.T) {
	lr := newLineReader(strings.NewReader("a"), 10, 4)
	got := readEvents(t, lr, 10)
	for range 3 {
		if line, err := lr.next(); line != nil || err != io.EOF {
			t.Fatalf("next after EOF = %q, %v; want nil, io.EOF (session was %q)", line, err, got)
		}
	}
}

// noProgressReader returns (0, nil) forever and counts its Reads.
type noProgressReader struct{ reads int }

func (r *noProgressReader) Read([]byte) (int, error) {
	r.reads++
	return 0, nil
}

func TestLineReaderNoProgress(t *testing.T) {
	src := &noProgressReader{}
	lr := newLineReader(src, 10, 4)
	_, err := lr.next()
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("next error = %v; want one wrapping io.ErrNoProgress", err)
	}
	if src.reads != maxEmptyReads {
		t.Fatalf("reader was asked %d times; want %d", src.reads, maxEmptyReads)
	}
	if _, again := lr.next(); again != err || src.reads != maxEmptyReads {
		t.Fatalf("next after no progress = %v with %d Reads; want the same error without reading", again, src.reads)
	}
}

// invalidCountReader claims to have read more bytes than it was given room for.
type invalidCountReader struct{ n int }

func (r invalidCountReader) Read(p []byte) (int, error) { return r.n, nil }

func TestLineReaderInvalidReadCount(t *testing.T) {
	for _, n := range []int{-1, 5} {
		lr := newLineReader(invalidCountReader{n: n}, 10, 4)
		if _, err := lr.next(); !errors.Is(err, errInvalidReadCount) {
			t.Fatalf("Read returning %d into 4 bytes: next error = %v; want %v", n, err, errInvalidReadCount)
		}
	}
}

// blockingReader serves pending, then announces each further Read on entered and blocks until the test sends more
// data on release (or closes it, which ends the input).
type blockingReader struct {
	pending []byte
	entered chan struct{}
	release chan []byte
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if len(r.pending) == 0 {
		r.entered <- struct{}{}
		more, ok := <-r.release
		if !ok {
			return 0, io.EOF
		}
		r.pending = more
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

type nextResult struct {
	line []byte
	err  error
}

func TestLineReaderReportsOverLongLineBeforeBlocking(t *testing.T) {
	const maxLine = 10
	src := &blockingReader{
		pending: []byte(strings.Repeat("x", maxLine+1)), // arrives in Reads of 4, 4 and 3 bytes
		entered: make(chan struct{}),
		release: make(chan []byte),
	}
	lr := newLineReader(src, maxLine, 4)
	results := make(chan nextResult, 1)
	next := func() {
		go func() {
			line, err := lr.next()
			results <- nextResult{line, err}
		}()
	}

	next()
	select {
	case res := <-results:
		if res.line != nil || res.err != errLineTooLong {
			t.Fatalf("next = %q, %v; want nil, errLineTooLong", res.line, res.err)
		}
	case <-src.entered:
		close(src.release)
		t.Fatal("next waited in Read although maxLine+1 bytes of the line had arrived")
	}

	// The rest of the line arrives later and is discarded; the next line is served.
	next()
	<-src.entered
	src.release <- []byte("yyyy\nok\n")
	if res := <-results; res.err != nil || string(res.line) != "ok" {
		t.Fatalf("next after the over-long line = %q, %v; want \"ok\", nil", res.line, res.err)
	}

	next()
	<-src.entered
	close(src.release)
	if res := <-results; res.err != io.EOF {
		t.Fatalf("next at the end = %q, %v; want io.EOF", res.line, res.err)
	}
}

func TestLineReaderWaitsForTheByteAfterAFullLine(t *testing.T) {
	// Exactly maxLine bytes without a newline: the line may still fit (EOF next) or not (anything else next).
	const maxLine = 4
	src := &blockingReader{pending: []byte("abcd"), entered: make(chan struct{}), release: make(chan []byte)}
	lr := newLineReader(src, maxLine, 8)
	results := make(chan nextResult, 1)
	go func() {
		line, err := lr.next()
		results <- nextResult{line, err}
	}()
	<-src.entered // next must read on, not decide yet
	close(src.release)
	if res := <-results; res.err != nil || string(res.line) != "abcd" {
		t.Fatalf("next = %q, %v; want \"abcd\", nil", res.line, res.err)
	}
}

func TestLineReaderLinesAreOwnedByTheCaller(t *testing.T) {
	var input strings.Builder
	var want []string
	for i := range 50 {
		line := strings.Repeat(string(rune('a'+i%26)), i)
		input.WriteString(line + "\n")
		want = append(want, line)
	}
	lr := newLineReader(strings.NewReader(input.String()), 64, 16)
	var got [][]byte
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		got = append(got, line)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range got {
		if string(got[i]) != want[i] {
			t.Fatalf("line %d changed after later reads: %q, want %q", i, got[i], want[i])
		}
		if cap(got[i]) != len(got[i]) {
			t.Fatalf("line %d has capacity %d for length %d; want an exact copy", i, cap(got[i]), len(got[i]))
		}
	}
}

// repeatingReader serves pattern over and over, filling each Read completely, without allocating.
type repeatingReader struct {
	pattern []byte
	offset  int
}

func (r *repeatingReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		copied := copy(p[n:], r.pattern[r.offset:])
		n += copied
		r.offset = (r.offset + copied) % len(r.pattern)
	}
	return n, nil
}

func TestLineReaderAllocatesOnlyTheReturnedLine(t *testing.T) {
	cases := []struct {
		name   string
		line   string
		chunk  int
		result string
	}{
		{"line inside the chunk", "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\r\n", 4096, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}"},
		{"line spanning chunks", utf8BOM + strings.Repeat("s", 1000) + "\n", 64, strings.Repeat("s", 1000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lr := newLineReader(&repeatingReader{pattern: []byte(tc.line)}, 2048, tc.chunk)
			for range 3 { // warm up the partial-line buffer
				if _, err := lr.next(); err != nil {
					t.Fatal(err)
				}
			}
			var last []byte
			allocs := testing.AllocsPerRun(100, func() {
				line, err := lr.next()
				if err != nil {
					t.Fatal(err)
				}
				last = line
			})
			if allocs != 1 {
				t.Fatalf("%v allocations per line; want exactly 1", allocs)
			}
			if string(last) != tc.result || cap(last) != len(last) {
				t.Fatalf("line %q with capacity %d; want %q with an exact capacity", last, cap(last), tc.result)
			}
		})
	}
}

// hugeLineReader produces size bytes of 'x' and then tail, without holding the huge line in memory. delivered
// counts the bytes handed out so far.
type hugeLineReader struct {
	fill      []byte
	remaining int
	tail      []byte
	delivered int
}

func (r *hugeLineReader) Read(p []byte) (int, error) {
	var n int
	switch {
	case r.remaining > 0:
		n = copy(p[:min(len(p), r.remaining)], r.fill)
		r.remaining -= n
	case len(r.tail) > 0:
		n = copy(p, r.tail)
		r.tail = r.tail[n:]
	default:
		return 0, io.EOF
	}
	r.delivered += n
	return n, nil
}

func TestLineReaderHugeLineMemory(t *testing.T) {
	const (
		maxLine  = 1 << 20
		chunk    = 64 << 10
		hugeSize = 64 << 20
	)
	src := &hugeLineReader{fill: bytes.Repeat([]byte("x"), chunk), remaining: hugeSize, tail: []byte("\n{}\n")}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	lr := newLineReader(src, maxLine, chunk)
	line, err := lr.next()
	deliveredAtReport := src.delivered
	if line != nil || err != errLineTooLong {
		t.Fatalf("first next = %d bytes, %v; want nil, errLineTooLong", len(line), err)
	}
	line, err = lr.next()
	if err != nil || string(line) != "{}" {
		t.Fatalf("second next = %q, %v; want \"{}\", nil", line, err)
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("third next error = %v; want io.EOF", err)
	}

	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(2*maxLine + 4*chunk); allocated > limit {
		t.Fatalf("reading a %d-byte line allocated %d bytes; want at most %d", hugeSize, allocated, limit)
	}
	if deliveredAtReport > maxLine+chunk {
		t.Fatalf("errLineTooLong came after %d bytes; want it within maxLine+chunk = %d", deliveredAtReport, maxLine+chunk)
	}
	if src.remaining != 0 || len(src.tail) != 0 {
		t.Fatalf("input not consumed: %d line bytes and %d tail bytes left", src.remaining, len(src.tail))
	}
}

func TestLineReaderBufferNeverExceedsTheLimit(t *testing.T) {
	// 1000 is not a power-of-two multiple of the chunk, so plain doubling would overshoot it.
	const maxLine = 1000
	input := strings.Repeat("y", maxLine) + "\n" + strings.Repeat("z", 5000) + "\n" + strings.Repeat("w", maxLine)
	lr := newLineReader(strings.NewReader(input), maxLine, 7)
	var events []string
	for {
		line, err := lr.next()
		if held := partialCapacity(lr); held > maxLine+7 {
			t.Fatalf("line pieces hold %d bytes, over maxLine %d plus one chunk, after %q", held, maxLine, events)
		}
		if err == io.EOF {
			break
		}
		if errors.Is(err, errLineTooLong) {
			events = append(events, eventTooLong)
		} else {
			events = append(events, fmt.Sprintf("line of %d bytes", len(line)))
		}
	}
	want := []string{eventTooLong, eventTooLong, "line of 1000 bytes"}
	if !slices.Equal(events, want) {
		t.Fatalf("got %q, want %q", events, want)
	}
}

func TestNewLineReaderArguments(t *testing.T) {
	if lr := newLineReader(strings.NewReader(""), 10, 0); len(lr.chunk) != defaultReadChunk {
		t.Fatalf("chunk 0 gave a %d-byte buffer; want defaultReadChunk", len(lr.chunk))
	}
	for _, maxLine := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("newLineReader with maxLine %d did not panic", maxLine)
				}
			}()
			newLineReader(strings.NewReader(""), maxLine, 4)
		}()
	}
}

// referenceEvents is the specification of a whole session, written the simple way: split everything at once.
func referenceEvents(data []byte, maxLine int) []string {
	pieces := bytes.Split(data, []byte("\n"))
	unterminated := pieces[len(pieces)-1]
	var events []string
	for _, raw := range pieces[:len(pieces)-1] {
		if len(raw)+1 > maxLine {
			events = append(events, eventTooLong)
		} else {
			events = append(events, referenceLine(raw))
		}
	}
	if len(unterminated) > maxLine {
		events = append(events, eventTooLong)
	} else if len(unterminated) > 0 {
		events = append(events, referenceLine(unterminated))
	}
	return append(events, eventEOF)
}

func referenceLine(raw []byte) string {
	s := string(raw)
	if len(s) >= 3 && s[:3] == "\xEF\xBB\xBF" {
		s = s[3:]
	}
	if len(s) > 0 && s[len(s)-1] == '\r' {
		s = s[:len(s)-1]
	}
	return lineEvent([]byte(s))
}

// FuzzLineReader compares lineReader with referenceEvents. maxLine is 1..64 and chunk 1..16; the upper bits of
// chunkAndKind pick how the source delivers its bytes (see readerKinds).
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{}\n"), uint8(9), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, maxLineSeed, chunkAndKind uint8) {
		maxLine := 1 + int(maxLineSeed)%64
		chunk := 1 + int(chunkAndKind)%16
		kind := readerKinds[int(chunkAndKind/16)%len(readerKinds)]
		lr := newLineReader(kind.wrap(bytes.NewReader(data)), maxLine, chunk)
		want := referenceEvents(data, maxLine)
		got := readEvents(t, lr, len(want)+1)
		if !slices.Equal(got, want) {
			t.Fatalf("input %q, maxLine %d, chunk %d, %s:\n got  %q\n want %q", data, maxLine, chunk, kind.name, got, want)
		}
		if line, err := lr.next(); line != nil || err != io.EOF {
			t.Fatalf("next after EOF = %q, %v; want nil, io.EOF", line, err)
		}
	})
}

// partialCapacity is the memory lr keeps for the line being assembled: its
// pieces, in use or spare.
func partialCapacity(lr *lineReader) int {
	held := 0
	for _, piece := range append(slices.Clone(lr.partial), lr.spare...) {
		held += cap(piece)
	}
	return held
}
