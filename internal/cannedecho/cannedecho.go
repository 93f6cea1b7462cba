// Package cannedecho answers MCP echo calls without being an MCP server: a
// byte scan pulls the id, the method and the echo text out of a request (no
// JSON decoding), and a canned answer carries them back, the text copied
// byte for byte (a JSON string's contents are a valid encoding of
// themselves, so escapes and non-ASCII text come back as they went).
//
// It is the work of the limit programs, bench/lineecho over stdio and
// bench/rawhttp over HTTP, and of the baselines of the repository's own
// benchmarks: what any Go MCP server has to do at the least, and so how
// fast one can be on a machine.
//
// The scan is not a JSON parser: it takes the first "id" member, the first
// "method" member and, in a tools/call, the first "text" member after
// "arguments". That is exact for the flat requests benchmark clients send,
// which is what makes these programs limits and not servers to deploy.
package cannedecho

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
)

var (
	keyID        = []byte(`"id":`)
	keyMethod    = []byte(`"method":"`)
	keyArguments = []byte(`"arguments":`)
	keyText      = []byte(`"text":"`)
)

// The canned results of the methods a benchmark client calls besides
// tools/call.
const (
	initializeResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"cannedecho","version":"1.0.0"}}`
	toolsListResult  = `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`
	parseErrorLine   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
)

// Request holds the parts of a scanned message, slices of it. ID is the
// id's JSON text, nil for a notification; Method and Text are the contents
// of their strings, escapes kept.
type Request struct {
	ID, Method, Text []byte
}

// Scan scans one JSON-RPC message.
func Scan(msg []byte) Request {
	r := Request{ID: valueAfter(msg, keyID), Method: stringAfter(msg, keyMethod)}
	if string(r.Method) == "tools/call" {
		if i := bytes.Index(msg, keyArguments); i >= 0 {
			r.Text = stringAfter(msg[i:], keyText)
		}
	}
	return r
}

// AppendAnswer appends the answer to r, without a newline: for tools/call
// a text content with r's text, for initialize and tools/list canned
// results, for any other method an empty result.
func AppendAnswer(dst []byte, r Request) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, r.ID...)
	dst = append(dst, `,"result":`...)
	switch string(r.Method) {
	case "tools/call":
		dst = append(dst, `{"content":[{"type":"text","text":"`...)
		dst = append(dst, r.Text...)
		dst = append(dst, `"}]}`...)
	case "initialize":
		dst = append(dst, initializeResult...)
	case "tools/list":
		dst = append(dst, toolsListResult...)
	default:
		dst = append(dst, "{}"...)
	}
	return append(dst, '}')
}

// AppendLine appends what a stdio server writes for one input line (its
// line ending, if any, is ignored): the answer and a newline for a request,
// nothing for a notification or a blank line, and a parse error with id
// null for a line with neither an id nor a method.
func AppendLine(dst, line []byte) []byte {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return dst
	}
	r := Scan(line)
	switch {
	case r.ID != nil:
		return append(AppendAnswer(dst, r), '\n')
	case r.Method == nil:
		return append(dst, parseErrorLine...)
	}
	return dst
}

// readChunk is how much ServeLines asks of a Read; its buffer grows for a
// longer line.
const readChunk = 1 << 20

