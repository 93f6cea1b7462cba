package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultClockSkew is the leeway a JWTVerifier allows on exp, nbf and iat,
// for clocks that differ a little between the issuer and this server.
const DefaultClockSkew = 60 * time.Second

// maxJWTBytes bounds the tokens a JWTVerifier parses.
const maxJWTBytes = 16 << 10

// JWTVerifierOptions configure a JWTVerifier. A zero value means the
// default (see Unlimited for the rule every options struct follows).
type JWTVerifierOptions struct {
	// Issuer is the authorization server's issuer identifier: tokens' iss
	// must equal it exactly (a trailing slash makes another issuer). An
	// https URL (http on a loopback host only). Required.
	Issuer string
	// Resource is this server's canonical URI: tokens' aud must contain it
	// (RFC 8707, RFC 9068 §4). Required; the check cannot be turned off.
	Resource string
	// JWKSURL, when set, is where the issuer's keys are fetched; else it is
	// the jwks_uri of the issuer's metadata (RFC 8414, then OpenID Connect
	// Discovery). https only, http on a loopback host.
	JWKSURL string
	// ClockSkew is the leeway on exp, nbf and iat (default 60s; at most
	// 5 minutes).
	ClockSkew time.Duration
	// RefreshInterval is the least time between two fetches of the keys
	// (default DefaultJWKSRefreshInterval): a token naming a key that is
	// not held fetches them at most that often, so a rotated key is picked
	// up within it and a flood of unknown kids costs one fetch per interval.
	// At most 30 seconds.
	RefreshInterval time.Duration
	// MaxKeyAge is how long fetched keys are used before they are fetched
	// again in the background (default DefaultJWKSMaxAge).
	MaxKeyAge time.Duration
	// AcceptUntypedTokens also accepts tokens whose typ header is absent,
	// "JWT" or "application/jwt", for issuers that do not type their access
	// tokens; by default typ must be "at+jwt" (RFC 9068 §2.1), which keeps
	// the issuer's ID tokens and other JWTs from passing for access tokens.
	AcceptUntypedTokens bool
	// HTTPClient sends the requests to the issuer (default
	// http.DefaultClient; its redirects are checked all the same).
	// FetchTimeout bounds each (default 10s) and MaxResponseBytes the bytes
	// read of each answer (default 1 MiB).
	HTTPClient       *http.Client
	FetchTimeout     time.Duration
	MaxResponseBytes int
	// Logger receives the failures to fetch keys (nil: slog.Default()).
	Logger *slog.Logger
}

// JWTVerifier verifies JWT access tokens (RFC 9068) signed by one issuer
// with RS256, PS256, ES256 or EdDSA, with the issuer's published keys. It
// is a TokenVerifier; safe for concurrent use.
type JWTVerifier struct {
	issuer, resource string // read-only
	skew             time.Duration
	acceptUntyped    bool
	now              func() time.Time
	keys             keyCache
}

var _ TokenVerifier = (*JWTVerifier)(nil)

