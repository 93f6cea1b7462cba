package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files: the transcripts' .out.jsonl files (TestGolden*) and the documentation's generated blocks (TestDocs*, which go generate runs)")

// goldenSync is sent after every transcript line; its answer marks the end of
// that line's output and is left out of the transcript.
const goldenSync = `{"jsonrpc":"2.0","id":"golden-sync","method":"ping"}`

// goldenNextCursor, in a transcript line, stands for the nextCursor of the
// most recent result that carried one, so a transcript can follow pagination
// without spelling out the opaque cursor text.
const goldenNextCursor = "{{nextCursor}}"

// goldenAwaitPrefix starts a transcript line of its own, such as "{{await
// task-2 input_required 2}}": it waits until the task has that status (and,
// when a number follows, waits for that many questions), since the task's
// handler runs on its own, and it writes nothing.
const goldenAwaitPrefix = "{{await "

// goldenAwait runs an await line, reporting whether line is one.
func goldenAwait(t *testing.T, rt *Runtime, line string) bool {
	rest, found := strings.CutPrefix(line, goldenAwaitPrefix)
	if !found {
		return false
	}
	fields := strings.Fields(strings.TrimSuffix(rest, "}}"))
	if len(fields) < 2 {
		t.Fatalf("malformed await line %q", line)
	}
	questions := -1
	if len(fields) == 3 {
		fmt.Sscan(fields[2], &questions)
	}
	(&taskEnv{t: t, rt: rt}).await(fields[0], line, func(r *TaskRecord) bool {
		return r.Status == fields[1] && (questions < 0 || len(r.InputRequests) == questions)
	})
	return true
}

// goldenCursorKey replaces the runtime's random cursor key, so the cursors
// written in the transcripts are the same on every run.
const goldenCursorKey = "golden-transcripts-cursor-key-32"

// TestGoldenTranscripts feeds each testdata/golden/NAME.jsonl, a line at a
// time, to the reference server and compares every frame written with
// NAME.out.jsonl byte for byte. Work runs one request at a time and a ping
// follows each line, so the transcript is deterministic. The server is the
// reference server (runtime options as main.go sets them, and the reference
// catalog), except that its server info fills every optional field (so the
// per-version filtering of Implementation shows), it has instructions, page
// size 4 and a fixed cursor key. A transcript named shapes_* is served the
// shapes catalog (golden_shapes_test.go) instead of the reference catalog;
// one named skills_* is served the skills of testdata/skills besides it.
// Each transcript runs twice: over pipes, as the binary serves stdio, and
// over the in-memory transport, whose frames must be the same.
func TestGoldenTranscripts(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "golden", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, in := range inputs {
		if strings.HasSuffix(in, ".out.jsonl") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
		t.Run(name, func(t *testing.T) { runGolden(t, in, out, newPipeGoldenServer) })
		t.Run(name+"/memory", func(t *testing.T) { runGolden(t, in, out, newMemoryGoldenServer) })
	}
	if n == 0 {
		t.Fatal("no golden transcripts found")
	}
}

// goldenServer is a server of golden transcripts: write hands it a line,
// next returns the next frame it wrote (with its newline), end ends its
// input and returns Serve's result.
type goldenServer struct {
	write func(line string)
	next  func() (string, error)
	end   func() error
}

// newPipeGoldenServer serves rt over io.Pipes, one request at a time.
func newPipeGoldenServer(t *testing.T, rt *Runtime) goldenServer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), rt, Options{Input: inR, Output: outW, MaxConcurrency: 1, Logger: quietLogger()})
		outW.Close()
	}()
	frames := bufio.NewReader(outR)
	return goldenServer{
		write: func(line string) {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatal(err)
			}
		},
		next: func() (string, error) { return frames.ReadString('\n') },
		end: func() error {
			inW.Close()
			return <-done
		},
	}
}

