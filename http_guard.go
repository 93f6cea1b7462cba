package main

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Request rules of the HTTP transport that look at headers only: repeated
// routing headers, and the media types an Accept header admits.

// repeatedRoutingHeader returns the name of a header that routes or
// authorizes a request (Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method,
// Mcp-Name, Mcp-Param-*) and appears more than once, "" when none does. The
// handler reads the first value of a header; an intermediary that reads the
// last would route or authorize another call, so such a request is refused.
func repeatedRoutingHeader(header http.Header) string {
	for name, values := range header {
		if len(values) > 1 && isRoutingHeader(name) {
			return name
		}
	}
	return ""
}

func isRoutingHeader(name string) bool {
	for _, routing := range []string{headerSessionID, headerProtocolVersion, headerMethod, headerName} {
		if strings.EqualFold(name, routing) {
			return true
		}
	}
	return len(name) > len(headerParamPrefix) && strings.EqualFold(name[:len(headerParamPrefix)], headerParamPrefix)
}

// refuseRepeatedRoutingHeader answers 400 with -32020 when a routing header
// is repeated, and reports whether it did.
func refuseRepeatedRoutingHeader(w http.ResponseWriter, r *http.Request) bool {
	name := repeatedRoutingHeader(r.Header)
	if name == "" {
		return false
	}
	writeJSONFrame(w, http.StatusBadRequest, errorFrame("", headerMismatch("the %s header appears more than once", name)))
	return true
}

// mediaTypes reports which of JSON and SSE an Accept header admits; a
// missing header admits both. Each type takes the quality of the most
// specific range that matches it (type/subtype, then type/*, then */*;
// among ranges as specific, the highest), and is admitted when that is
// above 0: "application/json;q=0, */*" admits SSE only. A range whose q is
// not a number from 0 to 1 is ignored.
func mediaTypes(accept []string) (json, sse bool) {
	if len(accept) == 0 || len(accept) == 1 && accept[0] == acceptJSONAndSSE {
		return true, true
	}
	var jsonQ, sseQ acceptQuality
	for _, line := range accept {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ",")
			mt, q, ok := parseMediaRange(strings.TrimSpace(part))
			if !ok {
				continue
			}
			jsonQ.consider(mt, "application/*", mediaTypeJSON, q)
			sseQ.consider(mt, "text/*", mediaTypeSSE, q)
		}
	}
	return jsonQ.q > 0, sseQ.q > 0
}

// parseMediaRange parses one range of an Accept header: its media type,
// lower case, and its quality (1 when it has no q parameter); false when it
// is malformed or its q is not a number from 0 to 1. The ranges MCP clients
// send, without parameters, are recognized without mime.ParseMediaType,
// which allocates, and with the same result.
func parseMediaRange(part string) (mt string, q float64, ok bool) {
	for _, known := range [...]string{mediaTypeJSON, mediaTypeSSE, "*/*"} {
		if strings.EqualFold(part, known) {
			return known, 1, true
		}
	}
	mt, params, err := mime.ParseMediaType(part)
	if err != nil {
		return "", 0, false
	}
	q = 1.0
	if v, ok := params["q"]; ok {
		if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
			return "", 0, false
		}
	}
	return mt, q, true
}

// Media types of the HTTP transport's bodies, and the Accept header MCP
// clients send for a POST, which mediaTypes recognizes without parsing it.
const (
	mediaTypeJSON    = "application/json"
	mediaTypeSSE     = "text/event-stream"
	acceptJSONAndSSE = mediaTypeJSON + ", " + mediaTypeSSE
)

// isJSONMediaType reports whether a Content-Type header value names
// application/json (any parameters). The plain value is recognized without
// mime.ParseMediaType, which allocates.
func isJSONMediaType(contentType string) bool {
	if strings.EqualFold(strings.TrimSpace(contentType), mediaTypeJSON) {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaTypeJSON
}

// acceptQuality is the quality an Accept header gives one media type: that
// of the most specific matching range seen so far.
type acceptQuality struct {
	specificity int // 0: no range matched; 1: */*; 2: type/*; 3: type/subtype
	q           float64
}

// consider takes the range mt (lower-case, as mime.ParseMediaType returns
// it) with quality q into account for the media type full, whose type/*
// range is anyOfType.
func (a *acceptQuality) consider(mt, anyOfType, full string, q float64) {
	specificity := 0
	switch mt {
	case "*/*":
		specificity = 1
	case anyOfType:
		specificity = 2
	case full:
		specificity = 3
	}
	switch {
	case specificity == 0 || specificity < a.specificity:
	case specificity > a.specificity:
		a.specificity, a.q = specificity, q
	default:
		a.q = max(a.q, q)
	}
}
