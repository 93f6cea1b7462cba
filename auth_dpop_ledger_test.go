package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestProofLedger: a proof is remembered until it expires and refused
// meanwhile; a full ledger, or a client's full share, refuses new proofs
// and forgets none of those it holds before they expire.
func TestProofLedger(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newProofLedger(4, 3)
	later := now.Add(time.Minute)
	steps := []struct {
		name           string
		jkt, jti, user string
		expires, at    time.Time
		want           ledgerOutcome
	}{
		{"a new proof", "k1", "a", "alice", later, now, proofRemembered},
		{"the same proof", "k1", "a", "alice", later, now, proofReplayed},
		{"the same proof from another principal", "k1", "a", "bob", later, now, proofReplayed},
		{"the same jti of another key", "k2", "a", "bob", later, now, proofRemembered},
		{"alice's second", "k1", "b", "alice", later.Add(time.Second), now, proofRemembered},
		{"alice's third", "k1", "c", "alice", later.Add(2 * time.Second), now, proofRemembered},
		{"beyond the ledger", "k2", "b", "bob", later, now, proofsFull},
		{"the first still refused while full", "k1", "a", "alice", later, now, proofReplayed},
		{"at its expiry, still held", "k1", "a", "alice", later, later, proofReplayed},
		{"after it: forgotten, alice's fourth fits", "k1", "a", "alice", later.Add(time.Minute), later.Add(time.Nanosecond), proofRemembered},
		{"alice beyond her share", "k1", "d", "alice", later.Add(time.Minute), later.Add(time.Nanosecond), proofsFullForClient},
		{"bob has room", "k2", "c", "bob", later.Add(time.Minute), later.Add(time.Nanosecond), proofRemembered},
	}
	for _, s := range steps {
		if got := l.remember(s.jkt, s.jti, s.user, s.expires, s.at); got != s.want {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}
	if n := l.len(); n != 4 {
		t.Fatalf("%d proofs held, want 4", n)
	}
	if got := l.remember("k9", "z", "carol", later, later.Add(2*time.Minute+time.Second)); got != proofRemembered || l.len() != 1 || len(l.held) != 1 {
		t.Fatalf("once all expired: %v, %d proofs of %d clients, want only carol's", got, l.len(), len(l.held))
	}
}

// TestProofLedgerForgetsInExpiryOrder: proofs arriving in any order of
// expiry are forgotten exactly when each expires.
func TestProofLedgerForgetsInExpiryOrder(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	const n = 500
	l := newProofLedger(n, n)
	offsets := rand.Perm(n)
	for i, off := range offsets {
		if got := l.remember("k", fmt.Sprint(i), "c", base.Add(time.Duration(off+1)*time.Second), base); got != proofRemembered {
			t.Fatalf("proof %d: %v", i, got)
		}
	}
	for passed := 0; passed <= n; passed += 37 {
		at := base.Add(time.Duration(passed)*time.Second + time.Nanosecond)
		for i, off := range offsets {
			got := l.remember("k", fmt.Sprint(i), "c", base.Add(time.Duration(off+1)*time.Second), at)
			if off+1 > passed && got != proofReplayed || off+1 <= passed && got != proofRemembered {
				t.Fatalf("at %ds, the proof expiring at %ds: %v", passed, off+1, got)
			}
		}
	}
}

// TestProofLedgerConcurrentReplays: of one proof sent by many requests at
// once, exactly one is remembered, whatever the order. Run with -race.
func TestProofLedgerConcurrentReplays(t *testing.T) {
	l := newProofLedger(DefaultDPoPMaxProofs, DefaultDPoPMaxProofs)
	now := time.Now()
	for round := range 50 {
		const senders = 8
		outcomes := make(chan ledgerOutcome, senders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				<-start
				outcomes <- l.remember("k", fmt.Sprint(round), "c", now.Add(time.Minute), now)
			})
		}
		close(start)
		wg.Wait()
		close(outcomes)
		remembered := 0
		for o := range outcomes {
			if o == proofRemembered {
				remembered++
			} else if o != proofReplayed {
				t.Fatalf("round %d: %v", round, o)
			}
		}
		if remembered != 1 {
			t.Fatalf("round %d: %d senders' proofs remembered, want 1", round, remembered)
		}
	}
}