// ServeLines answers each line of in on out (AppendLine) until in ends,
// then returns nil, or until a read or a write fails, then returns that
// error. It reads 1 MiB at a time (more for a longer line) and writes the
// answers to the lines of one read in one write.
func ServeLines(in io.Reader, out io.Writer) error {
	buf := make([]byte, readChunk)
	var answers []byte
	// The unanswered input is buf[start:end], with no newline before
	// scanned: a long line's bytes are searched once, however many reads
	// bring them.
	start, scanned, end := 0, 0, 0
	for {
		if end == len(buf) {
			if start > 0 { // move the partial line to the front
				end = copy(buf, buf[start:end])
				scanned -= start
				start = 0
			} else { // a line longer than the buffer
				buf = append(buf, make([]byte, len(buf))...)
			}
		}
		n, rerr := in.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[scanned:end], '\n')
			if i < 0 {
				scanned = end
				break
			}
			answers = AppendLine(answers, buf[start:scanned+i])
			start = scanned + i + 1
			scanned = start
		}
		if start == end {
			start, scanned, end = 0, 0, 0
		}
		if rerr != nil && start < end { // a last line without a newline
			answers = AppendLine(answers, buf[start:end])
		}
		if len(answers) > 0 {
			if _, err := out.Write(answers); err != nil {
				return err
			}
			answers = answers[:0]
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// SessionID is the Mcp-Session-Id Handler answers an initialize with.
const SessionID = "cannedecho"

// MaxBody bounds the body of a POST Handler serves; a longer one is
// refused 413.
const MaxBody = 16 << 20

// Handler returns the HTTP handler of the canned answers: a POST's body is
// read whole, a request answered with its answer (AppendAnswer) as a JSON
// body (and an initialize with the Mcp-Session-Id SessionID), a
// notification or a response with 202. Nothing else is checked: no
// headers, no sessions, no schema. Any other method is refused 405.
func Handler() http.Handler {
	return &handler{buffers: sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}}
}

type handler struct {
	buffers sync.Pool // *[]byte: a POST's body, then its answer
}

var (
	jsonType  = []string{"application/json"}
	sessionID = []string{SessionID}
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	in, out := h.buffers.Get().(*[]byte), h.buffers.Get().(*[]byte)
	defer h.buffers.Put(in)
	defer h.buffers.Put(out)
	body, err := readBody((*in)[:0], r.Body)
	*in = body[:0]
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
		return
	}
	req := Scan(body)
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	header := w.Header()
	if string(req.Method) == "initialize" {
		header["Mcp-Session-Id"] = sessionID
	}
	answer := AppendAnswer((*out)[:0], req)
	*out = answer[:0]
	header["Content-Type"] = jsonType
	header["Content-Length"] = []string{strconv.Itoa(len(answer))}
	w.Write(answer)
}

var errTooLarge = errors.New("the body is longer than cannedecho.MaxBody")

// readBody appends the whole of body to dst.
func readBody(dst []byte, body io.Reader) ([]byte, error) {
	for {
		if len(dst) > MaxBody {
			return dst, errTooLarge
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)] // grow
		}
		n, err := body.Read(dst[len(dst):min(cap(dst), MaxBody+1)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) && len(dst) <= MaxBody {
			return dst, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return dst, err
		}
	}
}

// valueAfter returns the JSON value after the first key (which ends in
// ':'): a string with its quotes, else the bytes up to the next ',', '}',
// ']' or space. nil when key is missing or the value is empty.
func valueAfter(msg, key []byte) []byte {
	i := bytes.Index(msg, key)
	if i < 0 {
		return nil
	}
	v := bytes.TrimLeft(msg[i+len(key):], " \t")
	if len(v) > 0 && v[0] == '"' {
		if end := stringEnd(v[1:]); end >= 0 {
			return v[:end+2]
		}
		return nil
	}
	end := bytes.IndexAny(v, ",}] \t\r\n")
	if end < 0 {
		end = len(v)
	}
	if end == 0 {
		return nil
	}
	return v[:end]
}

// stringAfter returns the contents of the JSON string after the first key
// (which ends in the string's opening quote), nil when there is none.
func stringAfter(msg, key []byte) []byte {
	i := bytes.Index(msg, key)
	if i < 0 {
		return nil
	}
	s := msg[i+len(key):]
	if end := stringEnd(s); end >= 0 {
		return s[:end]
	}
	return nil
}

// stringEnd returns the index of the quote that ends a JSON string whose
// contents start at s[0] (the first quote after an even run of
// backslashes), -1 when there is none.
func stringEnd(s []byte) int {
	for from := 0; ; {
		q := bytes.IndexByte(s[from:], '"')
		if q < 0 {
			return -1
		}
		q += from
		backslashes := 0
		for backslashes < q && s[q-1-backslashes] == '\\' {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q
		}
		from = q + 1
	}
}
