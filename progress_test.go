package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Twelve requests run at once, each reporting progress under its own token:
// every request's progress lines precede its response, their values increase,
// and each token comes back with its JSON type (string or integer).
func TestProgressOfConcurrentRequestsPrecedesEachResponse(t *testing.T) {
	const requests, steps = 12, 5
	eras := []struct {
		name string
		meta func(token string) string
	}{
		{"2026-07-28", func(token string) string { return meta2026With(`"progressToken":` + token) }},
		{"2025-11-25", func(token string) string { return `"_meta":{"progressToken":` + token + `}` }},
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			arrived := make(chan struct{}, requests)
			gate := make(chan struct{})
			openGate := sync.OnceFunc(func() { close(gate) })
			rt := newTestRuntime(t, testOptions())
			mustAddTool(t, rt, Tool{Name: "steps"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				arrived <- struct{}{}
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				for i := 1; i <= steps; i++ {
					p := Progress{Progress: float64(i), Total: steps, Message: fmt.Sprintf("step %d", i)}
					if err := req.ReportProgress(ctx, p); err != nil {
						return nil, err
					}
				}
				return TextResult("done"), nil
			})
			h := startHarnessWith(t, Options{}, rt)
			t.Cleanup(openGate)
			if era.name != "2026-07-28" {
				h.initialize(era.name)
			}

			ids := make([]string, requests)
			byID := map[string]int{}
			byToken := map[string]int{}
			for i := range requests {
				token := fmt.Sprintf(`"tok-%d"`, i)
				if i%2 == 1 {
					token = fmt.Sprint(1000 + i) // an integer token: must come back as an integer
				}
				ids[i] = fmt.Sprint(i + 1)
				if i%3 == 0 {
					ids[i] = fmt.Sprintf(`"req-%d"`, i)
				}
				byID[ids[i]], byToken[token] = i, i
				h.send(toolCall(ids[i], "steps", era.meta(token)))
			}
			for range requests {
				waitFor(t, arrived, "every request to be running")
			}
			openGate()

			reported := make([]int, requests)
			answered := make([]bool, requests)
			for left := requests; left > 0; {
				f := decodeFrame(t, h.next())
				if f.isResponse() {
					i, ok := byID[string(f.ID)]
					if !ok || answered[i] {
						t.Fatalf("unexpected or repeated response %s %s", f.ID, f.Result)
					}
					if !strings.Contains(string(f.Result), `"text":"done"`) || reported[i] != steps {
						t.Fatalf("request %s answered %s after %d progress lines, want %q after %d", f.ID, f.Result, reported[i], "done", steps)
					}
					answered[i] = true
					left--
					continue
				}
				if f.Method != "notifications/progress" {
					t.Fatalf("unexpected frame %s %s", f.Method, f.Params)
				}
				var p struct {
					ProgressToken json.RawMessage
					Progress      float64
					Total         float64
					Message       string
				}
				if err := json.Unmarshal(f.Params, &p); err != nil {
					t.Fatal(err)
				}
				i, ok := byToken[string(p.ProgressToken)]
				switch {
				case !ok:
					t.Fatalf("progress for unknown token %s (tokens keep their JSON type)", p.ProgressToken)
				case answered[i]:
					t.Fatalf("progress %v of token %s after its response", p.Progress, p.ProgressToken)
				}
				reported[i]++
				want := Progress{Progress: float64(reported[i]), Total: steps, Message: fmt.Sprintf("step %d", reported[i])}
				if got := (Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}); got != want {
					t.Fatalf("token %s: got %+v, want %+v", p.ProgressToken, got, want)
				}
			}
			h.noFramesLeft()
		})
	}
}

// progressStep is one ReportProgress call and whether it must fail.
type progressStep struct {
	p       Progress
	wantErr bool
}