// normalize checks o and fills in the defaults.
func (o *JWTVerifierOptions) normalize() error {
	if err := checkIssuerURL(o.Issuer); err != nil {
		return fmt.Errorf("mcpstdio: JWTVerifierOptions.Issuer: %w", err)
	}
	if _, err := parseResourceURI(o.Resource); err != nil {
		return fmt.Errorf("mcpstdio: JWTVerifierOptions.Resource: %w", err)
	}
	if o.JWKSURL != "" {
		if u, err := url.Parse(o.JWKSURL); err != nil || u.Host == "" || checkSecureScheme(u) != nil {
			return fmt.Errorf("mcpstdio: JWTVerifierOptions.JWKSURL %q must be an https URL (http on a loopback host only)", o.JWKSURL)
		}
	}
	if err := checkOptions(
		checkAtMost("JWTVerifierOptions.RefreshInterval", o.RefreshInterval, 30*time.Second),
		checkOption("JWTVerifierOptions.MaxKeyAge", o.MaxKeyAge),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	if err := normalizeIssuerOptions("JWTVerifierOptions", &o.ClockSkew, &o.FetchTimeout, &o.MaxResponseBytes, &o.Logger); err != nil {
		return err
	}
	defaultTo(&o.RefreshInterval, DefaultJWKSRefreshInterval)
	defaultTo(&o.MaxKeyAge, DefaultJWKSMaxAge)
	return nil
}

// NewJWTVerifier validates opts and returns a verifier. It does not contact
// the issuer: the keys are fetched when the first token arrives.
func NewJWTVerifier(opts JWTVerifierOptions) (*JWTVerifier, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	v := &JWTVerifier{issuer: opts.Issuer, resource: opts.Resource, skew: opts.ClockSkew, acceptUntyped: opts.AcceptUntypedTokens, now: time.Now}
	client := newIssuerHTTP(opts.HTTPClient, opts.FetchTimeout, opts.MaxResponseBytes)
	jwksURL := opts.JWKSURL
	v.keys = keyCache{
		minInterval: opts.RefreshInterval,
		maxAge:      opts.MaxKeyAge,
		now:         func() time.Time { return v.now() },
		logger:      opts.Logger,
		// Runs in the cache's fetch goroutine, one at a time: jwksURL is
		// that goroutine's once discovered.
		fetch: func(ctx context.Context) ([]*verifyKey, error) {
			if jwksURL == "" {
				md, err := discoverIssuer(ctx, client, opts.Issuer)
				if err != nil {
					return nil, err
				}
				u, err := url.Parse(md.JWKSURI)
				if err != nil || u.Host == "" || checkSecureScheme(u) != nil {
					return nil, fmt.Errorf("the metadata of %s names the jwks_uri %q, not an https URL", opts.Issuer, md.JWKSURI)
				}
				jwksURL = md.JWKSURI
			}
			doc, err := client.get(ctx, jwksURL)
			if err != nil {
				return nil, err
			}
			return parseJWKS(doc)
		},
	}
	return v, nil
}

// jwtHeader is the JOSE header of a JWS, as far as it is read.
type jwtHeader struct {
	Alg  *string         `json:"alg"`
	Typ  *string         `json:"typ"`
	Kid  *string         `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// jwtClaims are the claims a JWTVerifier checks (RFC 9068 §2.2).
type jwtClaims struct {
	Iss      *string         `json:"iss"`
	Aud      json.RawMessage `json:"aud"`
	Exp      *float64        `json:"exp"`
	Nbf      *float64        `json:"nbf"`
	Iat      *float64        `json:"iat"`
	Sub      *string         `json:"sub"`
	ClientID *string         `json:"client_id"`
	Scope    *string         `json:"scope"`
	Cnf      json.RawMessage `json:"cnf"`
}

// Reasons a JWTVerifier refuses a token, as clients see them.
const (
	reasonMalformed   = "the access token is not a well-formed JWT"
	reasonAlgorithm   = "the access token's signing algorithm is not accepted"
	reasonType        = "the access token's typ is not at+jwt"
	reasonCritical    = "the access token has critical header parameters"
	reasonIssuer      = "the access token was issued by another issuer"
	reasonAudience    = "the access token is for another audience"
	reasonExpired     = "the access token has expired"
	reasonNotYetValid = "the access token is not valid yet"
	reasonNoSubject   = "the access token names neither a subject nor a client"
	reasonBound       = "the access token is bound to a key (cnf) in a way this server does not check"
	reasonNoKey       = "no key of the issuer verifies the access token"
	reasonSignature   = "the access token's signature is invalid"
)

// VerifyToken verifies token: a compact JWS whose header names an accepted
// algorithm (and typ at+jwt), whose claims name the issuer, this resource
// among its audiences, a subject or client, and a validity period that
// includes now (give or take the clock skew), and whose signature one of
// the issuer's keys for that algorithm verifies. A token with a cnf claim
// passes only when it is DPoP-bound (cnf holds jkt alone); the Principal's
// Claims keep cnf, which the HTTP handler's authorization checks against
// the request's DPoP proof (AuthOptions.DPoP). A token naming a key not
// held fetches the keys again (at most once per RefreshInterval); when the
// issuer cannot be reached the keys held are used. Every refusal is a
// *TokenError.
func (v *JWTVerifier) VerifyToken(ctx context.Context, token string) (*Principal, error) {
	if len(token) > maxJWTBytes {
		return nil, tokenError(reasonMalformed, errors.New("longer than 16 KiB"))
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, tokenError(reasonMalformed, errors.New("not three dot-separated parts"))
	}
	headerJSON, payload, sig := decodeB64URL(parts[0]), decodeB64URL(parts[1]), decodeB64URL(parts[2])
	if headerJSON == nil || payload == nil || sig == nil || !isStrictJSONObject(headerJSON) || !isStrictJSONObject(payload) {
		return nil, tokenError(reasonMalformed, errors.New("a part is not base64url of a JSON object"))
	}
	var h jwtHeader
	if err := json.Unmarshal(headerJSON, &h); err != nil || h.Alg == nil {
		return nil, tokenError(reasonMalformed, errors.New("the header's alg, typ or kid is missing or not a string"))
	}
	switch *h.Alg {
	case algRS256, algPS256, algES256, algEdDSA:
	default:
		return nil, tokenError(reasonAlgorithm, fmt.Errorf("alg %q", *h.Alg))
	}
	if h.Crit != nil {
		return nil, tokenError(reasonCritical, nil)
	}
	if !v.acceptedType(h.Typ) {
		return nil, tokenError(reasonType, nil)
	}
	p, err := v.checkClaims(payload)
	if err != nil {
		return nil, err
	}
	kid := ""
	if h.Kid != nil {
		kid = *h.Kid
	}
	keys, err := v.keys.keysFor(ctx, kid, *h.Alg)
	if err != nil {
		return nil, tokenError(reasonNoKey, err)
	}
	input := []byte(token[:len(parts[0])+1+len(parts[1])])
	for _, k := range keys {
		if k.verify(*h.Alg, input, sig) {
			return p, nil
		}
	}
	return nil, tokenError(reasonSignature, nil)
}

// acceptedType reports whether a header's typ is that of an access token.
func (v *JWTVerifier) acceptedType(typ *string) bool {
	if typ == nil {
		return v.acceptUntyped
	}
	t := strings.ToLower(*typ)
	switch t {
	case "at+jwt", "application/at+jwt":
		return true
	case "jwt", "application/jwt":
		return v.acceptUntyped
	}
	return false
}

// checkClaims checks the claims that do not need the signature, and
// returns the Principal they describe.
func (v *JWTVerifier) checkClaims(payload []byte) (*Principal, error) {
	var c jwtClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, tokenError(reasonMalformed, errors.New("a registered claim has the wrong type"))
	}
	if c.Iss == nil || *c.Iss != v.issuer {
		return nil, tokenError(reasonIssuer, nil)
	}
	if !audienceContains(c.Aud, v.resource) {
		return nil, tokenError(reasonAudience, nil)
	}
	now := v.now()
	if c.Exp == nil || !finite(*c.Exp) || !now.Before(unixTime(*c.Exp).Add(v.skew)) {
		return nil, tokenError(reasonExpired, nil)
	}
	if c.Nbf != nil && (!finite(*c.Nbf) || now.Add(v.skew).Before(unixTime(*c.Nbf))) {
		return nil, tokenError(reasonNotYetValid, nil)
	}
	if c.Iat != nil && (!finite(*c.Iat) || now.Add(v.skew).Before(unixTime(*c.Iat))) {
		return nil, tokenError(reasonNotYetValid, errors.New("issued in the future"))
	}
	if _, ok := dpopBinding(c.Cnf); !ok {
		return nil, tokenError(reasonBound, nil)
	}
	p := &Principal{Issuer: *c.Iss, ExpiresAt: unixTime(*c.Exp), Claims: bytes.Clone(payload)}
	if c.Sub != nil {
		p.Subject = *c.Sub
	}
	if c.ClientID != nil {
		p.ClientID = *c.ClientID
	}
	if p.ID() == "" {
		return nil, tokenError(reasonNoSubject, nil)
	}
	if c.Scope != nil {
		p.Scopes = strings.Fields(*c.Scope)
	}
	return p, nil
}

// audienceContains reports whether aud, a string or an array of strings
// (RFC 7519 §4.1.3), contains resource exactly.
func audienceContains(aud json.RawMessage, resource string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == resource
	}
	var many []string
	return json.Unmarshal(aud, &many) == nil && slices.Contains(many, resource)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1e15 }

// unixTime converts a NumericDate (seconds, possibly fractional).
func unixTime(secs float64) time.Time {
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(frac*1e9))
}
