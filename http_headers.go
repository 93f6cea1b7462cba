package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// The request metadata headers of 2026-07-28: MCP-Protocol-Version,
// Mcp-Method, Mcp-Name and a tool's Mcp-Param-{Name} headers mirror the body,
// and a request whose headers do not is refused 400 with -32020.

func headerMismatch(format string, a ...any) *RPCError {
	return &RPCError{Code: CodeHeaderMismatch, Message: "Header mismatch: " + fmt.Sprintf(format, a...)}
}

// A ToolSchemaSource is a Dispatcher that tells the HTTP transport the input
// schemas of its tools, whose x-mcp-header annotations name the arguments a
// 2026-07-28 client mirrors in Mcp-Param-{Name} headers, so that the
// transport checks them before it admits a tools/call. Runtime implements it;
// behind a Dispatcher that does not, Mcp-Param headers are not checked.
type ToolSchemaSource interface {
	// ToolInputSchema returns the input schema of the tool name, nil when
	// there is no such tool. It is called concurrently.
	ToolInputSchema(name string) json.RawMessage
}

// A paramHeaderCounter is a ToolSchemaSource that counts its tools whose
// schemas name an x-mcp-header (namesParamHeaders), so that while there are
// none a tools/call's schema is not looked up.
type paramHeaderCounter interface {
	paramHeaderTools() int
}

// checkMirroredHeaders validates the mirrored headers of a 2026 request
// against its body; the Mcp-Param headers of a tools/call when d is a
// ToolSchemaSource. header is the request's; a header's value is its first
// one, trimmed, as Request.Header holds it.
func checkMirroredHeaders(d Dispatcher, header http.Header, msg *postedMessage) *RPCError {
	if _, rerr := checkMirrored(header, httpHeaderProtocolVersion, headerProtocolVersion, msg.metaVersion, false); rerr != nil {
		return rerr
	}
	if rerr := checkMirroredString(header, headerMethod, headerMethod, msg.method, false); rerr != nil {
		return rerr
	}
	if mirroredMember(msg.method) == "" {
		return nil
	}
	raw := msg.mirrored
	if end, _, err := scanString(raw, 0); len(raw) < 2 || raw[0] != '"' || err != nil || end != len(raw) {
		return nil // not a string: the dispatcher refuses the params themselves
	}
	// name is the header's value, equal to the body's: the tool's name
	// without decoding (and allocating) it again.
	name, rerr := checkMirrored(header, headerName, headerName, raw, true)
	if rerr != nil {
		return rerr
	}
	if src, ok := d.(ToolSchemaSource); ok && msg.method == methodToolsCall {
		if c, ok := src.(paramHeaderCounter); ok && c.paramHeaderTools() == 0 {
			return nil
		}
		return checkParamHeaders(header, src.ToolInputSchema(name), msg.arguments)
	}
	return nil
}

// mirroredMember returns the params member of a request of method whose
// value the Mcp-Name header mirrors, "" when it has none.
func mirroredMember(method string) string {
	switch method {
	case methodToolsCall, methodPromptsGet:
		return "name"
	case methodResourcesRead:
		return "uri"
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		return "taskId"
	}
	return ""
}

// firstHeader is Header.Get for a key in net/http's canonical form, as the
// header constants are (TestHTTPHeaderKeysCanonical): the first value, ""
// when there is none, without canonicalizing key again.
func firstHeader(header http.Header, key string) string {
	if values := header[key]; len(values) > 0 {
		return values[0]
	}
	return ""
}

// requestHeaderValue returns the first value of the header key (in
// net/http's canonical form), trimmed, and whether the request carries it.
func requestHeaderValue(header http.Header, key string) (string, bool) {
	values := header[key]
	if len(values) == 0 {
		return "", false
	}
	return strings.TrimSpace(values[0]), true
}

// checkMirrored checks that the header key is present and equals the
// string whose JSON text is want (a want that is not a string counts as "");
// an encoded value (the =?base64?…?= sentinel) is decoded first when encoded
// is true. name is the header's name in error messages. A plain string is
// compared as it stands in the body, without being copied. It returns the
// header's (decoded) value, equal to the body's string when rerr is nil.
func checkMirrored(header http.Header, key, name string, want json.RawMessage, encoded bool) (string, *RPCError) {
	got, rerr := mirroredValue(header, key, name, encoded)
	if rerr != nil {
		return "", rerr
	}
	if content := plainStringContent(want); content != nil && string(content) == got {
		return got, nil
	}
	body, _ := decodeString(want)
	if got != body {
		return "", headerMismatch("%s header value %q does not match body value %q", name, got, body)
	}
	return got, nil
}

