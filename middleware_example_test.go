package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"
)

// region audit
// auditLog logs each message once the Runtime has served it: its method,
// the principal it speaks for, how long it took and its JSON-RPC error code
// (0 for none). now is the clock, time.Now in a server.
func auditLog(logger *slog.Logger, now func() time.Time) Middleware {
	return func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			start := now()
			reply := next.Dispatch(ctx, req)
			code := 0
			if reply.Error != nil {
				code = reply.Error.Code
			}
			logger.LogAttrs(ctx, slog.LevelInfo, "mcp request",
				slog.String("method", req.Method),
				slog.String("principal", PrincipalFromContext(ctx).ID()),
				slog.Duration("duration", now().Sub(start)),
				slog.Int("code", code))
			return reply
		})
	}
}

// endregion audit

// region ratelimit
// codeRateLimited is the error a request over its principal's rate is
// answered with: -32040 "Rate limit exceeded", data {"retryAfterMs": n}.
const codeRateLimited = -32040

// rateLimit gives each principal a bucket of burst requests that refills at
// perSecond. A request that finds its principal's bucket empty is answered
// codeRateLimited; notifications always pass, as nothing answers them. It
// keeps at most maxPrincipals buckets: a new principal beyond them makes it
// drop the full ones (a full bucket is a new one), and is refused when none
// is. now is the clock, time.Now in a server.
func rateLimit(perSecond float64, burst, maxPrincipals int, now func() time.Time) Middleware {
	type bucket struct {
		tokens float64
		at     time.Time // when tokens was counted
	}
	var mu sync.Mutex
	buckets := make(map[string]*bucket)
	refill := func(b *bucket, t time.Time) {
		b.tokens = min(float64(burst), b.tokens+t.Sub(b.at).Seconds()*perSecond)
		b.at = t
	}
	// take spends one of principal's tokens, or says how long until one.
	take := func(principal string) (wait time.Duration, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		b := buckets[principal]
		if b == nil && len(buckets) >= maxPrincipals {
			for id, other := range buckets {
				if refill(other, t); other.tokens == float64(burst) {
					delete(buckets, id)
				}
			}
			if len(buckets) >= maxPrincipals {
				return time.Second, false
			}
		}
		if b == nil {
			b = &bucket{tokens: float64(burst), at: t}
			buckets[principal] = b
		}
		if refill(b, t); b.tokens < 1 {
			return time.Duration((1 - b.tokens) / perSecond * float64(time.Second)), false
		}
		b.tokens--
		return 0, true
	}
	return func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			if req.ID == nil {
				return next.Dispatch(ctx, req)
			}
			if wait, ok := take(PrincipalFromContext(ctx).ID()); !ok {
				return Reply{Error: &RPCError{Code: codeRateLimited, Message: "Rate limit exceeded",
					Data: map[string]int64{"retryAfterMs": wait.Milliseconds()}}}
			}
			return next.Dispatch(ctx, req)
		})
	}
}

// endregion ratelimit

// An audit log of every request: its method, principal, duration and error
// code. The example's clock stands in for time.Now so that its output is
// fixed: the tool's work takes 250ms of it.
func ExampleRuntime_Use_auditLog() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "builds", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	clock := newFakeClock()
	rt.AddTool(Tool{Name: "build"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		clock.advance(250 * time.Millisecond)
		return TextResult("built"), nil
	})
	withoutTime := func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && groups == nil {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: withoutTime}))
	// region use
	rt.Use(auditLog(logger, clock.Now))
	// endregion use

	client, done := serveAs(rt, &Principal{Subject: "alice"})
	printToolCall(client, 1, "build")
	printToolCall(client, 2, "deploy")
	client.Close()
	<-done
	// Output:
	// level=INFO msg="mcp request" method=tools/call principal=alice duration=250ms code=0
	// 1: built
	// level=INFO msg="mcp request" method=tools/call principal=alice duration=0s code=-32602
	// 2: error -32602 Unknown tool: deploy
}

// A rate limit per principal: a bucket of two requests that refills at one a
// second. alice and bob are served on two connections of one Runtime; the
// example's clock stands in for time.Now so that its output is fixed.
func ExampleRuntime_Use_rateLimit() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "greeter", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	rt.AddTool(Tool{Name: "greet", Inline: true}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		return TextResult("hello " + req.Principal.ID()), nil
	})
	clock := newFakeClock()
	rt.Use(rateLimit(1, 2, 10000, clock.Now))

	alice, aliceDone := serveAs(rt, &Principal{Subject: "alice"})
	bob, bobDone := serveAs(rt, &Principal{Subject: "bob"})
	printToolCall(alice, 1, "greet")
	printToolCall(alice, 2, "greet")
	printToolCall(alice, 3, "greet")
	printToolCall(bob, 1, "greet")
	clock.advance(time.Second)
	printToolCall(alice, 4, "greet")
	alice.Close()
	bob.Close()
	<-aliceDone
	<-bobDone
	// Output:
	// 1: hello alice
	// 2: hello alice
	// 3: error -32040 Rate limit exceeded {"retryAfterMs":1000}
	// 1: hello bob
	// 4: hello alice
}

// serveAs serves rt to an in-memory client whose requests speak for p, as
// an application serving stdio for a known user does; done receives Serve's
// result once the client closed.
func serveAs(rt *Runtime, p *Principal) (client *MemoryClient, done <-chan error) {
	tr, client, err := NewMemoryTransport(rt, Options{})
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(ContextWithPrincipal(context.Background(), p)) }()
	return client, served
}

// printToolCall calls tool with request id id (2026-07-28) and prints the text of
// its result, or its error.
func printToolCall(client *MemoryClient, id int, tool string) {
	ctx := context.Background()
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, tool)
	if err := client.Send(ctx, []byte(call)); err != nil {
		log.Fatal(err)
	}
	answer, err := client.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var res struct {
		Result struct {
			Content []struct{ Text string }
		}
		Error *struct {
			Code    int
			Message string
			Data    json.RawMessage
		}
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		log.Fatal(err)
	}
	switch {
	case res.Error != nil:
		fmt.Printf("%d: error %d %s %s\n", id, res.Error.Code, res.Error.Message, res.Error.Data)
	case len(res.Result.Content) > 0:
		fmt.Printf("%d: %s\n", id, res.Result.Content[0].Text)
	}
}
