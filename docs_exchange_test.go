package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The exchanges the pages show (JSON-RPC lines over stdio, curl calls over
// HTTP) are run against the real command and must give the answers the
// pages show. A page marks them:
//
//   - `<!-- checked: stdio -->` before a shell block whose lines between
//     `go run . [ARGS] <<'EOF'` and `EOF` are sent to `go run . ARGS`;
//   - `<!-- checked: curl -->` before a shell block of curl commands sent,
//     in order, to `go run . -http ADDR [ARGS]` (ARGS from a `go run .` line
//     of the block); "$SESSION" stands for the Mcp-Session-Id the last
//     answer carried;
//   - `<!-- checked: answers -->` before the block of what comes back: for
//     stdio the lines written, for curl one line per command, its status and
//     its body.
//
// An exchange marked `<!-- checked: stdio hello -->` (or curl) runs
// examples/hello, the tutorial's server, instead (TestDocsTutorialServer).
// With -update (go generate) the answer blocks are rewritten with what the
// server answers.

// pageExchange is one checked exchange of a page.
type pageExchange struct {
	page, kind string // kind: "stdio" or "curl"
	program    string // "" for the reference command, "hello" for the tutorial's
	line       int
	script     []string // the block's lines
	answers    []string
	// answersAt is the index of the answers block's first line in the
	// page's lines, answersEnd of its closing fence.
	answersAt, answersEnd int
}

var checkedMarker = regexp.MustCompile(`^<!-- checked: (stdio|curl|answers)(?: (hello))? -->$`)

// pageExchanges returns the checked exchanges of page.
func pageExchanges(t *testing.T, page string) []pageExchange {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	block := func(i int) []string { // the fenced block after line i
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: a checked marker must be followed by a fenced block", page, i+1)
		}
		body := []string{}
		for j := i + 2; j < len(lines) && lines[j] != "```"; j++ {
			body = append(body, lines[j])
		}
		return body
	}
	var out []pageExchange
	for i, line := range lines {
		m := checkedMarker.FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[1] == "answers":
			if len(out) == 0 || out[len(out)-1].answers != nil {
				t.Fatalf("%s:%d: answers without the exchange they answer", page, i+1)
			}
			x := &out[len(out)-1]
			x.answers = block(i)
			x.answersAt, x.answersEnd = i+2, i+2+len(x.answers)
		default:
			out = append(out, pageExchange{page: page, kind: m[1], program: m[2], line: i + 1, script: block(i)})
		}
	}
	for _, x := range out {
		if x.answers == nil {
			t.Fatalf("%s:%d: an exchange without its answers", page, x.line)
		}
	}
	return out
}

// shellWords splits a shell command line into words: single and double
// quotes group (without expansion but of $SESSION, left as written), and a
// backslash before a newline joins lines.
func shellWords(s string) []string {
	s = strings.ReplaceAll(s, "\\\n", " ")
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				end = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// commandArgs returns the arguments of the `go run .` line of script
// (without -http and its address, a trailing & and a here-document).
func commandArgs(script []string) []string {
	for _, line := range script {
		rest, ok := strings.CutPrefix(line, "go run . ")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "<<")
		var args []string
		words := shellWords(strings.TrimSuffix(strings.TrimSpace(rest), "&"))
		for i := 0; i < len(words); i++ {
			if words[i] == "-http" {
				i++
				continue
			}
			args = append(args, words[i])
		}
		return args
	}
	return nil
}

// docsExchanges returns the checked exchanges of every page that run
// program.
func docsExchanges(t *testing.T, program string) []pageExchange {
	var all []pageExchange
	for _, page := range docPages(t) {
		for _, x := range pageExchanges(t, page) {
			if x.program == program {
				all = append(all, x)
			}
		}
	}
	if len(all) == 0 {
		t.Fatalf("no page has a checked exchange of %q", program)
	}
	return all
}

// TestDocsExchanges runs every checked exchange of the reference command
// and compares what comes back with the page.
func TestDocsExchanges(t *testing.T) {
	checkExchanges(t, docsExchanges(t, ""), func(t *testing.T, x pageExchange) []string {
		if x.kind == "stdio" {
			return runStdioExchange(t, x, serverBinary(t))
		}
		return runCurlExchange(t, x, startHTTPServer(t, commandArgs(x.script)...).base)
	})
}

