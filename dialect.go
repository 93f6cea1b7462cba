package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Protocol versions this package speaks. 2026-07-28 is stateless (every
// request carries its version in params._meta); the others negotiate a
// version once per connection with initialize. What each one defines, where
// they differ, is in dialect_versions.go.
const (
	ProtocolVersion20260728 = "2026-07-28"
	ProtocolVersion20251125 = "2025-11-25"
	ProtocolVersion20250618 = "2025-06-18"
	ProtocolVersion20250326 = "2025-03-26"
	ProtocolVersion20241105 = "2024-11-05"
)

// headerProtocolVersion is the request header, lower case, that carries the
// version an initialize-era connection negotiated. The coordinator
// synthesizes it on stdio; an HTTP request carries it itself.
const headerProtocolVersion = "mcp-protocol-version"

// Reserved _meta keys of the 2026-07-28 protocol.
const (
	metaKeyProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaKeyClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaKeyClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaKeyLogLevel           = "io.modelcontextprotocol/logLevel"
	metaKeyServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaKeyProgressToken      = "progressToken"
)

// maxProgressTokenBytes bounds a string progress token, as the transport
// bounds a tracked request id.
const maxProgressTokenBytes = 256

// defaultProtocolVersions is the enabled-version list used when the options
// name none, in preference order: every version this package speaks, newest
// first. The older ones cost a newer client nothing (initialize answers the
// version the client proposes), and a client pinned to one of them can
// connect at all.
func defaultProtocolVersions() []string {
	return []string{ProtocolVersion20260728, ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326, ProtocolVersion20241105}
}

func isKnownProtocolVersion(v string) bool { return dialectOf(v).known }

// isStatelessVersion reports whether v is served per request from _meta
// rather than negotiated with initialize.
func isStatelessVersion(v string) bool { return dialectOf(v).stateless }

// isLogLevel reports whether s is one of the eight syslog severities MCP uses.
func isLogLevel(s string) bool { return logLevelName([]byte(s)) != "" }

// logLevelName returns the MCP log level named name, "" for any other.
func logLevelName(name []byte) string {
	for _, level := range logLevels {
		if string(name) == level {
			return level
		}
	}
	return ""
}

// versionSet is the list of enabled protocol versions in preference order.
// It is validated by NewRuntime and never modified afterwards.
type versionSet []string

// validateVersions checks an enabled-version list: non-empty, known versions,
// no repeats.
func validateVersions(versions []string) error {
	if len(versions) == 0 {
		return fmt.Errorf("no protocol versions enabled")
	}
	for i, v := range versions {
		if !isKnownProtocolVersion(v) {
			return fmt.Errorf("unknown protocol version %q (known: %s)", v, strings.Join(defaultProtocolVersions(), ", "))
		}
		if slices.Contains(versions[:i], v) {
			return fmt.Errorf("protocol version %q listed twice", v)
		}
	}
	return nil
}

func (vs versionSet) enabled(v string) bool { return slices.Contains(vs, v) }

// firstLegacy returns the most preferred enabled initialize-era version that
// transport carries (see dialect.carriedBy), or "" when there is none.
func (vs versionSet) firstLegacy(transport string) string {
	for _, v := range vs {
		if d := dialectOf(v); !d.stateless && d.carriedBy(transport) {
			return v
		}
	}
	return ""
}

// negotiate answers an initialize that proposed version proposed and arrived
// on transport (Request.Transport): the proposal when it is an enabled legacy
// version that transport carries, otherwise the most preferred such version
// ("" when there is none), as the lifecycle's version negotiation says.
func (vs versionSet) negotiate(proposed, transport string) string {
	if d := dialectOf(proposed); vs.enabled(proposed) && !d.stateless && d.carriedBy(transport) {
		return proposed
	}
	return vs.firstLegacy(transport)
}

// era is how the version of one message is known.
type era int

const (
	// eraUnnegotiated: neither a 2026 _meta version nor a negotiated header;
	// only initialize and ping are served.
	eraUnnegotiated era = iota
	// eraLegacy: the connection negotiated an initialize-era version.
	eraLegacy
	// eraStateless: the request names a stateless version in its _meta.
	eraStateless
)

// dialectInfo is what dialect selection learned about one request. Every
// field is validated; raw JSON fields are nil when absent.
type dialectInfo struct {
	era     era
	version string // "" for eraUnnegotiated
	// meta is params._meta as sent (an object), nil when absent.
	meta               json.RawMessage
	clientInfo         json.RawMessage
	clientCapabilities json.RawMessage
	// progressToken is a string of at most 256 bytes or an int64 integer.
	progressToken json.RawMessage
	// logLevel is the 2026 per-request log level, "" when absent (always ""
	// in the legacy era, where logging/setLevel sets the level).
	logLevel string
}

// jsonObject is a valid JSON object's text, or nil for an empty one. Its
// members are looked up in place, without decoding the rest.
type jsonObject []byte

// lookup returns the raw value of member name.
func (o jsonObject) lookup(name string) (json.RawMessage, bool) {
	v, ok := lookupMember(o, name)
	return v, ok
}

// get returns the raw value of member name, nil when absent.
func (o jsonObject) get(name string) json.RawMessage {
	v, _ := lookupMember(o, name)
	return v
}

// paramsObject is a request's params: the object's text (nil when absent),
// and the members the pipeline reads, picked out in one scan (each nil when
// absent). Other members are found with get and lookup.
type paramsObject struct {
	jsonObject
	meta           json.RawMessage // _meta
	name           json.RawMessage
	arguments      json.RawMessage
	uri            json.RawMessage
	cursor         json.RawMessage
	requestState   json.RawMessage
	inputResponses json.RawMessage
}

// decodeParams checks the params of req, an object or absent, and picks out
// their members into p, a zero paramsObject that stays so when params are
// absent. Params the transport admitted were validated with their line (see
// admit) and are only scanned; a direct caller's are validated first (one
// linear pass, no allocation).
func decodeParams(req *Request, p *paramsObject) *RPCError {
	raw := req.Params
	if len(raw) == 0 {
		return nil
	}
	if !req.paramsValidated() {
		if env, err := decodeEnvelope(raw); err != nil || env.kind != kindObject {
			return invalidParams("Invalid params: params must be an object")
		}
	}
	p.scan(raw)
	return nil
}

// scan picks the members the pipeline reads out of raw, a valid JSON object,
// into p, a zero paramsObject, in one scan. A member named twice (impossible
// in validated input) is taken from its first occurrence, as lookupMember
// would.
func (p *paramsObject) scan(raw json.RawMessage) {
	p.jsonObject = jsonObject(raw)
	scanMembers(raw, p, nil)
}

// scanMembers stores each member of raw, a valid JSON object, in the field
// of p (or, when p is nil, of m) that slot names for its unescaped key, when
// there is one and it is still nil: a member named twice (impossible in
// validated input) is taken from its first occurrence, as lookupMember
// would. (Not a slot function as a parameter: the key, in a buffer on the
// stack, would escape to the heap through a call the compiler cannot see.)
func scanMembers(raw json.RawMessage, p *paramsObject, m *metaObject) {
	var buf [64]byte
	members := newMemberScanner(raw)
	for {
		key, escaped, value, ok := members.next()
		if !ok {
			return
		}
		var slot *json.RawMessage
		if key = unescapedKey(&buf, key, escaped); p != nil {
			slot = p.slot(key)
		} else {
			slot = m.slot(key)
		}
		if slot != nil && *slot == nil {
			*slot = value
		}
	}
}

// slot returns the field of p that holds the member named key, or nil when
// the pipeline does not read that member.
func (p *paramsObject) slot(key []byte) *json.RawMessage {
	switch string(key) {
	case "_meta":
		return &p.meta
	case "name":
		return &p.name
	case "arguments":
		return &p.arguments
	case "uri":
		return &p.uri
	case "cursor":
		return &p.cursor
	case "requestState":
		return &p.requestState
	case "inputResponses":
		return &p.inputResponses
	}
	return nil
}

// metaObject is the members of params._meta dialect selection reads, picked
// out in one scan; each is nil when absent.
type metaObject struct {
	protocolVersion    json.RawMessage
	clientCapabilities json.RawMessage
	clientInfo         json.RawMessage
	logLevel           json.RawMessage
	progressToken      json.RawMessage
}

// scan picks the reserved members out of raw, a valid JSON object, into m,
// a zero metaObject, as paramsObject.scan does.
func (m *metaObject) scan(raw json.RawMessage) { scanMembers(raw, nil, m) }

// slot returns the field of m that holds the member named key, or nil for
// any other member.
func (m *metaObject) slot(key []byte) *json.RawMessage {
	switch string(key) {
	case metaKeyProtocolVersion:
		return &m.protocolVersion
	case metaKeyClientCapabilities:
		return &m.clientCapabilities
	case metaKeyClientInfo:
		return &m.clientInfo
	case metaKeyLogLevel:
		return &m.logLevel
	case metaKeyProgressToken:
		return &m.progressToken
	}
	return nil
}

// resolve selects the dialect of req: a 2026 _meta version wins, then the
// negotiated-version header, else the request is unnegotiated. Errors are the
// exact JSON-RPC errors of docs/explanation/contract.md, "Dialects" (-32602 for
// malformed _meta, -32022 for a version that is unknown or not enabled).
func (vs versionSet) resolve(req *Request, params *paramsObject, info *dialectInfo) *RPCError {
	var meta metaObject
	if rerr := decodeMeta(params, &meta); rerr != nil {
		return rerr
	}
	info.meta = params.meta
	if meta.protocolVersion != nil {
		return vs.resolveStateless(info, &meta)
	}
	if rerr := readProgressToken(info, &meta); rerr != nil {
		return rerr
	}
	header := req.HeaderValue(headerProtocolVersion)
	switch {
	case header == "":
		info.era = eraUnnegotiated
	case isStatelessVersion(header) && vs.enabled(header):
		return missingMetaError(params.meta != nil)
	case !vs.enabled(header):
		return vs.unsupportedVersion(header)
	default:
		info.era = eraLegacy
		info.version = header
		info.clientInfo = req.Session.ClientInfo
		info.clientCapabilities = req.Session.ClientCapabilities
	}
	return nil
}

// resolveStateless validates the 2026 _meta fields in a fixed order: version
// (type, then support), clientCapabilities, clientInfo, progressToken,
// logLevel.
func (vs versionSet) resolveStateless(info *dialectInfo, meta *metaObject) *RPCError {
	version, ok := decodeVersion(meta.protocolVersion)
	if !ok {
		return invalidParams(fmt.Sprintf("Invalid _meta: %q must be a string", metaKeyProtocolVersion))
	}
	if !isStatelessVersion(version) || !vs.enabled(version) {
		return vs.unsupportedVersion(version)
	}
	info.era = eraStateless
	info.version = version

	caps := meta.clientCapabilities
	if caps == nil {
		return invalidParams(fmt.Sprintf("Missing _meta[%q]: a %s request must declare its client capabilities", metaKeyClientCapabilities, version))
	}
	if !isJSONObject(caps) {
		return invalidParams(fmt.Sprintf("Invalid _meta: %q must be an object", metaKeyClientCapabilities))
	}
	info.clientCapabilities = caps

	if ci := meta.clientInfo; ci != nil {
		if !isImplementation(ci) {
			return invalidParams(fmt.Sprintf("Invalid _meta: %q must be an object with string name and version", metaKeyClientInfo))
		}
		info.clientInfo = ci
	}
	if rerr := readProgressToken(info, meta); rerr != nil {
		return rerr
	}
	if raw := meta.logLevel; raw != nil {
		level, ok := decodeLogLevel(raw)
		if !ok {
			return invalidParams(fmt.Sprintf("Invalid _meta: %q must be one of debug, info, notice, warning, error, critical, alert, emergency", metaKeyLogLevel))
		}
		info.logLevel = level
	}
	return nil
}

// decodeVersion is decodeString for a protocol version: a known version sent
// without escapes comes back as its constant, without allocating.
func decodeVersion(raw []byte) (string, bool) {
	switch string(raw) {
	case `"` + ProtocolVersion20260728 + `"`:
		return ProtocolVersion20260728, true
	case `"` + ProtocolVersion20251125 + `"`:
		return ProtocolVersion20251125, true
	case `"` + ProtocolVersion20250618 + `"`:
		return ProtocolVersion20250618, true
	case `"` + ProtocolVersion20250326 + `"`:
		return ProtocolVersion20250326, true
	case `"` + ProtocolVersion20241105 + `"`:
		return ProtocolVersion20241105, true
	}
	return decodeString(raw)
}

// decodeLogLevel decodes a string that must be one of the eight MCP log
// levels; a level sent without escapes comes back without allocating.
func decodeLogLevel(raw []byte) (string, bool) {
	if isPlainASCIIString(raw) {
		if level := logLevelName(raw[1 : len(raw)-1]); level != "" {
			return level, true
		}
	}
	level, ok := decodeString(raw)
	return level, ok && isLogLevel(level)
}

// decodeMeta scans params._meta into meta, a zero metaObject that stays so
// when _meta is absent.
func decodeMeta(params *paramsObject, meta *metaObject) *RPCError {
	if params.meta == nil {
		return nil
	}
	if !isJSONObject(params.meta) {
		return invalidParams("Invalid _meta: must be an object")
	}
	meta.scan(params.meta)
	return nil
}

// readProgressToken validates _meta.progressToken, in every era: a string of
// at most 256 bytes or an integer in the signed 64-bit range.
func readProgressToken(info *dialectInfo, meta *metaObject) *RPCError {
	raw := meta.progressToken
	if raw == nil {
		return nil
	}
	if !isBoundedID(raw) {
		return invalidParams(fmt.Sprintf("Invalid _meta: progressToken must be a string of at most %d bytes or a 64-bit integer", maxProgressTokenBytes))
	}
	info.progressToken = raw
	return nil
}

// isBoundedID reports whether raw is a string of at most 256 bytes or an
// integer literal in the int64 range.
func isBoundedID(raw json.RawMessage) bool {
	if s, ok := decodeString(raw); ok {
		return len(s) <= maxProgressTokenBytes
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// missingMetaError is the -32602 for a request that is neither stateless nor
// part of a negotiated connection.
func missingMetaError(hasMeta bool) *RPCError {
	if hasMeta {
		return invalidParams(fmt.Sprintf("Missing _meta[%q]: requests without initialize must carry it", metaKeyProtocolVersion))
	}
	return invalidParams(fmt.Sprintf("Missing _meta: requests without initialize must carry params._meta[%q]", metaKeyProtocolVersion))
}

// unsupportedVersionData is the data of a -32022 error.
type unsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

func (vs versionSet) unsupportedVersion(requested string) *RPCError {
	return &RPCError{
		Code:    CodeUnsupportedVersion,
		Message: "Unsupported protocol version",
		Data:    unsupportedVersionData{Supported: slices.Clone(vs), Requested: requested},
	}
}

// isJSONObject reports whether raw, already known to be valid JSON, is an
// object.
func isJSONObject(raw json.RawMessage) bool {
	for _, b := range raw {
		if !isJSONSpace(b) {
			return b == '{'
		}
	}
	return false
}

// isImplementation reports whether raw, already known to be valid JSON, is
// an object with string name and version (the required fields of
// Implementation), exactly as decoding it with encoding/json would find them.
// It scans the members itself, leaving to encoding/json only an object with a
// key that matches one of the two case-insensitively (as encoding/json
// matches keys to fields: bytes.EqualFold) but not exactly.
func isImplementation(raw json.RawMessage) bool {
	if !isJSONObject(raw) {
		return false
	}
	var name, version []byte
	var buf [64]byte
	members := newMemberScanner(raw)
	for {
		key, escaped, value, ok := members.next()
		if !ok {
			return isStringToken(name) && isStringToken(version)
		}
		switch key := unescapedKey(&buf, key, escaped); {
		case string(key) == "name":
			name = value
		case string(key) == "version":
			version = value
		case bytes.EqualFold(key, []byte("name")) || bytes.EqualFold(key, []byte("version")):
			return decodesAsImplementation(raw)
		}
	}
}

// isStringToken reports whether raw, a valid JSON value or nil, is a string.
func isStringToken(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

// decodesAsImplementation is isImplementation through encoding/json.
func decodesAsImplementation(raw json.RawMessage) bool {
	var impl struct {
		Name    *string `json:"name"`
		Version *string `json:"version"`
	}
	return json.Unmarshal(raw, &impl) == nil && impl.Name != nil && impl.Version != nil
}
