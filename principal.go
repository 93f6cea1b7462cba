package main

// Who a request speaks for. The core knows a principal as an identity that
// binds sessions, cursors and requestStates, that an AccessPolicy decides
// on, and that a handler reads (HandlerRequest.Principal). Whoever
// authenticates the request fills it in: the HTTP transport's authorization
// (auth*.go) from a bearer token, or an application serving stdio with
// ContextWithPrincipal on Serve's context.

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Principal is whom a request's access token speaks for: the resource owner
// (a user) or a client acting on its own behalf. Its fields are read-only.
type Principal struct {
	// Subject is the token's sub; "" when it has none (a client-credentials
	// token introspected, say).
	Subject string
	// ClientID is the token's client_id: the client it was issued to.
	ClientID string
	// Issuer is the authorization server that issued the token (iss).
	Issuer string
	// Scopes are the scopes the token grants, in the token's order.
	Scopes []string
	// ExpiresAt is when the token expires (exp); zero when unknown.
	ExpiresAt time.Time
	// Claims are all of the token's claims as a JSON object: a JWT's
	// payload, or an introspection response.
	Claims json.RawMessage
}

// ID names the principal: its Subject, else its ClientID ("" for a nil
// Principal). A session, cursor or requestState handed to one principal is
// refused to any other.
func (p *Principal) ID() string {
	if p == nil {
		return ""
	}
	if p.Subject != "" {
		return p.Subject
	}
	return p.ClientID
}

// HasScope reports whether the token grants scope (false for a nil
// Principal).
func (p *Principal) HasScope(scope string) bool { return p != nil && slices.Contains(p.Scopes, scope) }

// principalBinding is what a session, cursor or requestState is bound to:
// "" without a principal (no authorization), else the principal's ID marked
// as a subject or a client id, so that neither can pass for the other.
func principalBinding(p *Principal) string {
	switch {
	case p == nil:
		return ""
	case p.Subject != "":
		return "sub:" + p.Subject
	default:
		return "client:" + p.ClientID
	}
}

type principalContextKey struct{}

// ContextWithPrincipal returns a copy of ctx that carries p.
func ContextWithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalContextKey{}, p)
}

// PrincipalFromContext returns the Principal ctx carries, or nil. A
// handler's context carries the one its request's token was verified for.
func PrincipalFromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalContextKey{}).(*Principal)
	return p
}
