package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// errLineTooLong reports an input line longer than the limit. The reader returns it once per over-long line,
// as soon as the limit is passed (before the line's newline has arrived), then discards the rest of that line as it
// arrives and serves the next line normally.
var errLineTooLong = errors.New("line exceeds the limit")

// errInvalidReadCount reports a Read that claimed a byte count outside 0..len(p); such a source cannot be trusted
// any further, so it ends the input like any other read error.
var errInvalidReadCount = errors.New("reader returned an invalid byte count")

const defaultReadChunk = 64 << 10

// maxEmptyReads is how many consecutive (0, nil) Reads the reader tolerates before it reports io.ErrNoProgress,
// as bufio does.
const maxEmptyReads = 100

// utf8BOM is the byte order mark that some writers put at the start of a line; it is not part of the message.
const utf8BOM = "\xEF\xBB\xBF"

// lineReader splits an io.Reader into newline-terminated lines, holding at most maxLine bytes of any line plus one
// read chunk in memory, whatever arrives. Not safe for concurrent use: one goroutine owns it.
//
// Every field is owned by the goroutine that calls next.
type lineReader struct {
	src     io.Reader
	maxLine int // limit of one line in raw bytes, counting its newline; > 0

	chunk      []byte // read buffer, allocated once; chunk[start:end] is not yet consumed
	start, end int

	// partial holds the beginning of the current line when that line spans reads, partialLen bytes in all,
	// never more than maxLine. It is kept in pieces of at most one chunk, filled in turn, so the line never
	// needs to be copied while it grows and no outgrown buffer is left for the collector: a line refused as
	// too long costs no more memory than its limit. Pieces are reused from line to line (spare).
	partial    [][]byte
	partialLen int
	spare      [][]byte
	// discarding is set after errLineTooLong was returned for a line whose newline has not arrived yet:
	// bytes up to and including that newline are dropped.
	discarding bool

	srcErr error // error returned by src together with the last data; acted on once that data is consumed
	err    error // terminal: io.EOF or the wrapped read error, returned by every later call
}

// newLineReader returns a reader of r's lines that holds at most maxLine bytes of a line (maxLine counts the
// newline and must be > 0: the transport validates MaxLineBytes before it gets here) and reads r in Reads of at
// most chunk bytes (chunk ≤ 0 means defaultReadChunk). It allocates the chunk buffer at once; it never closes r.
func newLineReader(r io.Reader, maxLine, chunk int) *lineReader {
	if maxLine <= 0 {
		panic(fmt.Sprintf("newLineReader: maxLine must be positive, got %d", maxLine))
	}
	if chunk <= 0 {
		chunk = defaultReadChunk
	}
	return &lineReader{src: r, maxLine: maxLine, chunk: make([]byte, chunk)}
}

// next returns the next line without its "\n", with one trailing "\r" and one leading UTF-8 BOM (EF BB BF) removed.
// The returned slice is owned by the caller: the reader never reads or writes it again.
// It returns (nil, errLineTooLong) for an over-long line (see above); io.EOF at the end of input, after serving an
// unterminated final line that fits; any other read error as is (wrapped with "read input: %w"), after which every
// call returns that same error.
// It blocks in the underlying Read.
//
// An empty line is returned as a non-nil, zero-length slice; input that ends right after "\n" produces no extra
// empty line. The limit counts raw bytes: a line of n bytes before its "\n" (including any "\r" and BOM) fits when
// n+1 ≤ maxLine, an unterminated final line when n ≤ maxLine. Data that a Read returns together with an error is
// processed before the error; a line still incomplete when a read error (other than io.EOF) arrives is dropped.
// A Read returning (0, nil) is retried; 100 of them in a row end the input with io.ErrNoProgress (wrapped).
func (lr *lineReader) next() ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	for {
		if line, err, ok := lr.scan(); ok {
			return line, err
		}
		if lr.srcErr != nil {
			return lr.finish()
		}
		lr.fill()
	}
}

// scan consumes buffered bytes until it can report a line or an over-long line (ok is true), or until the buffer is
// empty (ok is false; the bytes seen so far are kept in partial or dropped while discarding).
func (lr *lineReader) scan() (line []byte, err error, ok bool) {
	for lr.start < lr.end {
		data := lr.chunk[lr.start:lr.end]
		newline := bytes.IndexByte(data, '\n')
		if lr.discarding {
			if newline < 0 {
				lr.start = lr.end
				return nil, nil, false
			}
			lr.start += newline + 1
			lr.discarding = false
			continue
		}
		if newline >= 0 {
			lr.start += newline + 1
			return lr.endLine(data[:newline])
		}
		lr.start = lr.end
		if lr.partialLen+len(data) > lr.maxLine {
			lr.dropPartial()
			lr.discarding = true
			return nil, errLineTooLong, true
		}
		lr.appendPartial(data)
	}
	return nil, nil, false
}

