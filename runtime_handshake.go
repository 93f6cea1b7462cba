package main

// The runtime's side of the handshakes: initialize (the initialize era's,
// once per connection) and server/discover (2026-07-28's description of the
// server), and the envelope fields every result carries. dialect.go decides
// which dialect a request is served in; these answer it.

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// readInitializeParams validates initialize's params
// (docs/explanation/contract.md, "Dialects") and returns the proposed version.
func readInitializeParams(params jsonObject) (version string, caps, clientInfo json.RawMessage, rerr *RPCError) {
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

// initialize answers the legacy handshake (docs/explanation/contract.md,
// "Dialects"). A repeated initialize renegotiates.
func (rt *Runtime) initialize(c *methodCall) Reply {
	proposed, caps, clientInfo, rerr := readInitializeParams(c.params.jsonObject)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	version := rt.versions.negotiate(proposed, c.req.Transport)
	if version == "" {
		message := fmt.Sprintf("Unsupported protocol version: this server does not support initialize; it serves %s with per-request params._meta", strings.Join(rt.versions, ", "))
		if rt.versions.firstLegacy("") != "" {
			message = "Unsupported protocol version: no initialize-era version this server enables is served over this transport"
		}
		return Reply{Error: &RPCError{
			Code:    CodeInvalidParams,
			Message: message,
			Data:    unsupportedVersionData{Supported: rt.ProtocolVersions(), Requested: proposed},
		}}
	}
	d := dialectOf(version)
	reply := rt.resultReply(c, initializeResult{
		ProtocolVersion: version,
		Capabilities:    d.capabilities(rt.capabilities()),
		ServerInfo:      d.implementation(rt.info),
		Instructions:    rt.instructions,
	})
	if reply.Error == nil {
		reply.Initialized = &Session{ProtocolVersion: version, ClientInfo: clientInfo, ClientCapabilities: caps}
	}
	return reply
}

// discover answers 2026 server/discover.
func (rt *Runtime) discover(c *methodCall) Reply {
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return discoverResult{
			SupportedVersions: rt.ProtocolVersions(),
			Capabilities:      rt.capabilities(),
			Instructions:      rt.instructions,
			resultEnvelope:    env,
		}
	})
}
