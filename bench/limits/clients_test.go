package main

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpstdio/internal/cannedecho"
)

// wrongServerArg makes the test binary act as a stdio server that answers
// every request, under its id, with the wrong text.
const wrongServerArg = "wrong-echo-server"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == wrongServerArg {
		in, out := bufio.NewScanner(os.Stdin), bufio.NewWriter(os.Stdout)
		in.Buffer(nil, 4<<20)
		for in.Scan() {
			line := bytes.Replace(in.Bytes(), []byte(`"text":"`), []byte(`"text":"wrong`), 1)
			out.Write(cannedecho.AppendLine(nil, line))
			out.Flush()
		}
		return
	}
	os.Exit(m.Run())
}

// The programs of the checkout, built once for the tests that need them.
var (
	buildOnce sync.Once
	built     programs
	server    string
	buildErr  error
)

func buildPrograms(t *testing.T) (programs, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the server and the limit programs")
	}
	buildOnce.Do(func() {
		root, err := checkoutRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "limits-test-")
		if err != nil {
			buildErr = err
			return
		}
		buildErr = goBuild(root, dir, ".", "./bench/lineecho", "./bench/rawhttp")
		built = programs{lineecho: filepath.Join(dir, "lineecho"), rawhttp: filepath.Join(dir, "rawhttp")}
		server = filepath.Join(dir, "mcpstdio")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built, server
}

// Each row's client gets every answer right from both sides of its pair,
// the limit program and the server, with a small load of each shape.
func TestRowsRunAgainstBothSides(t *testing.T) {
	p, server := buildPrograms(t)
	for _, r := range limitRows() {
		small := shrink(r)
		for _, side := range []struct{ name, binary string }{{"limit", ""}, {"server", server}} {
			t.Run(r.name+"/"+side.name, func(t *testing.T) {
				m, err := small.run(p, side.binary)
				if err != nil {
					t.Fatal(err)
				}
				if m.rate <= 0 || m.p50 <= 0 || m.cpu <= 0 {
					t.Fatalf("no figures: %+v", m)
				}
			})
		}
	}
}

// shrink returns r with a load small enough for a test, of the same shape.
func shrink(r row) row {
	r.stdio.calls = 40
	if r.http != nil {
		small := *r.http
		small.clients, small.warmup, small.duration = min(small.clients, 4), 0, 50*time.Millisecond
		r.http = &small
	}
	return r
}

// A run fails when an answer does not carry its call's text: over stdio,
// and over HTTP.
func TestWrongAnswersFailTheRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runStdio([]string{self, wrongServerArg}, stdioLoad{calls: 10, window: 4, size: 100}, runTimeout); err == nil || !strings.Contains(err.Error(), "does not carry its text") {
		t.Errorf("a stdio run against a server with wrong texts: %v", err)
	}
	wrong := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		answer := cannedecho.AppendAnswer(nil, cannedecho.Scan(bytes.Replace(body.Bytes(), []byte(`"text":"`), []byte(`"text":"wrong`), 1)))
		w.Write(answer)
	})
	srv := httptest.NewServer(wrong)
	defer srv.Close()
	if _, _, err := drive(strings.TrimPrefix(srv.URL, "http://"), httpLoad{stateless: true, clients: 1, size: 100, duration: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "does not carry its text") {
		t.Errorf("an HTTP run against a server with wrong texts: %v", err)
	}
}

// A text carries its call's id: another call's text, or a cut one, is
// caught.
func TestTextsCheck(t *testing.T) {
	texts := newTexts(40)
	answer := func(id int) []byte {
		return append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`), texts.appendText(nil, id)...), `"}]}}`...)
	}
	if err := texts.check(answer(7), 7); err != nil {
		t.Errorf("the right text: %v", err)
	}
	if err := texts.check(answer(8), 7); err == nil {
		t.Error("another call's text passed")
	}
	if err := texts.check(bytes.Replace(answer(7), []byte(`"}]`), []byte(`x"}]`), 1), 7); err == nil {
		t.Error("a longer text passed")
	}
	if err := texts.check([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`), 7); err == nil {
		t.Error("an answer without a text passed")
	}
}

// answerID reads the numeric id of an answer, wherever its member is.
func TestAnswerID(t *testing.T) {
	tests := []struct {
		line string
		id   int
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":42,"result":{}}`, 42, true},
		{`{"result":{},"id":0}`, 0, true},
		{`{"jsonrpc":"2.0","result":{}}`, 0, false},
		{`{"jsonrpc":"2.0","id":"x","result":{}}`, 0, false},
	}
	for _, tt := range tests {
		if id, ok := answerID([]byte(tt.line)); id != tt.id || ok != tt.ok {
			t.Errorf("answerID(%s) = %d, %v; want %d, %v", tt.line, id, ok, tt.id, tt.ok)
		}
	}
}
