package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goldenSessionID stands, in HTTP transcripts, for the id of the session the
// last successful initialize created: a request header of that value is
// replaced by the real id, and the real id in an answer by it.
const goldenSessionID = "{{session}}"

// goldenHTTPRequest is one line of an HTTP transcript: a request to the
// endpoint. The base headers of a client (Content-Type, Accept) are added
// unless header sets them; a header set to "" is removed.
type goldenHTTPRequest struct {
	Method string            `json:"method"`
	Header map[string]string `json:"header,omitempty"`
	Body   json.RawMessage   `json:"body,omitempty"`
}

// goldenHTTPAnswer is one line of an HTTP transcript's output: the answer's
// status, the headers that matter to a client, and its body: one JSON value,
// or the events of an SSE stream.
type goldenHTTPAnswer struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   json.RawMessage   `json:"body,omitempty"`
	Events []goldenSSEEvent  `json:"events,omitempty"`
}

type goldenSSEEvent struct {
	ID    string          `json:"id,omitempty"`
	Retry bool            `json:"retry,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// goldenHTTPHeaders are the answer headers a transcript records.
var goldenHTTPHeaders = []string{"Content-Type", headerSessionID, "Allow"}

// TestGoldenHTTPTranscripts sends each testdata/golden_http/NAME.jsonl, a
// request at a time, to the reference server's HTTP handler and compares
// every answer with NAME.out.jsonl line for line (go test -run
// TestGoldenHTTP -update rewrites them). The server is the golden stdio
// transcripts' one, mounted with NewHTTPHandler running one request at a
// time, so that the members of a batch answer in order. Each transcript runs
// twice: with the Runtime as the handler's dispatcher, and with it embedded
// in a type of another name, to which the handler gives every request
// header (HTTPHandler.messageHeader): the answers must not differ.
func TestGoldenHTTPTranscripts(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "golden_http", "*.jsonl"))
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
		t.Run(name, func(t *testing.T) {
			runGoldenHTTP(t, in, out, func(rt *Runtime) Dispatcher { return rt })
		})
		t.Run(name+"_embedded", func(t *testing.T) {
			if *updateGolden {
				t.Skip("the transcripts are written from the Runtime itself")
			}
			runGoldenHTTP(t, in, out, func(rt *Runtime) Dispatcher { return embeddedRuntime{rt} })
		})
	}
	if n == 0 {
		t.Fatal("no HTTP golden transcripts found")
	}
}

// embeddedRuntime is a Runtime behind a type of another name, as an
// application that wraps one would have it: the HTTP transport gives it
// every request header, as to any Dispatcher but the Runtime itself.
type embeddedRuntime struct{ *Runtime }

func runGoldenHTTP(t *testing.T, inPath, outPath string, dispatcher func(*Runtime) Dispatcher) {
	input, err := os.ReadFile(inPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHTTPHandler(dispatcher(newGoldenRuntime(t, registerReferenceCatalog)), HTTPOptions{MaxConcurrency: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { h.endStreams(); srv.Close(); h.Close() }()
	var out bytes.Buffer
	session := ""
	for line := range bytes.Lines(input) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var req goldenHTTPRequest
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("transcript line %s: %v", line, err)
		}
		answer, id := doGoldenHTTP(t, srv.URL+mcpPath, req, session)
		if id != "" {
			session = id
		}
		b, err := json.Marshal(answer)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	if *updateGolden {
		if err := os.WriteFile(outPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenHTTP -update to create it)", err)
	}
	compareGoldenLines(t, out.Bytes(), want)
}

// doGoldenHTTP sends req, with session standing for goldenSessionID, and
// returns the answer as recorded and the session id it names.
func doGoldenHTTP(t *testing.T, url string, req goldenHTTPRequest, session string) (goldenHTTPAnswer, string) {
	t.Helper()
	r, err := http.NewRequest(req.Method, url, bytes.NewReader(req.Body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range req.Header {
		switch {
		case v == "":
			r.Header.Del(k)
		case v == goldenSessionID:
			r.Header.Set(k, session)
		default:
			r.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer := goldenHTTPAnswer{Status: resp.StatusCode, Header: map[string]string{}}
	id := resp.Header.Get(headerSessionID)
	for _, name := range goldenHTTPHeaders {
		v := resp.Header.Get(name)
		if name == headerSessionID && v != "" {
			v = goldenSessionID
		}
		if v != "" {
			answer.Header[name] = v
		}
	}
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		answer.Events = readGoldenEvents(t, resp.Body)
		return answer, id
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		answer.Body = json.RawMessage(bytes.TrimSpace(body))
	}
	return answer, id
}

// readGoldenEvents reads an SSE stream to its end.
func readGoldenEvents(t *testing.T, body io.Reader) []goldenSSEEvent {
	t.Helper()
	var events []goldenSSEEvent
	var ev goldenSSEEvent
	seen := false
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && seen:
			events = append(events, ev)
			ev, seen = goldenSSEEvent{}, false
		case strings.HasPrefix(line, "id: "):
			ev.ID, seen = line[4:], true
		case strings.HasPrefix(line, "retry: "):
			ev.Retry, seen = true, true
		case strings.HasPrefix(line, "data: "):
			if data := line[6:]; data != "" {
				ev.Data = json.RawMessage(data)
			}
			seen = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// compareGoldenLines fails on the first line of got that differs from want.
func compareGoldenLines(t *testing.T, got, want []byte) {
	t.Helper()
	gotLines, wantLines := slices.Collect(bytes.Lines(got)), slices.Collect(bytes.Lines(want))
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w []byte
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("answer %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}
