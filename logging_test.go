package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// startLoggingHarness serves a runtime with opts and the tool "logall", which
// logs one message at every level, least severe first, from logger "L" with
// the level's name as data.
func startLoggingHarness(t *testing.T, opts RuntimeOptions) *harness {
	t.Helper()
	opts.ServerInfo = Implementation{Name: "srv", Version: "1.0"}
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "logall"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		for _, level := range logLevels {
			if err := req.Log(ctx, level, "L", level); err != nil {
				return nil, err
			}
		}
		return TextResult("logged"), nil
	})
	return startHarnessWith(t, Options{}, rt)
}

// logStep is one request and what it must produce: the levels of the
// notifications/message lines before its response, and its response (exact
// frame, or a substring of it when wantResponse starts with "~").
type logStep struct {
	name         string
	line         string
	wantLevels   []string
	wantResponse string
}

func runLogSteps(t *testing.T, h *harness, steps []logStep) {
	t.Helper()
	for _, s := range steps {
		h.send(s.line)
		var levels []string
		for {
			raw := h.next()
			f := decodeFrame(t, raw)
			if f.isResponse() {
				if want, ok := strings.CutPrefix(s.wantResponse, "~"); ok && !strings.Contains(raw, want) || !ok && raw != s.wantResponse+"\n" {
					t.Fatalf("%s: response %s, want %s", s.name, raw, s.wantResponse)
				}
				break
			}
			var p struct{ Level, Logger, Data string }
			if f.Method != "notifications/message" || json.Unmarshal(f.Params, &p) != nil || p.Logger != "L" || p.Data != p.Level {
				t.Fatalf("%s: unexpected frame %s", s.name, raw)
			}
			levels = append(levels, p.Level)
		}
		if strings.Join(levels, ",") != strings.Join(s.wantLevels, ",") {
			t.Fatalf("%s: levels sent %v, want %v", s.name, levels, s.wantLevels)
		}
	}
}

func setLevel(id, level string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"logging/setLevel","params":{"level":"` + level + `"}}`
}

const badLevel = `{"code":-32602,"message":"Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency"}`

// Initialize era: nothing before logging/setLevel, then only messages at or
// above the level set; a bad level is refused and changes nothing. A 2026
// request on the same connection logs by its own _meta only.
func TestLoggingInitializeEra(t *testing.T) {
	h := startLoggingHarness(t, RuntimeOptions{Logging: true})
	h.initialize("2025-11-25")
	runLogSteps(t, h, []logStep{
		{"before setLevel", toolCall("1", "logall", ""), nil, `~"id":1,"result":{"content"`},
		{"setLevel warning", setLevel("2", "warning"), nil, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"at or above warning", toolCall("3", "logall", ""), logLevels[3:], `~"id":3,"result":{"content"`},
		{"unknown level", setLevel("4", "verbose"), nil, `{"jsonrpc":"2.0","id":4,"error":` + badLevel + `}`},
		{"level not a string", `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":3}}`, nil, `{"jsonrpc":"2.0","id":5,"error":` + badLevel + `}`},
		{"level missing", `{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{}}`, nil, `{"jsonrpc":"2.0","id":6,"error":` + badLevel + `}`},
		{"still warning", toolCall("7", "logall", ""), logLevels[3:], `~"id":7,"result":{"content"`},
		{"setLevel emergency", setLevel("8", "emergency"), nil, `{"jsonrpc":"2.0","id":8,"result":{}}`},
		{"emergency only", toolCall("9", "logall", ""), []string{"emergency"}, `~"id":9,"result":{"content"`},
		{"setLevel debug", setLevel("10", "debug"), nil, `{"jsonrpc":"2.0","id":10,"result":{}}`},
		{"everything", toolCall("11", "logall", ""), logLevels, `~"id":11,"result":{"content"`},
		{"2026 request without logLevel", toolCall("12", "logall", meta2026With("")), nil, `~"id":12,"result":{"content"`},
		{"2026 request with logLevel critical", toolCall("13", "logall", meta2026With(`"io.modelcontextprotocol/logLevel":"critical"`)), logLevels[5:], `~"id":13,"result":{"content"`},
	})
	h.noFramesLeft()
}

