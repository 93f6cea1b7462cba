package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Tampering fuzzing of the signed tokens the runtime hands clients: a
// pagination cursor and a 2026 requestState. Each target issues a genuine
// token, checks that it is accepted, then applies the input's mutation (cut
// bytes from pos on replaced by with) and checks that every token other than
// the genuine one is refused. Seeds:
// f.Add below and testdata/fuzz/<FuzzName>/.

// tamper returns token with cut bytes from pos (modulo its length plus
// one) replaced by with.
func tamper(token string, pos uint16, with string, cut uint8) string {
	p := int(pos) % (len(token) + 1)
	return token[:p] + with + token[min(len(token), p+int(cut)):]
}

func FuzzCursorTampering(f *testing.F) {
	f.Add(uint8(1), uint64(7), uint32(100), "alice", uint16(3), "A", uint8(1))
	f.Add(uint8(2), uint64(0), uint32(1), "", uint16(43), "Q", uint8(1))
	f.Add(uint8(3), uint64(1<<63), uint32(5), "bob", uint16(10), "+", uint8(1))
	f.Add(uint8(1), uint64(9), uint32(2), "", uint16(0), "", uint8(1))
	cc, err := newCursorCodec([]byte(strings.Repeat("k", minStateKeyBytes)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, generation uint64, offset uint32, binding string, pos uint16, with string, cut uint8) {
		k := listKind(kind%4 + 1)
		off := int(offset) + 1
		token := cc.encode(k, generation, off, binding)
		if got, ok := cc.decode(token, k, generation, binding); !ok || got != off {
			t.Fatalf("the genuine cursor %q decodes to %d, %v", token, got, ok)
		}
		for _, other := range []struct {
			kind       listKind
			generation uint64
			binding    string
		}{{k%4 + 1, generation, binding}, {k, generation + 1, binding}, {k, generation, binding + "x"}} {
			if _, ok := cc.decode(token, other.kind, other.generation, other.binding); ok {
				t.Fatalf("cursor %q of %v accepted for %+v", token, k, other)
			}
		}
		tampered := tamper(token, pos, with, cut)
		if tampered == token {
			return
		}
		if got, ok := cc.decode(tampered, k, generation, binding); ok {
			t.Fatalf("tampered cursor %q (genuine %q) accepted, offset %d", tampered, token, got)
		}
	})
}

func FuzzRequestStateTampering(f *testing.F) {
	f.Add("tools/call", "weather", "", []byte(`{"q":{"method":"elicitation/create","result":{"action":"accept"}}}`), []byte(`{"step":2}`), uint16(5), "x", uint8(1))
	f.Add("prompts/get", "p", "alice", []byte(`{}`), []byte(nil), uint16(200), "A", uint8(1))
	f.Add("resources/read", "seq://r", "", []byte(`{}`), []byte(`[1]`), uint16(3), "==", uint8(2))
	clock := time.Unix(1_700_000_000, 0)
	sc, err := newRequestStateCodec([]byte(strings.Repeat("k", minStateKeyBytes)), time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	sc.now = func() time.Time { return clock }
	f.Fuzz(func(t *testing.T, method, subject, binding string, answers, handler []byte, pos uint16, with string, cut uint8) {
		var s sealedState
		if json.Unmarshal(answers, &s.Answers) != nil {
			s.Answers = nil
		}
		if json.Valid(handler) {
			s.Handler = handler
		}
		token, err := sc.seal(method, subject, binding, s)
		if err != nil {
			return // an answer or a state encoding/json cannot write
		}
		if _, rerr := sc.open(method, subject, binding, token); rerr != nil {
			t.Fatalf("the genuine state %q refused: %v", token, rerr)
		}
		if _, rerr := sc.open(method, subject+"x", binding, token); rerr == nil {
			t.Fatalf("state %q accepted for another subject", token)
		}
		if _, rerr := sc.open(method, subject, binding+"x", token); rerr == nil {
			t.Fatalf("state %q accepted for another principal", token)
		}
		tampered := tamper(token, pos, with, cut)
		if tampered == token {
			return
		}
		if _, rerr := sc.open(method, subject, binding, tampered); rerr == nil {
			t.Fatalf("tampered state %q (genuine %q) accepted", tampered, token)
		}
	})
}
