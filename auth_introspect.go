package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults of an IntrospectionVerifier.
const (
	// DefaultIntrospectionCacheTTL is how long an introspection's answer is
	// reused: a token revoked at the authorization server is refused
	// within it.
	DefaultIntrospectionCacheTTL = 5 * time.Second
	maxIntrospectionCacheTTL     = 10 * time.Second
	// DefaultIntrospectionCacheEntries bounds the answers kept.
	DefaultIntrospectionCacheEntries = 10000
	// DefaultMaxIntrospections bounds the introspection requests under way
	// at once; more wait for one to finish.
	DefaultMaxIntrospections = 16
)

// IntrospectionVerifierOptions configure an IntrospectionVerifier. A zero
// value means the default (see Unlimited for the rule every options struct
// follows).
type IntrospectionVerifierOptions struct {
	// Endpoint is the authorization server's token introspection endpoint
	// (RFC 7662): https, http on a loopback host only. Required.
	Endpoint string
	// ClientID and ClientSecret authenticate this server to it with HTTP
	// Basic (client_secret_basic, RFC 6749 §2.3.1). Required.
	ClientID, ClientSecret string
	// Issuer is the authorization server's issuer identifier: an answer
	// naming another iss is refused. Required.
	Issuer string
	// Resource is this server's canonical URI: the answer's aud must
	// contain it (an answer without aud is refused). Required.
	Resource string
	// CacheTTL is how long an answer is reused (default 5s, at most 10s, so
	// that a revoked token is refused within 10 seconds); an active token's
	// answer never outlives its exp. MaxCacheEntries bounds the answers
	// kept (default 10000; the oldest go first).
	CacheTTL        time.Duration
	MaxCacheEntries int
	// MaxConcurrent bounds the introspection requests under way at once
	// (default 16).
	MaxConcurrent int
	// ClockSkew is the leeway on the answer's exp and nbf (default 60s).
	ClockSkew time.Duration
	// HTTPClient, FetchTimeout, MaxResponseBytes and Logger are as in
	// JWTVerifierOptions.
	HTTPClient       *http.Client
	FetchTimeout     time.Duration
	MaxResponseBytes int
	Logger           *slog.Logger
}

// IntrospectionVerifier verifies opaque access tokens by asking the
// authorization server (RFC 7662), and caches its answers briefly. It is a
// TokenVerifier; safe for concurrent use.
type IntrospectionVerifier struct {
	endpoint, issuer, resource string // read-only
	authorization              string // the Basic credentials; read-only
	ttl, skew                  time.Duration
	client                     issuerHTTP
	slots                      chan struct{} // one per introspection under way
	logger                     *slog.Logger
	now                        func() time.Time

	cache introspectionCache
}

var _ TokenVerifier = (*IntrospectionVerifier)(nil)

// normalize checks o and fills in the defaults.
func (o *IntrospectionVerifierOptions) normalize() error {
	if u, err := url.Parse(o.Endpoint); err != nil || u.Host == "" || checkSecureScheme(u) != nil {
		return fmt.Errorf("mcpstdio: IntrospectionVerifierOptions.Endpoint %q must be an https URL (http on a loopback host only)", o.Endpoint)
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		return errors.New("mcpstdio: IntrospectionVerifierOptions.ClientID and ClientSecret are required")
	}
	if err := checkIssuerURL(o.Issuer); err != nil {
		return fmt.Errorf("mcpstdio: IntrospectionVerifierOptions.Issuer: %w", err)
	}
	if _, err := parseResourceURI(o.Resource); err != nil {
		return fmt.Errorf("mcpstdio: IntrospectionVerifierOptions.Resource: %w", err)
	}
	if err := checkOptions(
		checkAtMost("IntrospectionVerifierOptions.CacheTTL", o.CacheTTL, maxIntrospectionCacheTTL),
		checkOption("IntrospectionVerifierOptions.MaxCacheEntries", o.MaxCacheEntries),
		checkOption("IntrospectionVerifierOptions.MaxConcurrent", o.MaxConcurrent),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	if err := normalizeIssuerOptions("IntrospectionVerifierOptions", &o.ClockSkew, &o.FetchTimeout, &o.MaxResponseBytes, &o.Logger); err != nil {
		return err
	}
	defaultTo(&o.CacheTTL, DefaultIntrospectionCacheTTL)
	defaultTo(&o.MaxCacheEntries, DefaultIntrospectionCacheEntries)
	defaultTo(&o.MaxConcurrent, DefaultMaxIntrospections)
	return nil
}

// NewIntrospectionVerifier validates opts and returns a verifier. It does
// not contact the authorization server.
func NewIntrospectionVerifier(opts IntrospectionVerifierOptions) (*IntrospectionVerifier, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	req := &http.Request{Header: http.Header{}}
	req.SetBasicAuth(url.QueryEscape(opts.ClientID), url.QueryEscape(opts.ClientSecret))
	v := &IntrospectionVerifier{
		endpoint: opts.Endpoint, issuer: opts.Issuer, resource: opts.Resource,
		authorization: req.Header.Get("Authorization"),
		ttl:           opts.CacheTTL, skew: opts.ClockSkew,
		client: newIssuerHTTP(opts.HTTPClient, opts.FetchTimeout, opts.MaxResponseBytes),
		slots:  make(chan struct{}, opts.MaxConcurrent),
		logger: opts.Logger,
		now:    time.Now,
	}
	v.cache.init(opts.MaxCacheEntries)
	return v, nil
}

// Reasons an IntrospectionVerifier refuses a token, as clients see them
// (the others are the JWTVerifier's).
const (
	reasonInactive     = "the access token is not active"
	reasonUncheckable  = "the authorization server could not check the access token"
	reasonNotBearer    = "the access token is neither a bearer nor a DPoP-bound access token"
	reasonIntrospected = "the authorization server's answer about the access token is malformed"
)

// VerifyToken asks the authorization server about token (or reuses its
// answer of the last CacheTTL) and accepts it when the answer says active,
// names this resource among its audiences and the configured issuer, is
// within its validity period and names a subject or client. An answer with
// a cnf passes only when the token is DPoP-bound (cnf holds jkt alone, and
// a token_type, if any, is DPoP); the Principal's Claims keep it, for the
// HTTP handler's authorization to check against the request's DPoP proof
// (AuthOptions.DPoP). When the server cannot be asked, the token is
// refused (not cached), so that the next request asks again. Every
// refusal is a *TokenError.
func (v *IntrospectionVerifier) VerifyToken(ctx context.Context, token string) (*Principal, error) {
	key := sha256.Sum256([]byte(token))
	now := v.now()
	if p, reason, ok := v.cache.get(key, now); ok {
		if p == nil {
			return nil, tokenError(reason, nil)
		}
		return p, nil
	}
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, tokenError(reasonUncheckable, ctx.Err())
	}
	body, err := v.introspect(ctx, token)
	<-v.slots
	if err != nil {
		v.logger.Warn("mcpstdio: token introspection failed", "err", err)
		return nil, tokenError(reasonUncheckable, err)
	}
	now = v.now()
	p, reason := v.judge(body, now)
	expires := now.Add(v.ttl)
	if p != nil && !p.ExpiresAt.IsZero() && p.ExpiresAt.Before(expires) {
		expires = p.ExpiresAt
	}
	v.cache.put(key, p, reason, expires)
	if p == nil {
		return nil, tokenError(reason, nil)
	}
	return p, nil
}