// checkMirroredString is checkMirrored for a body value already decoded.
func checkMirroredString(header http.Header, key, name, want string, encoded bool) *RPCError {
	got, rerr := mirroredValue(header, key, name, encoded)
	if rerr != nil {
		return rerr
	}
	if got != want {
		return headerMismatch("%s header value %q does not match body value %q", name, got, want)
	}
	return nil
}

// mirroredValue returns the value of the mirrored header key, decoded when
// encoded is true, or the -32020 error that refuses it: missing, invalid
// characters, invalid Base64.
func mirroredValue(header http.Header, key, name string, encoded bool) (string, *RPCError) {
	got, ok := requestHeaderValue(header, key)
	if !ok {
		return "", headerMismatch("required header %s is missing", name)
	}
	if !isHeaderValue(got) {
		return "", headerMismatch("%s header value has invalid characters", name)
	}
	if encoded {
		decoded, err := decodeHeaderValue(got)
		if err != nil {
			return "", headerMismatch("%s header value is not valid Base64", name)
		}
		got = decoded
	}
	return got, nil
}

// isHeaderValue reports whether v has only the characters a header value may
// carry unencoded: visible ASCII, space and tab.
func isHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// decodeHeaderValue decodes the Base64 sentinel form =?base64?…?=; any other
// value is literal.
func decodeHeaderValue(v string) (string, error) {
	const prefix, suffix = "=?base64?", "?="
	if len(v) < len(prefix)+len(suffix) || !strings.HasPrefix(v, prefix) || !strings.HasSuffix(v, suffix) {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v[len(prefix) : len(v)-len(suffix)])
	return string(b), err
}

// headerSchema is the part of a JSON Schema x-mcp-header annotations live
// in: properties reached through properties keys only.
type headerSchema struct {
	Properties map[string]headerSchema `json:"properties"`
	Header     *string                 `json:"x-mcp-header"`
}

// checkParamHeaders checks the Mcp-Param-{Name} headers of a tools/call: for
// every property the schema annotates with x-mcp-header whose value the
// arguments carry (not null), the header must be present and equal it.
func checkParamHeaders(header http.Header, schema, arguments json.RawMessage) *RPCError {
	if !namesParamHeaders(schema) {
		return nil
	}
	var root headerSchema
	if json.Unmarshal(schema, &root) != nil {
		return nil
	}
	var args any
	dec := json.NewDecoder(bytes.NewReader(arguments))
	dec.UseNumber()
	if len(arguments) == 0 || dec.Decode(&args) != nil {
		args = nil
	}
	return root.checkParams(header, args)
}

func (s headerSchema) checkParams(header http.Header, value any) *RPCError {
	obj, _ := value.(map[string]any)
	for name, prop := range s.Properties {
		v, present := obj[name]
		if !present || v == nil {
			continue
		}
		if prop.Header != nil {
			if rerr := checkParamHeader(header, *prop.Header, v); rerr != nil {
				return rerr
			}
		}
		if rerr := prop.checkParams(header, v); rerr != nil {
			return rerr
		}
	}
	return nil
}

// checkParamHeader checks the header Mcp-Param-{name} against v, a string,
// a boolean or an integer (compared numerically).
func checkParamHeader(header http.Header, name string, v any) *RPCError {
	full := headerParamPrefix + name
	decoded, rerr := mirroredValue(header, textproto.CanonicalMIMEHeaderKey(full), full, true)
	if rerr != nil {
		return rerr
	}
	var match bool
	switch v := v.(type) {
	case string:
		match = decoded == v
	case bool:
		match = decoded == strconv.FormatBool(v)
	case json.Number:
		want, err1 := strconv.ParseFloat(v.String(), 64)
		have, err2 := strconv.ParseFloat(decoded, 64)
		match = err1 == nil && err2 == nil && want == have
	default:
		return nil // not a primitive: the annotation is invalid, nothing to mirror
	}
	if !match {
		return headerMismatch("%s header value %q does not match the body", full, decoded)
	}
	return nil
}
