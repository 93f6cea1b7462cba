package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Protocol versions this package speaks. 2026-07-28 is stateless (every
// request carries its version in params._meta); the other two negotiate a
// version once per connection with initialize.
const (
	ProtocolVersion20260728 = "2026-07-28"
	ProtocolVersion20251125 = "2025-11-25"
	ProtocolVersion20250618 = "2025-06-18"
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
// name none, in preference order.
func defaultProtocolVersions() []string {
	return []string{ProtocolVersion20260728, ProtocolVersion20251125, ProtocolVersion20250618}
}

func isKnownProtocolVersion(v string) bool {
	switch v {
	case ProtocolVersion20260728, ProtocolVersion20251125, ProtocolVersion20250618:
		return true
	}
	return false
}

// isStatelessVersion reports whether v is served per request from _meta
// rather than negotiated with initialize.
func isStatelessVersion(v string) bool { return v == ProtocolVersion20260728 }

// isLogLevel reports whether s is one of the eight syslog severities MCP uses.
func isLogLevel(s string) bool {
	switch s {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
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

// firstLegacy returns the most preferred enabled initialize-era version, or
// "" when only stateless versions are enabled.
func (vs versionSet) firstLegacy() string {
	for _, v := range vs {
		if !isStatelessVersion(v) {
			return v
		}
	}
	return ""
}

// negotiate answers an initialize that proposed version proposed: the
// proposal when it is an enabled legacy version, otherwise the most preferred
// enabled legacy version ("" when there is none).
func (vs versionSet) negotiate(proposed string) string {
	if vs.enabled(proposed) && !isStatelessVersion(proposed) {
		return proposed
	}
	return vs.firstLegacy()
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

// paramsObject is a request's params.
type paramsObject = jsonObject

// decodeParams checks the params of a request, nil when absent. The
// transport has validated them already; a direct caller of Dispatch may not
// have, so they are validated again (one linear pass, no allocation).
func decodeParams(raw json.RawMessage) (paramsObject, *RPCError) {
	if len(raw) == 0 {
		return nil, nil
	}
	if env, err := decodeEnvelope(raw); err != nil || env.kind != kindObject {
		return nil, invalidParams("Invalid params: params must be an object")
	}
	return paramsObject(raw), nil
}

// resolve selects the dialect of req: a 2026 _meta version wins, then the
// negotiated-version header, else the request is unnegotiated. Errors are the
// exact JSON-RPC errors of SPEC §7.2 (-32602 for malformed _meta, -32022 for
// a version that is unknown or not enabled).
func (vs versionSet) resolve(req *Request, params paramsObject) (dialectInfo, *RPCError) {
	var info dialectInfo
	meta, rerr := decodeMeta(params)
	if rerr != nil {
		return info, rerr
	}
	info.meta = params.get("_meta")
	if _, ok := meta.lookup(metaKeyProtocolVersion); ok {
		return vs.resolveStateless(info, meta)
	}
	if rerr := readProgressToken(&info, meta); rerr != nil {
		return info, rerr
	}
	header := req.HeaderValue(headerProtocolVersion)
	switch {
	case header == "":
		info.era = eraUnnegotiated
	case isStatelessVersion(header) && vs.enabled(header):
		return info, missingMetaError(meta != nil)
	case !vs.enabled(header):
		return info, vs.unsupportedVersion(header)
	default:
		info.era = eraLegacy
		info.version = header
		info.clientInfo = req.Session.ClientInfo
		info.clientCapabilities = req.Session.ClientCapabilities
	}
	return info, nil
}

// resolveStateless validates the 2026 _meta fields in a fixed order: version
// (type, then support), clientCapabilities, clientInfo, progressToken,
// logLevel.
func (vs versionSet) resolveStateless(info dialectInfo, meta jsonObject) (dialectInfo, *RPCError) {
	version, ok := decodeString(meta.get(metaKeyProtocolVersion))
	if !ok {
		return info, invalidParams(fmt.Sprintf("Invalid _meta: %q must be a string", metaKeyProtocolVersion))
	}
	if !isStatelessVersion(version) || !vs.enabled(version) {
		return info, vs.unsupportedVersion(version)
	}
	info.era = eraStateless
	info.version = version

	caps, ok := meta.lookup(metaKeyClientCapabilities)
	if !ok {
		return info, invalidParams(fmt.Sprintf("Missing _meta[%q]: a %s request must declare its client capabilities", metaKeyClientCapabilities, version))
	}
	if !isJSONObject(caps) {
		return info, invalidParams(fmt.Sprintf("Invalid _meta: %q must be an object", metaKeyClientCapabilities))
	}
	info.clientCapabilities = caps

	if ci, ok := meta.lookup(metaKeyClientInfo); ok {
		if !isImplementation(ci) {
			return info, invalidParams(fmt.Sprintf("Invalid _meta: %q must be an object with string name and version", metaKeyClientInfo))
		}
		info.clientInfo = ci
	}
	if rerr := readProgressToken(&info, meta); rerr != nil {
		return info, rerr
	}
	if raw, ok := meta.lookup(metaKeyLogLevel); ok {
		level, ok := decodeString(raw)
		if !ok || !isLogLevel(level) {
			return info, invalidParams(fmt.Sprintf("Invalid _meta: %q must be one of debug, info, notice, warning, error, critical, alert, emergency", metaKeyLogLevel))
		}
		info.logLevel = level
	}
	return info, nil
}

// decodeMeta returns params._meta; nil when absent.
func decodeMeta(params paramsObject) (jsonObject, *RPCError) {
	raw, ok := params.lookup("_meta")
	if !ok {
		return nil, nil
	}
	if !isJSONObject(raw) {
		return nil, invalidParams("Invalid _meta: must be an object")
	}
	return jsonObject(raw), nil
}

// readProgressToken validates _meta.progressToken, in every era: a string of
// at most 256 bytes or an integer in the signed 64-bit range.
func readProgressToken(info *dialectInfo, meta jsonObject) *RPCError {
	raw, ok := meta.lookup(metaKeyProgressToken)
	if !ok {
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

// isImplementation reports whether raw is an object with string name and
// version (the required fields of Implementation).
func isImplementation(raw json.RawMessage) bool {
	if !isJSONObject(raw) {
		return false
	}
	var impl struct {
		Name    *string `json:"name"`
		Version *string `json:"version"`
	}
	return json.Unmarshal(raw, &impl) == nil && impl.Name != nil && impl.Version != nil
}

// resultEnvelope holds the fields a result carries besides its own: in the
// stateless dialect resultType and _meta serverInfo, and for cacheable
// results ttlMs and cacheScope. Embedded last in every result type, so these
// fields follow the method's own.
type resultEnvelope struct {
	ResultType string          `json:"resultType,omitempty"`
	TTLMs      *int64          `json:"ttlMs,omitempty"`
	CacheScope string          `json:"cacheScope,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// initializeResult is the legacy answer to initialize.
type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    serverCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// discoverResult is the 2026 answer to server/discover.
type discoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      serverCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	resultEnvelope
}

// emptyResult is the answer to ping.
type emptyResult struct{}

// readInitializeParams validates initialize's params (SPEC §7.1) and returns
// the proposed version.
func readInitializeParams(params paramsObject) (version string, caps, clientInfo json.RawMessage, rerr *RPCError) {
	version, ok := decodeString(params.get("protocolVersion"))
	if !ok {
		return "", nil, nil, invalidParams("Invalid params: initialize requires a string protocolVersion")
	}
	caps = params.get("capabilities")
	if !isJSONObject(caps) {
		return "", nil, nil, invalidParams("Invalid params: initialize requires a capabilities object")
	}
	clientInfo = params.get("clientInfo")
	if !isImplementation(clientInfo) {
		return "", nil, nil, invalidParams("Invalid params: initialize requires clientInfo with string name and version")
	}
	return version, caps, clientInfo, nil
}

// initialize answers the legacy handshake (SPEC §7.1). A repeated initialize
// renegotiates.
func (rt *Runtime) initialize(c *call) Reply {
	proposed, caps, clientInfo, rerr := readInitializeParams(c.params)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	version := rt.versions.negotiate(proposed)
	if version == "" {
		return Reply{Error: &RPCError{
			Code:    CodeInvalidParams,
			Message: fmt.Sprintf("Unsupported protocol version: this server does not support initialize; it serves %s with per-request params._meta", strings.Join(rt.versions, ", ")),
			Data:    unsupportedVersionData{Supported: rt.ProtocolVersions(), Requested: proposed},
		}}
	}
	reply := rt.resultReply(c, initializeResult{
		ProtocolVersion: version,
		Capabilities:    rt.capabilities(),
		ServerInfo:      rt.info.forVersion(version),
		Instructions:    rt.instructions,
	})
	if reply.Error == nil {
		reply.Initialized = &Session{ProtocolVersion: version, ClientInfo: clientInfo, ClientCapabilities: caps}
	}
	return reply
}

// discover answers 2026 server/discover.
func (rt *Runtime) discover(c *call) Reply {
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return discoverResult{
			SupportedVersions: rt.ProtocolVersions(),
			Capabilities:      rt.capabilities(),
			Instructions:      rt.instructions,
			resultEnvelope:    env,
		}
	})
}