// endLine completes the current line, whose last bytes before its newline are tail.
func (lr *lineReader) endLine(tail []byte) (line []byte, err error, ok bool) {
	if lr.partialLen+len(tail)+1 > lr.maxLine {
		lr.dropPartial()
		return nil, errLineTooLong, true
	}
	if lr.partialLen == 0 {
		return copyLine(tail), nil, true
	}
	return lr.takePartial(tail), nil, true
}

// finish handles the error src returned, once all data that came before it is consumed.
func (lr *lineReader) finish() ([]byte, error) {
	if lr.srcErr != io.EOF {
		lr.dropPartial()
		lr.err = fmt.Errorf("read input: %w", lr.srcErr)
		return nil, lr.err
	}
	lr.err = io.EOF
	if lr.discarding || lr.partialLen == 0 {
		// The over-long line was already reported; nothing of it is served.
		lr.discarding = false
		return nil, io.EOF
	}
	// scan never keeps more than maxLine bytes, so the unterminated final line fits.
	return lr.takePartial(nil), nil
}

// fill replaces the consumed buffer with the next Read's data, recording an error in srcErr. It is called only
// when the buffer is empty and srcErr is nil.
func (lr *lineReader) fill() {
	lr.start, lr.end = 0, 0
	for range maxEmptyReads {
		n, err := lr.src.Read(lr.chunk)
		if n < 0 || n > len(lr.chunk) {
			lr.srcErr = errInvalidReadCount
			return
		}
		lr.end = n
		if err != nil {
			lr.srcErr = err
			return
		}
		if n > 0 {
			return
		}
	}
	lr.srcErr = io.ErrNoProgress
}

// appendPartial adds data to the line being assembled, filling the last piece and then new ones. The caller
// guarantees that the line stays within maxLine bytes.
func (lr *lineReader) appendPartial(data []byte) {
	lr.partialLen += len(data)
	for len(data) > 0 {
		n := len(lr.partial)
		if n == 0 || len(lr.partial[n-1]) == cap(lr.partial[n-1]) {
			lr.partial = append(lr.partial, lr.newPiece())
			n++
		}
		last := lr.partial[n-1]
		k := min(cap(last)-len(last), len(data))
		lr.partial[n-1] = append(last, data[:k]...)
		data = data[k:]
	}
}

// newPiece returns an empty piece for partial: a spare one, or a new one of one chunk's size (or maxLine's,
// when that is smaller).
func (lr *lineReader) newPiece() []byte {
	if n := len(lr.spare); n > 0 {
		piece := lr.spare[n-1]
		lr.spare = lr.spare[:n-1]
		return piece[:0]
	}
	return make([]byte, 0, min(len(lr.chunk), lr.maxLine))
}

// dropPartial forgets the line being assembled, keeping its pieces for the next one.
func (lr *lineReader) dropPartial() {
	lr.spare = append(lr.spare, lr.partial...)
	clear(lr.partial)
	lr.partial = lr.partial[:0]
	lr.partialLen = 0
}