func TestReportProgressRules(t *testing.T) {
	thousand := func() ([]progressStep, []string) {
		var steps []progressStep
		var sent []string
		for i := 1; i <= maxProgressReports; i++ {
			steps = append(steps, progressStep{p: Progress{Progress: float64(i)}})
			sent = append(sent, fmt.Sprintf(`{"progressToken":"t","progress":%d}`, i))
		}
		return append(steps, progressStep{p: Progress{Progress: 1001}, wantErr: true}), sent
	}
	thousandSteps, thousandSent := thousand()
	tests := []struct {
		name     string
		meta     string // extra _meta members; no progressToken: nothing is sent
		steps    []progressStep
		wantSent []string
	}{
		{
			name:  "no progress token: nothing sent, no error",
			steps: []progressStep{{p: Progress{Progress: 1}}, {p: Progress{Progress: 1}}},
		},
		{
			name:     "string token, total and message",
			meta:     `"progressToken":"tok"`,
			steps:    []progressStep{{p: Progress{Progress: 1, Total: 10, Message: "first"}}, {p: Progress{Progress: 2}}},
			wantSent: []string{`{"progressToken":"tok","progress":1,"total":10,"message":"first"}`, `{"progressToken":"tok","progress":2}`},
		},
		{
			name:     "integer token stays an integer",
			meta:     `"progressToken":42`,
			steps:    []progressStep{{p: Progress{Progress: 0.5}}},
			wantSent: []string{`{"progressToken":42,"progress":0.5}`},
		},
		{
			name: "values must increase strictly",
			meta: `"progressToken":"t"`,
			steps: []progressStep{
				{p: Progress{Progress: 1}}, {p: Progress{Progress: 1}, wantErr: true},
				{p: Progress{Progress: 0.5}, wantErr: true}, {p: Progress{Progress: 2}},
			},
			wantSent: []string{`{"progressToken":"t","progress":1}`, `{"progressToken":"t","progress":2}`},
		},
		{
			name:     "the first value may be zero",
			meta:     `"progressToken":"t"`,
			steps:    []progressStep{{p: Progress{Progress: 0}}, {p: Progress{Progress: 0}, wantErr: true}, {p: Progress{Progress: 0.25}}},
			wantSent: []string{`{"progressToken":"t","progress":0}`, `{"progressToken":"t","progress":0.25}`},
		},
		{
			name: "message of at most 4096 bytes",
			meta: `"progressToken":"t"`,
			steps: []progressStep{
				{p: Progress{Progress: 1, Message: strings.Repeat("m", maxProgressMessage)}},
				{p: Progress{Progress: 2, Message: strings.Repeat("m", maxProgressMessage+1)}, wantErr: true},
				{p: Progress{Progress: 2}},
			},
			wantSent: []string{`{"progressToken":"t","progress":1,"message":"` + strings.Repeat("m", maxProgressMessage) + `"}`, `{"progressToken":"t","progress":2}`},
		},
		{
			name:     "at most 1000 reports",
			meta:     `"progressToken":"t"`,
			steps:    thousandSteps,
			wantSent: thousandSent,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			peer := &recordingPeer{}
			callProbe(t, peer, tc.meta, func(ctx context.Context, req *HandlerRequest) {
				for i, s := range tc.steps {
					err := req.ReportProgress(ctx, s.p)
					if (err != nil) != s.wantErr {
						t.Fatalf("report %d (%v): error %v, want error: %v", i, s.p.Progress, err, s.wantErr)
					}
				}
			})
			got := peer.sentParams(t, "notifications/progress")
			if strings.Join(got, "\n") != strings.Join(tc.wantSent, "\n") {
				t.Fatalf("sent %d notifications %.300q, want %d %.300q", len(got), got, len(tc.wantSent), tc.wantSent)
			}
		})
	}
}

// A report the Peer failed to send is returned as is and does not count: the
// same value may be reported again.
func TestReportProgressSendFailureIsNotCounted(t *testing.T) {
	errLost := errors.New("lost")
	peer := &recordingPeer{failNext: errLost}
	callProbe(t, peer, `"progressToken":"t"`, func(ctx context.Context, req *HandlerRequest) {
		if err := req.ReportProgress(ctx, Progress{Progress: 1}); !errors.Is(err, errLost) {
			t.Fatalf("ReportProgress = %v, want the peer's error", err)
		}
		if err := req.ReportProgress(ctx, Progress{Progress: 1}); err != nil {
			t.Fatalf("repeating the unsent value: %v", err)
		}
	})
	if got := peer.sentParams(t, "notifications/progress"); len(got) != 1 || got[0] != `{"progressToken":"t","progress":1}` {
		t.Fatalf("sent %q", got)
	}
}