// introspect asks the endpoint about token and returns its answer.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) ([]byte, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequest(http.MethodPost, v.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", v.authorization)
	return v.client.do(ctx, req)
}

// introspection is what an introspection answer is read for (RFC 7662 §2.2).
type introspection struct {
	Active    *bool           `json:"active"`
	TokenType *string         `json:"token_type"`
	Iss       *string         `json:"iss"`
	Aud       json.RawMessage `json:"aud"`
	Exp       *float64        `json:"exp"`
	Nbf       *float64        `json:"nbf"`
	Sub       *string         `json:"sub"`
	ClientID  *string         `json:"client_id"`
	Scope     *string         `json:"scope"`
	Cnf       json.RawMessage `json:"cnf"`
}

// judge returns the Principal of an answer that accepts the token, else
// nil and the reason.
func (v *IntrospectionVerifier) judge(body []byte, now time.Time) (*Principal, string) {
	var in introspection
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, reasonIntrospected
	}
	jkt, checkable := dpopBinding(in.Cnf)
	switch {
	case in.Active == nil || !*in.Active:
		return nil, reasonInactive
	case !checkable:
		return nil, reasonBound
	case in.TokenType != nil && !tokenTypeFits(*in.TokenType, jkt):
		return nil, reasonNotBearer
	case in.Iss != nil && *in.Iss != v.issuer:
		return nil, reasonIssuer
	case !audienceContains(in.Aud, v.resource):
		return nil, reasonAudience
	case in.Exp != nil && (!finite(*in.Exp) || !now.Before(unixTime(*in.Exp).Add(v.skew))):
		return nil, reasonExpired
	case in.Nbf != nil && (!finite(*in.Nbf) || now.Add(v.skew).Before(unixTime(*in.Nbf))):
		return nil, reasonNotYetValid
	}
	p := &Principal{Issuer: v.issuer, Claims: bytes.Clone(body)}
	if in.Sub != nil {
		p.Subject = *in.Sub
	}
	if in.ClientID != nil {
		p.ClientID = *in.ClientID
	}
	if in.Exp != nil {
		p.ExpiresAt = unixTime(*in.Exp)
	}
	if in.Scope != nil {
		p.Scopes = strings.Fields(*in.Scope)
	}
	if p.ID() == "" {
		return nil, reasonNoSubject
	}
	return p, ""
}

// tokenTypeFits reports whether an introspection answer's token_type fits
// the binding it names: Bearer without one, DPoP with a key's thumbprint
// (RFC 9449 §6.2).
func tokenTypeFits(tokenType, jkt string) bool {
	if jkt == "" {
		return strings.EqualFold(tokenType, authSchemeBearer)
	}
	return strings.EqualFold(tokenType, introspectionTypeDPoP)
}

// introspectionCache keeps introspection answers by the token's SHA-256 (the
// tokens themselves are not kept), at most max of them: beyond, the oldest
// goes. Safe for concurrent use.
type introspectionCache struct {
	max int // read-only after init

	mu      sync.Mutex
	entries map[[sha256.Size]byte]introspected
	order   [][sha256.Size]byte // the keys of entries, oldest first
}

// introspected is one cached answer: p, or nil and the reason of the
// refusal.
type introspected struct {
	p       *Principal
	reason  string
	expires time.Time
}

func (c *introspectionCache) init(maxEntries int) {
	c.max = maxEntries
	c.entries = make(map[[sha256.Size]byte]introspected)
}

// get returns the answer cached for key, unless it expired by now.
func (c *introspectionCache) get(key [sha256.Size]byte, now time.Time) (*Principal, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		return nil, "", false
	}
	return e.p, e.reason, true
}

// put caches an answer until expires, evicting the oldest beyond max.
func (c *introspectionCache) put(key [sha256.Size]byte, p *Principal, reason string, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = introspected{p: p, reason: reason, expires: expires}
	for len(c.entries) > c.max {
		oldest := c.order[0]
		c.order = c.order[1:]
		delete(c.entries, oldest)
	}
}
