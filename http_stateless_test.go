package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An Inline tool's handler that keeps its context and HandlerRequest past
// its return finds them as it left them, over HTTP too, where 2026 POSTs
// reuse their records (takePost, recyclePost): while later calls run, in
// records that may be the kept call's, and after them, the context is
// cancelled, the request's name and arguments (the body's bytes) are
// unchanged and its Peer has ended. Each round keeps one call and looks
// while the next one's handler runs: with the pool, most rounds reuse the
// kept call's record.
func TestHTTPInlineHandlerKeepsWhatItWasGiven(t *testing.T) {
	type keptCall struct {
		ctx context.Context
		req *HandlerRequest
	}
	kept := make(chan keptCall, 1)
	running, looked := make(chan struct{}, 1), make(chan struct{})
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}, Logging: true})
	err := rt.AddTool(Tool{Name: "keeper", Inline: true}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var args struct {
			N    int
			Keep bool
		}
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		if args.Keep {
			kept <- keptCall{ctx, req}
		} else {
			running <- struct{}{}
			<-looked
		}
		return &ToolResult{Content: []Content{TextContent("kept " + strconv.Itoa(args.N))}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	call := func(n int, keep bool) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tools/call","params":{"name":"keeper","arguments":{"N":` + strconv.Itoa(n) + `,"Keep":` + strconv.FormatBool(keep) + `},` + inlineMeta + `,"io.modelcontextprotocol/logLevel":"debug"}}}`
	}
	for round := range 8 {
		n := 2 * round
		if got := readBody(t, s.post(stateless("tools/call", "keeper"), call(n, true))); !strings.Contains(got, `"kept `+strconv.Itoa(n)+`"`) {
			t.Fatalf("round %d: the kept call answered %s", round, got)
		}
		first := <-kept
		want := `{"N":` + strconv.Itoa(n) + `,"Keep":true}`
		check := func(when string) {
			t.Helper()
			if err := first.ctx.Err(); !errors.Is(err, context.Canceled) {
				t.Errorf("round %d, %s: the kept context's Err is %v, want context.Canceled", round, when, err)
			}
			if got := string(first.req.Arguments); first.req.Name != "keeper" || got != want {
				t.Errorf("round %d, %s: the kept request is %s%s, want keeper%s", round, when, first.req.Name, got, want)
			}
			if err := first.req.Log(context.Background(), "info", "keeper", "late"); !errors.Is(err, ErrRequestEnded) {
				t.Errorf("round %d, %s: Log through the kept request: %v, want ErrRequestEnded", round, when, err)
			}
		}
		answer := s.postAsync(stateless("tools/call", "keeper"), call(n+1, false))
		<-running
		check("while the next call runs")
		looked <- struct{}{}
		if got := <-answer; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"kept `+strconv.Itoa(n+1)+`"`) {
			t.Fatalf("round %d: the next call answered %s", round, got)
		}
		check("after it")
	}
}

// recyclePost keeps a 2026 POST's record for a later POST, unless a worker,
// a listen stream or a handler may still hold it.
func TestRecyclePostKeepsOnlyRecordsNothingHolds(t *testing.T) {
	h, err := NewHTTPHandler(newTestRuntime(t, testOptions()), HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// taken reports whether the next takePost returns p (the pool may drop
	// a record; under the race detector it drops some on purpose).
	taken := func(p *statelessPost) bool { return h.takePost() == p }
	for _, tt := range []struct {
		name string
		mark func(p *statelessPost)
	}{
		{"a worker or a session holds it", func(p *statelessPost) { p.held = true }},
		{"it serves a listen stream", func(p *statelessPost) { p.keepAlive = make(chan time.Time) }},
		{"a handler has its HandlerRequest space", func(p *statelessPost) { p.exec.handlerSpace.claimed.Store(true) }},
	} {
		for range 20 {
			p := h.takePost()
			tt.mark(p)
			h.recyclePost(p)
			if taken(p) {
				t.Fatalf("the record was reused when %s", tt.name)
			}
		}
	}
	for range 100 {
		p := h.takePost()
		p.request, p.answered, p.exec.own = true, true, &p.exec
		h.recyclePost(p)
		if got := h.takePost(); got == p {
			if got.request || got.answered || got.exec.own != nil {
				t.Fatal("a reused record is not zero")
			}
			return
		}
	}
	t.Fatal("no record was reused in 100 POSTs")
}

// A 2026 POST's Inline answer is built in a buffer its record keeps for the
// next POST (statelessPost.lendFrame): answers of every length, longer and
// shorter than the one before, and one over the kept size, each come
// whole and alone.
func TestHTTPInlineAnswerFramesAreReusedWhole(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	for i, n := range []int{3000, 1, 100, 6000, 2, 3000, 0, 50} {
		text := strings.Repeat(string(rune('a'+i)), n)
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` + meta2026 + `}}`
		got := readBody(t, s.post(stateless("tools/call", "echo"), body))
		var answer struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(got), &answer); err != nil {
			t.Fatalf("answer %d (%d bytes of text) is not one JSON object: %v: %.200s", i, n, err, got)
		}
		if answer.ID != i || len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != text {
			t.Fatalf("answer %d: id %d, content %+v, want the %d-byte text back", i, answer.ID, answer.Result.Content, n)
		}
	}
}

// Once the handler is closing, a 2026 request is refused -32603 "Server
// shutting down" (500) and a 2026 notification is accepted and dropped
// (202, no body): a notification is never answered. (Found by
// FuzzHTTPSequence: a notification POSTed during Close was answered 500
// with an error.)
func TestHTTPStatelessNotificationWhileClosing(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	s.h.endStreams()
	notification := s.post(stateless("notifications/initialized", ""), `{"jsonrpc":"2.0","method":"notifications/initialized","params":{`+meta2026+`}}`)
	if body := readBody(t, notification); notification.StatusCode != http.StatusAccepted || body != "" {
		t.Errorf("a notification while closing: %d %q, want 202 and no body", notification.StatusCode, body)
	}
	request := s.post(stateless("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`)
	if body := readBody(t, request); request.StatusCode != http.StatusInternalServerError || !strings.Contains(body, `"id":1,"error":{"code":-32603,"message":"Server shutting down"}`) {
		t.Errorf("a request while closing: %d %s, want 500 Server shutting down", request.StatusCode, body)
	}
}