// The exact notifications/message frame.
func TestLogMessageFrame(t *testing.T) {
	h := startLoggingHarness(t, RuntimeOptions{Logging: true})
	h.initialize("2025-06-18")
	runLogSteps(t, h, []logStep{{"setLevel", setLevel("1", "emergency"), nil, `{"jsonrpc":"2.0","id":1,"result":{}}`}})
	h.send(toolCall("2", "logall", ""))
	want := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"emergency","logger":"L","data":"emergency"}}` + "\n"
	if got := h.next(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if f := decodeFrame(t, h.next()); string(f.ID) != "2" {
		t.Fatalf("want the response next, got %+v", f)
	}
	h.noFramesLeft()
}

// RuntimeOptions.DefaultLogLevel applies until the client sets a level.
func TestLoggingDefaultLevel(t *testing.T) {
	h := startLoggingHarness(t, RuntimeOptions{Logging: true, DefaultLogLevel: "error"})
	h.initialize("2025-11-25")
	runLogSteps(t, h, []logStep{
		{"default level before setLevel", toolCall("1", "logall", ""), logLevels[4:], `~"id":1,"result":{"content"`},
		{"setLevel alert", setLevel("2", "alert"), nil, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"the level set wins", toolCall("3", "logall", ""), logLevels[6:], `~"id":3,"result":{"content"`},
		{"2026 ignores the default", toolCall("4", "logall", meta2026With("")), nil, `~"id":4,"result":{"content"`},
	})
	h.noFramesLeft()
}

// Without RuntimeOptions.Logging there is no logging/setLevel, and without a
// level nothing is sent.
func TestSetLevelWithoutLoggingCapability(t *testing.T) {
	h := startLoggingHarness(t, RuntimeOptions{})
	h.initialize("2025-11-25")
	runLogSteps(t, h, []logStep{
		{"setLevel", setLevel("1", "debug"), nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: logging/setLevel"}}`},
		{"nothing sent", toolCall("2", "logall", ""), nil, `~"id":2,"result":{"content"`},
	})
	h.noFramesLeft()
}

// 2026-07-28: messages only for a request whose _meta names a level, only at
// or above it; logging/setLevel does not exist.
func TestLogging2026(t *testing.T) {
	h := startLoggingHarness(t, RuntimeOptions{Logging: true})
	logLevel := func(level string) string { return meta2026With(`"io.modelcontextprotocol/logLevel":"` + level + `"`) }
	runLogSteps(t, h, []logStep{
		{"no logLevel", toolCall("1", "logall", meta2026With("")), nil, `~"id":1,"result":{"content"`},
		{"debug", toolCall("2", "logall", logLevel("debug")), logLevels, `~"id":2,"result":{"content"`},
		{"notice", toolCall("3", "logall", logLevel("notice")), logLevels[2:], `~"id":3,"result":{"content"`},
		{"emergency", toolCall("4", "logall", logLevel("emergency")), []string{"emergency"}, `~"id":4,"result":{"content"`},
		{"the level is per request", toolCall("5", "logall", meta2026With("")), nil, `~"id":5,"result":{"content"`},
		{"bad logLevel", toolCall("6", "logall", logLevel("loud")), nil, `~"id":6,"error":{"code":-32602,"message":"Invalid _meta: \"io.modelcontextprotocol/logLevel\" must be one of`},
		{"no setLevel in 2026", `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug",` + meta2026With("") + `}}`, nil, `~"id":7,"error":{"code":-32601,`},
	})
	h.noFramesLeft()
}