// takePartial returns the line being assembled followed by tail, as copyLine would return it, and drops it.
func (lr *lineReader) takePartial(tail []byte) []byte {
	line := make([]byte, 0, lr.partialLen+len(tail))
	for _, piece := range lr.partial {
		line = append(line, piece...)
	}
	line = append(line, tail...)
	lr.dropPartial()
	line = bytes.TrimPrefix(line, []byte(utf8BOM))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// copyLine returns a fresh copy of raw, of exactly the returned length, without one leading UTF-8 BOM and one
// trailing "\r". The result is never nil.
func copyLine(raw []byte) []byte {
	raw = bytes.TrimPrefix(raw, []byte(utf8BOM))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	line := make([]byte, len(raw))
	copy(line, raw)
	return line
}

// inbound is one event of a message source: a decoded message, an
// over-long message, the end of input, or a read error.
type inbound struct {
	line     []byte
	env      envelope
	parseErr error
	tooLong  bool
	eof      bool
	readErr  error
}

// linesBuffer is how many decoded lines the reading goroutine may hand over
// ahead of the coordinator, so that under load the coordinator takes several
// lines per wake-up instead of one. It also bounds how many messages a
// connection holds behind an initialize (see connection.holdFull).
const linesBuffer = 16

// Input taken ahead of admission is bounded in bytes as well as in lines, so
// that what a connection holds beyond the executor's MaxInflightBytes stays
// small even when every line is near MaxLineBytes:
//   - the reading goroutine hands over lines longer than aheadSmallLine only
//     while the bytes of such lines not yet taken by the coordinator are
//     within aheadBytes (lines up to aheadSmallLine are bounded by
//     linesBuffer alone, and cost no accounting);
//   - a connection takes no more input while the messages it holds behind
//     an initialize reach aheadBytes (or linesBuffer messages), or while the
//     frames waiting for the output do.
//
// Either may exceed aheadBytes by one line.
const (
	aheadBytes     = 1 << 20
	aheadSmallLine = defaultReadChunk
)

// lineSource is the message source of a byte stream: a goroutine reads and
// decodes its lines (readLines) and hands them to the coordinator.
type lineSource struct {
	lines chan inbound
	ahead lookahead
	stop  chan struct{} // closed by close: the reading goroutine returns
}

// newLineSource starts reading r's lines of at most maxLine bytes.
func newLineSource(r io.Reader, maxLine int) *lineSource {
	s := &lineSource{lines: make(chan inbound, linesBuffer), stop: make(chan struct{})}
	s.ahead.room = make(chan struct{}, 1)
	go readLines(newLineReader(r, maxLine, defaultReadChunk), s.lines, &s.ahead, s.stop)
	return s
}

func (s *lineSource) events() <-chan inbound { return s.lines }
func (s *lineSource) taken(in inbound)       { s.ahead.taken(len(in.line)) }
func (s *lineSource) close()                 { close(s.stop) }

// readLines reads and decodes lines until the end of input or a read error,
// sending one inbound per event, and waits for room in ahead after a long
// line that filled it. It returns early once stop is closed. A Read that
// never returns keeps it alive.
func readLines(lr *lineReader, out chan<- inbound, ahead *lookahead, stop <-chan struct{}) {
	for {
		var in inbound
		line, err := lr.next()
		switch {
		case err == nil:
			in.line = line
			in.env, in.parseErr = decodeEnvelope(line)
		case errors.Is(err, errLineTooLong):
			in.tooLong = true
		case errors.Is(err, io.EOF):
			in.eof = true
		default:
			in.readErr = err
		}
		wait := ahead.reserve(len(in.line))
		if !sendInbound(out, in, stop) {
			return
		}
		if in.eof || in.readErr != nil {
			return
		}
		for wait && ahead.full() {
			select {
			case <-ahead.room:
			case <-stop:
				return
			}
		}
	}
}

// sendInbound hands in over, blocking while out is full; it reports false,
// having sent nothing, once stop is closed. It tries each channel alone
// before it waits on both: an operation on one channel that cannot proceed
// takes no lock, where a select of several locks them all.
func sendInbound(out chan<- inbound, in inbound, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
	}
	select {
	case out <- in:
		return true
	default:
	}
	select {
	case out <- in:
		return true
	case <-stop:
		return false
	}
}

// lookahead counts the bytes of the long lines (over aheadSmallLine) that the
// reading goroutine has handed over and the coordinator has not taken yet.
// The reader adds a line's length before sending it and, while the count is
// over aheadBytes, waits for room; the coordinator subtracts it when it takes
// the line and signals room when the count falls to aheadBytes.
type lookahead struct {
	bytes atomic.Int64
	room  chan struct{} // capacity 1; a stale signal only makes the reader check again
}

// reserve counts a line of n bytes handed to the coordinator; it reports
// whether the reader must wait for room before reading on.
func (la *lookahead) reserve(n int) bool {
	return n > aheadSmallLine && la.bytes.Add(int64(n)) > aheadBytes
}

// full reports whether the lines not yet taken are over aheadBytes.
func (la *lookahead) full() bool { return la.bytes.Load() > aheadBytes }

// taken uncounts a line of n bytes the coordinator took.
func (la *lookahead) taken(n int) {
	if n <= aheadSmallLine {
		return
	}
	if left := la.bytes.Add(-int64(n)); left <= aheadBytes && left+int64(n) > aheadBytes {
		select {
		case la.room <- struct{}{}:
		default:
		}
	}
}
