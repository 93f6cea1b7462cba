package main

import "crypto/rand"

// newSessionID returns a cryptographically random id of visible ASCII
// characters for a connection: a stdio connection's (Request.SessionID) or
// an initialize-era HTTP session's (Mcp-Session-Id).
func newSessionID() string { return rand.Text() }