// HandlerRequest.Logger: slog records become notifications/message, with
// slog levels mapped to MCP levels, the logger's name, and the message and
// attributes as the data object; records below the request's level are
// dropped.
func TestHandlerRequestLogger(t *testing.T) {
	tests := []struct {
		name  string
		level string
		log   func(ctx context.Context, l *slog.Logger)
		want  []string
	}{
		{"levels map", "debug", func(ctx context.Context, l *slog.Logger) {
			l.Debug("d")
			l.Info("i")
			l.Warn("w")
			l.Error("e")
			l.Log(ctx, slog.LevelDebug-4, "below debug")
			l.Log(ctx, slog.LevelInfo+2, "between info and warn")
			l.Log(ctx, slog.LevelError+4, "above error")
		}, []string{
			`{"level":"debug","logger":"app","data":{"msg":"d"}}`,
			`{"level":"info","logger":"app","data":{"msg":"i"}}`,
			`{"level":"warning","logger":"app","data":{"msg":"w"}}`,
			`{"level":"error","logger":"app","data":{"msg":"e"}}`,
			`{"level":"debug","logger":"app","data":{"msg":"below debug"}}`,
			`{"level":"info","logger":"app","data":{"msg":"between info and warn"}}`,
			`{"level":"error","logger":"app","data":{"msg":"above error"}}`,
		}},
		{"below the request's level dropped", "warning", func(ctx context.Context, l *slog.Logger) {
			l.Debug("d")
			l.Info("i")
			l.Warn("w")
			l.Error("e")
		}, []string{
			`{"level":"warning","logger":"app","data":{"msg":"w"}}`,
			`{"level":"error","logger":"app","data":{"msg":"e"}}`,
		}},
		{"no level: nothing", "", func(ctx context.Context, l *slog.Logger) { l.Error("e") }, nil},
		{"attributes", "info", func(ctx context.Context, l *slog.Logger) {
			l.Info("attrs", "s", "x", "n", 3, "ok", true)
			l.Error("failed", "err", errors.New("disk full"))
			l.Info("group attr", slog.Group("req", "id", 7, "path", "/a"))
		}, []string{
			`{"level":"info","logger":"app","data":{"msg":"attrs","n":3,"ok":true,"s":"x"}}`,
			`{"level":"error","logger":"app","data":{"err":"disk full","msg":"failed"}}`,
			`{"level":"info","logger":"app","data":{"msg":"group attr","req.id":7,"req.path":"/a"}}`,
		}},
		{"With and WithGroup", "info", func(ctx context.Context, l *slog.Logger) {
			l.With("a", 1).WithGroup("g").With("b", 2).WithGroup("h").Info("nested", "c", 3)
			l.WithGroup("g").WithGroup("").Info("empty group name", "d", 4)
			l.Info("empty attributes", slog.Attr{}, slog.Group("none"), slog.Group("", "inline", 5))
		}, []string{
			`{"level":"info","logger":"app","data":{"a":1,"g.b":2,"g.h.c":3,"msg":"nested"}}`,
			`{"level":"info","logger":"app","data":{"g.d":4,"msg":"empty group name"}}`,
			`{"level":"info","logger":"app","data":{"inline":5,"msg":"empty attributes"}}`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			peer := &recordingPeer{}
			meta := ""
			if tc.level != "" {
				meta = `"io.modelcontextprotocol/logLevel":"` + tc.level + `"`
			}
			callProbe(t, peer, meta, func(ctx context.Context, req *HandlerRequest) {
				tc.log(ctx, req.Logger(ctx, "app"))
			})
			got := peer.sentParams(t, "notifications/message")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// HandlerRequest.Log refuses a level MCP does not define.
func TestLogUnknownLevel(t *testing.T) {
	peer := &recordingPeer{}
	callProbe(t, peer, `"io.modelcontextprotocol/logLevel":"debug"`, func(ctx context.Context, req *HandlerRequest) {
		if err := req.Log(ctx, "verbose", "L", "x"); err == nil {
			t.Fatal("Log with an unknown level succeeded")
		}
	})
	if got := peer.sentParams(t, "notifications/message"); len(got) != 0 {
		t.Fatalf("sent %q", got)
	}
}