// While one report is being written, a second one of the same request fails
// with ErrProgressOutstanding and sends nothing.
func TestReportProgressOneOutstanding(t *testing.T) {
	peer := &recordingPeer{entered: make(chan struct{}, 1), proceed: make(chan struct{})}
	callProbe(t, peer, `"progressToken":"t"`, func(ctx context.Context, req *HandlerRequest) {
		first := make(chan error, 1)
		go func() { first <- req.ReportProgress(ctx, Progress{Progress: 1}) }()
		waitFor(t, peer.entered, "the first report to reach the peer")
		second := func() error { return req.ReportProgress(ctx, Progress{Progress: 2}) }
		if err := returnsWithin(t, "the second report", second); !errors.Is(err, ErrProgressOutstanding) {
			t.Errorf("second report while the first is written: %v, want ErrProgressOutstanding", err)
		}
		close(peer.proceed)
		if err := waitFor(t, first, "the first report to return"); err != nil {
			t.Fatalf("first report: %v", err)
		}
		if err := req.ReportProgress(ctx, Progress{Progress: 2}); err != nil {
			t.Fatalf("report after the first was written: %v", err)
		}
	})
	got := peer.sentParams(t, "notifications/progress")
	if want := []string{`{"progressToken":"t","progress":1}`, `{"progressToken":"t","progress":2}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// Once a request has been answered, cancelled or timed out, its progress
// reports fail with ErrRequestEnded and nothing is written for them.
func TestReportProgressAfterRequestEnded(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// end ends request 1 and waits until the transport has seen it end.
		end func(t *testing.T, h *harness, finish chan<- struct{}, ctxDone <-chan struct{})
	}{
		{"answered", Options{}, func(t *testing.T, h *harness, finish chan<- struct{}, _ <-chan struct{}) {
			close(finish)
			if f := decodeFrame(t, h.next()); string(f.ID) != "1" || !strings.Contains(string(f.Result), `"text":"done"`) {
				t.Fatalf("response %+v", f)
			}
		}},
		{"cancelled", Options{}, func(t *testing.T, h *harness, _ chan<- struct{}, ctxDone <-chan struct{}) {
			h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			// The coordinator cancels the context and forgets the request in
			// one step, before it takes the next report.
			waitFor(t, ctxDone, "the handler's context to end")
		}},
		{"timed out", Options{RequestTimeout: 30 * time.Millisecond}, func(t *testing.T, h *harness, _ chan<- struct{}, _ <-chan struct{}) {
			want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Request execution timed out"}}` + "\n"
			if got := h.next(); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stashed := make(chan *HandlerRequest, 1)
			finish := make(chan struct{})
			ctxDone := make(chan struct{}, 1)
			rt := newTestRuntime(t, testOptions())
			mustAddTool(t, rt, Tool{Name: "stash"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				stashed <- req
				select {
				case <-finish:
					return TextResult("done"), nil
				case <-ctx.Done():
					ctxDone <- struct{}{}
					return nil, ctx.Err()
				}
			})
			h := startHarnessWith(t, tc.opts, rt)
			h.send(toolCall("1", "stash", meta2026With(`"progressToken":"p"`)))
			req := waitFor(t, stashed, "the handler to start")
			tc.end(t, h, finish, ctxDone)
			report := func() error { return req.ReportProgress(context.Background(), Progress{Progress: 1}) }
			if err := returnsWithin(t, "ReportProgress", report); !errors.Is(err, ErrRequestEnded) {
				t.Fatalf("ReportProgress after the request ended = %v, want ErrRequestEnded", err)
			}
			h.sync()
			h.noFramesLeft()
		})
	}
}
