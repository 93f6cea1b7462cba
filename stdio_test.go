package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stdioChildEnv makes the test binary a server of its own standard input
// and output through ServeStdio (runStdioChild); the value is its
// WriteTimeout, in Go's duration syntax.
const stdioChildEnv = "MCPSTDIO_STDIO_CHILD"

// strayLine is what the stdio child's stray tool prints with fmt.Println
// while it serves.
const strayLine = "a stray line printed to os.Stdout"

// runStdioChild serves a runtime with two tools, echo ({"text"}: the same
// text) and stray (prints strayLine to os.Stdout, answers "printed"), with
// ServeStdio, again after each return caused by SIGTERM, until a return for
// another reason. After each return it reports on stderr what ServeStdio
// returned and whether SIGPIPE is still ignored, then prints "returned:
// ERR" to os.Stdout, which the stream's reader gets only if descriptor 1 is
// standard output again (unless a write timed out: the stream is full, and
// blocking again). It returns the process's exit status: 0 after a return
// of nil, 1 otherwise.
func runStdioChild(writeTimeout string) int {
	timeout, err := time.ParseDuration(writeTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, stdioChildEnv+":", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "stdio-child", Version: "1"}, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	textArg := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	err = errors.Join(
		rt.AddTool(Tool{Name: "echo", InputSchema: textArg}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return TextResult(args.Text), nil
		}),
		rt.AddTool(Tool{Name: "stray"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			fmt.Println(strayLine)
			return TextResult("printed"), nil
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := ServeStdio(ctx, rt, Options{WriteTimeout: timeout, Logger: logger})
		stop()
		fmt.Fprintf(os.Stderr, "ServeStdio returned: %v; SIGPIPE ignored after: %v\n", err, signal.Ignored(syscall.SIGPIPE))
		if !errors.Is(err, ErrWriteTimeout) {
			fmt.Printf("returned: %v\n", err)
		}
		if !errors.Is(err, context.Canceled) {
			if err != nil {
				return 1
			}
			return 0
		}
	}
}

// NewStdioTransport takes the process's streams itself: an Input or Output
// given to it is refused with an error that names the field, before
// anything in the process changes.
func TestNewStdioTransportRefusesInputAndOutput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"Input", Options{Input: strings.NewReader("")}, "Options.Input must be nil"},
		{"Output", Options{Output: &strings.Builder{}}, "Options.Output must be nil"},
		{"both", Options{Input: strings.NewReader(""), Output: &strings.Builder{}}, "Options.Input must be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewStdioTransport(newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}}), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("NewStdioTransport: %v, %v; want an error saying %q", tr, err, tc.field)
			}
			if err := ServeStdio(context.Background(), newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}}), tc.opts); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("ServeStdio: %v; want an error saying %q", err, tc.field)
			}
		})
	}
}
