package main

import (
	"slices"
	"sync/atomic"
)

// Input the coordinator takes ahead of admission, and its bounds: the long
// lines the reading goroutine hands over before the coordinator takes them,
// and the messages held behind an initialize.

// Input taken ahead of admission is bounded in bytes as well as in lines, so
// that what the connection holds beyond the executor's MaxInflightBytes
// stays small even when every line is near MaxLineBytes:
//   - the reading goroutine hands over lines longer than aheadSmallLine only
//     while the bytes of such lines not yet taken by the coordinator are
//     within aheadBytes (lines up to aheadSmallLine are bounded by
//     linesBuffer alone, and cost no accounting);
//   - the coordinator takes no more input while the messages it holds behind
//     an initialize reach aheadBytes (or linesBuffer messages).
//
// Either may exceed aheadBytes by one line.
const (
	aheadBytes     = 1 << 20
	aheadSmallLine = defaultReadChunk
)

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
	if n > aheadSmallLine {
		la.untake(n)
	}
}

func (la *lookahead) untake(n int) {
	if left := la.bytes.Add(-int64(n)); left <= aheadBytes && left+int64(n) > aheadBytes {
		select {
		case la.room <- struct{}{}:
		default:
		}
	}
}

// input is the channel of the reading goroutine's events, nil (never ready)
// while the held queue is full: the reader then blocks, and so does the
// client's writing, until the initialize finishes.
func (c *coordinator) input() <-chan inbound {
	if c.holdFull() {
		return nil
	}
	return c.lines
}

// holdFull reports whether the held queue is at its bound.
func (c *coordinator) holdFull() bool {
	return len(c.held) >= linesBuffer || c.heldBytes >= aheadBytes
}

// heldIndex is the position of the held request with canonical id in
// c.held, or -1.
func (c *coordinator) heldIndex(id string) int {
	for i, ex := range c.held {
		if ex.id == id {
			return i
		}
	}
	return -1
}

// dropHeld removes c.held[i] without answering it.
func (c *coordinator) dropHeld(i int) {
	c.heldBytes -= c.held[i].job.size
	c.held = slices.Delete(c.held, i, i+1)
}

// releaseHeld submits the held messages in arrival order, now that no
// initialize is in flight, until one of them is an initialize again: the
// rest then wait for that one.
func (c *coordinator) releaseHeld() error {
	for c.initializing == 0 && len(c.held) > 0 {
		ex := c.held[0]
		c.dropHeld(0)
		if err := c.submit(ex); err != nil {
			return err
		}
	}
	return nil
}