// newMemoryGoldenServer serves rt over the in-memory transport, one request
// at a time.
func newMemoryGoldenServer(t *testing.T, rt *Runtime) goldenServer {
	c, done := startMemory(t, rt, Options{MaxConcurrency: 1})
	ctx := context.Background()
	return goldenServer{
		write: func(line string) {
			if err := c.Send(ctx, []byte(line)); err != nil {
				t.Fatal(err)
			}
		},
		next: func() (string, error) {
			m, err := c.Receive(ctx)
			return string(m) + "\n", err
		},
		end: func() error {
			c.Close()
			return <-done
		},
	}
}

func runGolden(t *testing.T, inPath, outPath string, newServer func(*testing.T, *Runtime) goldenServer) {
	input, err := os.ReadFile(inPath)
	if err != nil {
		t.Fatal(err)
	}
	register := registerReferenceCatalog
	switch base := filepath.Base(inPath); {
	case strings.HasPrefix(base, "shapes_"):
		register = registerShapesCatalog
	case strings.HasPrefix(base, "skills_"):
		register = registerSkillsGoldenCatalog // skills_golden_test.go
	}
	rt := newGoldenRuntime(t, register)
	srv := newServer(t, rt)
	var got bytes.Buffer
	var nextCursor string
	for i, line := range strings.SplitAfter(strings.TrimSuffix(string(input), "\n"), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if goldenAwait(t, rt, line) {
			continue
		}
		if strings.Contains(line, goldenNextCursor) {
			if nextCursor == "" {
				t.Fatalf("%s line %d uses %s before any result carried a nextCursor", inPath, i+1, goldenNextCursor)
			}
			line = strings.ReplaceAll(line, goldenNextCursor, nextCursor)
		}
		srv.write(line)
		srv.write(goldenSync)
		for {
			frame, err := srv.next()
			if err != nil {
				t.Fatalf("after %q: %v", line, err)
			}
			if frame == `{"jsonrpc":"2.0","id":"golden-sync","result":{}}`+"\n" {
				break
			}
			got.WriteString(frame)
			if cursor := frameNextCursor(frame); cursor != "" {
				nextCursor = cursor
			}
		}
	}
	if err := srv.end(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if *updateGolden {
		if err := os.WriteFile(outPath, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	compareGoldenLines(t, got.Bytes(), want)
}

// newGoldenRuntime is the server of the golden transcripts: the reference
// server (runtime options as main.go sets them, and the catalog register
// builds: the reference catalog, or for shapes_ transcripts the one that
// sets every field some protocol version leaves out),
// except that its server info fills every optional field (so the
// per-version filtering of Implementation shows), it has instructions, page
// size 4 and a fixed cursor key.
func newGoldenRuntime(t *testing.T, register func(*Runtime) error) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeOptions{
		ServerInfo: Implementation{
			Name: "mcpstdio", Title: "mcpstdio reference server", Version: serverVersion,
			Description: "Golden transcript server", WebsiteURL: "https://example.com/mcpstdio",
			Icons: []Icon{{Src: "https://example.com/mcpstdio.png", MIMEType: "image/png"}},
		},
		Instructions: "Use echo to test round trips.",
		PageSize:     4,
		// As the reference server (main.go's run) configures it.
		Logging:              true,
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true,
		ResourcesSubscribe:   true,
		Tasks:                TaskOptions{},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.cursors = cursorCodec{key: []byte(goldenCursorKey)}
	// Tasks get the IDs task-1, task-2, ... and a fixed clock.
	var taskIDs atomic.Int64
	clock := newFakeClock()
	managerOf(rt).newID = func() string { return fmt.Sprintf("task-%d", taskIDs.Add(1)) }
	managerOf(rt).now, managerOf(rt).store.(*memoryTaskStore).now = clock.Now, clock.Now
	if err := register(rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// frameNextCursor returns result.nextCursor of a response frame, "" when it
// has none.
func frameNextCursor(frame string) string {
	var response struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(frame), &response) != nil {
		return ""
	}
	return response.Result.NextCursor
}
