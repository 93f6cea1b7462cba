package main

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"
	"time"
)

// proofLedger remembers the DPoP proofs the gate accepted until they could
// no longer pass its iat window, so that a proof sent twice is refused the
// second time (RFC 9449 §11.1). It holds at most max proofs, and at most
// perClient of one client (a principal); when a proof does not fit, it is
// refused: the ledger never forgets a proof early, which would let it be
// replayed. Each proof is kept as a 128-bit digest of its key's thumbprint
// and its jti (a long jti costs nothing more), with its client and its
// expiry.
//
// Safe for concurrent use. A mutex rather than an owning goroutine: every
// DPoP request records its proof, and the record is a few map and heap
// operations, shorter than a round trip through a channel.
type proofLedger struct {
	max, perClient int          // read-only
	seed           maphash.Seed // of the clients' digests; read-only

	mu    sync.Mutex
	seen  map[[16]byte]struct{}
	queue ledgerQueue    // the proofs of seen, soonest expiry first
	held  map[uint64]int // proofs held per client digest
}

// ledgerEntry is one proof remembered.
type ledgerEntry struct {
	proof   [16]byte
	client  uint64
	expires int64 // Unix nanoseconds: the proof passes no iat check after it
}

// ledgerOutcome is what remember did with a proof.
type ledgerOutcome int

const (
	proofRemembered     ledgerOutcome = iota // new: remembered
	proofReplayed                            // remembered before and not yet expired: refused
	proofsFull                               // the ledger holds max proofs: refused
	proofsFullForClient                      // the client holds perClient proofs: refused
)

// newProofLedger returns an empty ledger of at most max proofs, perClient
// of one client.
func newProofLedger(max, perClient int) *proofLedger {
	return &proofLedger{max: max, perClient: perClient, seed: maphash.MakeSeed(),
		seen: make(map[[16]byte]struct{}), held: make(map[uint64]int)}
}

// remember records the proof of key thumbprint jkt with jti, sent by client,
// until expires, unless the ledger holds it already or has no room for it
// (first forgetting the proofs expired by now).
func (l *proofLedger) remember(jkt, jti, client string, expires, now time.Time) ledgerOutcome {
	digest := proofDigest(jkt, jti)
	user := maphash.String(l.seed, client)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetExpiredLocked(now.UnixNano())
	if _, seen := l.seen[digest]; seen {
		return proofReplayed
	}
	switch {
	case len(l.seen) >= l.max:
		return proofsFull
	case l.held[user] >= l.perClient:
		return proofsFullForClient
	}
	l.seen[digest] = struct{}{}
	l.held[user]++
	l.queue.push(ledgerEntry{proof: digest, client: user, expires: expires.UnixNano()})
	return proofRemembered
}

// len returns how many proofs the ledger holds.
func (l *proofLedger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// forgetExpiredLocked drops the proofs that expired before now. Called
// with mu.
func (l *proofLedger) forgetExpiredLocked(now int64) {
	for len(l.queue) > 0 && l.queue[0].expires < now {
		e := l.queue.pop()
		delete(l.seen, e.proof)
		if l.held[e.client]--; l.held[e.client] == 0 {
			delete(l.held, e.client)
		}
	}
}

// proofDigest names a proof in the ledger: the first 128 bits of the
// SHA-256 of its key's thumbprint and its jti (two clients' proofs with
// one jti are two proofs).
func proofDigest(jkt, jti string) [16]byte {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return [16]byte(sum[:16])
}

// ledgerQueue is a binary min-heap of entries by expiry (container/heap
// would box each entry in an interface).
type ledgerQueue []ledgerEntry

func (q *ledgerQueue) push(e ledgerEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].expires <= h[i].expires {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// pop removes and returns the entry that expires first; q is not empty.
func (q *ledgerQueue) pop() ledgerEntry {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].expires < h[smallest].expires {
			smallest = l
		}
		if r < len(h) && h[r].expires < h[smallest].expires {
			smallest = r
		}
		if smallest == i {
			break
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
	*q = h
	return top
}
