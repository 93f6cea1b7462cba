package main

import "testing"

// Sequence fuzzing of one connection. A fuzz input is a program: its first
// byte chooses the connection's setting (a small executor that refuses work
// for capacity; on stdio also how the input is cut into reads, whether the
// coordinator writes itself, CRLF line ends, byte order marks, a last line
// without newline, a read error instead of end of file), and each following
// byte or few bytes choose the next client action and its arguments
// (seqRun.step, conn_fuzz_harness_test.go):
//
//   - calls of tools that answer at once (inline or on a worker), sleep until
//     the test releases them or their context ends, fail, panic, ask the
//     client (elicitation, sampling, roots), report progress and log, or bind
//     typed arguments; in the initialize era or with a 2026-07-28 _meta; with
//     valid or odd arguments;
//   - requests of every other method, with valid, odd and invalid params, a
//     missing jsonrpc or a method that is not a string;
//   - initialize at any time, proposing any version, or invalid;
//   - cancellations of requests in flight, finished or never sent, and
//     malformed ones;
//   - releases of sleepers; answers (and double answers, errors, answers of
//     the wrong shape) to the server's questions, and stray responses;
//   - notifications, well formed or not; parse errors of every kind
//     (truncated, trailing data, duplicate keys, invalid UTF-8, nesting,
//     over-long numbers, blank lines, garbage), values that are not
//     requests, untracked ids; lines over the limit and lines that just fit;
//   - JSON arrays (batches in 2025-03-26, else invalid requests);
//   - the application's Notify, list changes and resource updates;
//   - the end of input, at any point.
//
// Ids come from a small pool (two spellings of some: "a" and "\u0061", 0 and
// -0), so they are reused, cancelled and duplicated; the client knows of
// each id whether the server certainly holds it (a sleeper not released, so
// a new request with it is a duplicate), certainly not (its answer came, or
// its cancellation was read), or maybe, and then it sends a fresh id
// instead. A tools/call's arguments carry a token its answer echoes.
//
// After every sequence (seqRun.finish, checkAnswers):
//
//   - every request is answered exactly once, per id and per admission: a
//     request the connection admitted gets one answer with its id (a
//     response carrying a token answers the call with that token); a
//     request sent while its id was certainly in flight gets exactly one
//     -32600 "Duplicate in-flight request id"; no answer names an id that
//     no request awaits (never twice, never an id that was not sent);
//   - a request cancelled while it certainly could not have finished (a
//     sleeper not released, which the test then never releases) is never
//     answered; one cancelled while its answer may have been on its way is
//     answered at most once, before any answer to a message sent after the
//     cancellation (a batch member's in its batch's array, whenever that
//     comes), since a cancellation is read in order and nothing is written
//     for the request once it is; a 2026 subscriptions/listen stream
//     is answered at most once (a refusal), never when it stays open;
//   - a notification is never answered; the answers with id null are
//     exactly those of the lines that must get one: each parse error
//     -32700, each line over the limit one -32600 naming it, each invalid
//     request (not an object, an untracked id, a method that is not a
//     string, an empty or refused batch) one -32600 (or, with the small
//     executor, -32603 capacity);
//   - every frame is pure ASCII JSON, one per line (each write of the stdio
//     output holds whole frames), a JSON-RPC 2.0 response, notification or
//     server request; an error has a code of the documented set; a
//     request's notifications and questions precede its answer;
//   - frames follow the negotiated version (the one of the last successful
//     initialize sent before the message, since messages that arrive
//     during an initialize are held until its outcome): a 2026 request's
//     result carries resultType and a legacy one's does not; a typed tool's
//     result has structuredContent from 2025-06-18 on; a request before
//     any initialize without _meta is -32602; a JSON array is a batch only
//     in 2025-03-26, answered by one array frame holding the answers of its
//     members alone;
//   - the application's notifications are written once each;
//   - at the end of input Serve returns nil once every admitted request is
//     answered; afterwards the executor holds no job and no byte, no listen
//     stream is open, and no goroutine is left.
//
// Seeds: f.Add below and testdata/fuzz/FuzzMemorySequence,
// testdata/fuzz/FuzzStdioSequence.

// FuzzMemorySequence runs sequences over the in-memory transport.
func FuzzMemorySequence(f *testing.F) {
	for _, seed := range seqSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runSequence(t, false, data) })
}

// FuzzStdioSequence runs sequences over the stdio coordinator, with a fake
// pipe on each side.
func FuzzStdioSequence(f *testing.F) {
	for _, seed := range seqSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runSequence(t, true, data) })
}

// seqSeeds start the fuzzers at sequences that reach each action: the
// opcodes are seqRun.step's (the input byte modulo 16).
var seqSeeds = [][]byte{
	// config, then: initialize 2025-06-18 with capabilities, two echo
	// calls, a sleep on pool id 1, a duplicate of it, its cancellation,
	// a ping.
	{0, 6, 2, 1, 0, 0, 10, 1, 0, 48 + 0, 2, 0, 48 + 0, 0, 0, 48 + 0, 7, 48, 0, 4, 0, 0, 48},
	// stdio: reads of one byte, CRLF, BOM; calls of every tool in 2026.
	{2 | 32 | 64, 0, 0, 1, 0, 1, 1, 0, 3, 1, 0, 4, 1, 0, 5, 1, 0, 6, 1, 0, 7, 1, 0, 14, 3, 0},
	// initialize 2025-03-26, then a batch of three, a malformed line of
	// each kind, an oversized line and one that just fits.
	{8, 6, 1, 0, 14, 3, 0, 3, 5, 7, 12, 0, 0, 12, 1, 0, 12, 2, 0, 12, 3, 0, 12, 4, 0, 12, 5, 0, 12, 6, 0, 12, 7, 4, 65, 66, 67, 68, 12, 8, 0, 12, 9, 3, 12, 10, 0, 12, 11, 0, 12, 12, 1, 13, 1, 13, 0},
	// the small executor: sleepers, asks and progress, answered questions,
	// releases, notifications, Notify, list changes, end of input.
	{1, 6, 3, 1, 2, 0, 60, 5, 0, 60, 6, 2, 60, 10, 0, 0, 9, 0, 10, 1, 0, 11, 0, 11, 3, 15, 0, 15, 1, 15, 2, 0, 1, 60, 15, 3},
}