// checkExchanges runs each exchange with run and compares its answers with
// the page's, or with -update writes them into the page.
func checkExchanges(t *testing.T, exchanges []pageExchange, run func(*testing.T, pageExchange) []string) {
	updates := map[string][]pageExchange{} // by page, in order
	for _, x := range exchanges {
		t.Run(fmt.Sprintf("%s:%d", x.page, x.line), func(t *testing.T) {
			got := run(t, x)
			if strings.Join(got, "\n") == strings.Join(x.answers, "\n") {
				return
			}
			if *updateGolden {
				x.answers = got
				updates[x.page] = append(updates[x.page], x)
				return
			}
			t.Errorf("%s:%d: the page's answers differ from the server's (run go generate):\npage:\n%s\nserver:\n%s", x.page, x.line,
				strings.Join(x.answers, "\n"), strings.Join(got, "\n"))
		})
	}
	for page, xs := range updates {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := len(xs) - 1; i >= 0; i-- { // from the end, so earlier indexes hold
			x := xs[i]
			lines = slices.Concat(lines[:x.answersAt], x.answers, lines[x.answersEnd:])
		}
		if err := os.WriteFile(page, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runStdioExchange sends the here-document of x to binary (run with the
// arguments of the script's `go run .` line) a line at a time, as a client
// that waits for each answer does, and returns the lines it wrote: after a
// request, every line up to its answer.
func runStdioExchange(t *testing.T, x pageExchange, binary string) []string {
	var input []string
	in := false
	for _, line := range x.script {
		switch {
		case strings.HasSuffix(line, "<<'EOF'"):
			in = true
		case line == "EOF":
			in = false
		case in:
			input = append(input, line)
		}
	}
	if len(input) == 0 {
		t.Fatal("the stdio exchange sends nothing (no here-document)")
	}
	cmd := exec.Command(binary, commandArgs(x.script)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stderr strings.Builder
	cmd.Stderr = lockedWriter{&mu, &stderr}
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return stderr.String()
	}
	startCommand(t, cmd)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	for _, line := range input {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		var msg struct {
			ID     json.RawMessage
			Method *string
		}
		if json.Unmarshal([]byte(line), &msg) != nil || msg.ID == nil || msg.Method == nil {
			continue // a notification: nothing to wait for
		}
		for answered := false; !answered; {
			select {
			case out, ok := <-lines:
				if !ok {
					t.Fatalf("the server ended before answering %s: %s", line, logged())
				}
				got = append(got, out)
				var answer struct {
					ID     json.RawMessage
					Method *string
				}
				answered = json.Unmarshal([]byte(out), &answer) == nil && answer.Method == nil && bytes.Equal(answer.ID, msg.ID)
			case <-time.After(safetyTimeout):
				t.Fatalf("no answer to %s: %s", line, logged())
			}
		}
	}
	stdin.Close()
	for out := range lines {
		got = append(got, out)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the server after end of input: %v: %s", err, logged())
	}
	return got
}

// runCurlExchange sends each curl command of x's script to the server at
// base (its scheme and host: "http://127.0.0.1:PORT"); it returns a line per
// command: the status and the body.
func runCurlExchange(t *testing.T, x pageExchange, base string) []string {
	var got []string
	session := ""
	for _, command := range curlCommands(x.script) {
		words := shellWords(command)
		method, body, url := "", "", ""
		header := http.Header{}
		for i := 1; i < len(words); i++ {
			switch w := words[i]; w {
			case "-H":
				i++
				name, value, _ := strings.Cut(words[i], ":")
				header.Add(name, strings.ReplaceAll(strings.TrimSpace(value), "$SESSION", session))
			case "-d":
				i++
				body = words[i]
			case "-X":
				i++
				method = words[i]
			case "-s", "-sS":
			default:
				if !strings.HasPrefix(w, "http://") {
					t.Fatalf("curl option %q is not understood by the test", w)
				}
				url = w
			}
		}
		if method == "" {
			method = http.MethodGet
			if body != "" {
				method = http.MethodPost
			}
		}
		url = regexp.MustCompile(`^http://[^/]+`).ReplaceAllString(url, base)
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		got = append(got, strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(answer))))
	}
	return got
}

// curlCommands returns the curl commands of a script, each with its
// continuation lines.
func curlCommands(script []string) []string {
	var cmds []string
	for i := 0; i < len(script); i++ {
		if !strings.HasPrefix(script[i], "curl ") {
			continue
		}
		cmd := script[i]
		for strings.HasSuffix(script[i], "\\") && i+1 < len(script) {
			i++
			cmd += "\n" + script[i]
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}
