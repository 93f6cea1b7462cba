package main

// DPoP-bound access tokens (RFC 9449) at the resource server: with
// AuthOptions.DPoP, a request may (DPoPAllow) or must (DPoPRequire) send its
// token as "Authorization: DPoP <token>" with one DPoP proof, a JWT signed
// by the key the token is bound to (its cnf.jkt). The proof is checked
// (auth_dpop_proof.go) against the request, and remembered so that it
// passes once (auth_dpop_ledger.go); the server may also require nonces it
// issued in the proofs.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DPoPMode says whether an HTTPHandler's authorization takes DPoP-bound
// access tokens (AuthOptions.DPoP.Mode).
type DPoPMode int

const (
	// DPoPOff (the zero value): bearer tokens only. A DPoP-bound token (one
	// whose cnf names a key) is refused, as a token this server cannot
	// check; so is the DPoP scheme, as a request without a credential.
	DPoPOff DPoPMode = iota
	// DPoPAllow takes bearer tokens (with the Bearer scheme) and DPoP-bound
	// tokens (with the DPoP scheme and a proof); a DPoP-bound token sent as
	// Bearer is refused. Challenges offer both schemes.
	DPoPAllow
	// DPoPRequire takes DPoP-bound tokens only, with the DPoP scheme and a
	// proof; a Bearer credential is answered as no credential. The
	// metadata says dpop_bound_access_tokens_required.
	DPoPRequire
)

// String returns "off", "allow" or "require", as the -auth-dpop flag
// takes it.
func (m DPoPMode) String() string {
	switch m {
	case DPoPOff:
		return "off"
	case DPoPAllow:
		return "allow"
	case DPoPRequire:
		return "require"
	}
	return fmt.Sprintf("DPoPMode(%d)", int(m))
}

// Defaults and limits of DPoPOptions.
const (
	// DefaultDPoPProofWindow is how far a proof's iat may be from the
	// server's time, either way.
	DefaultDPoPProofWindow = 5 * time.Minute
	maxDPoPProofWindow     = 10 * time.Minute
	// DefaultDPoPMaxProofs bounds the proofs remembered against replay.
	DefaultDPoPMaxProofs = 100_000
	// minDPoPNonceKeyBytes is the least length of DPoPOptions.NonceKey.
	minDPoPNonceKeyBytes = 32
)

// dpopAlgorithms returns the JWS algorithms a proof may be signed with:
// those a verifyKey verifies (never "none", never an HMAC), in the order
// the metadata and challenges list them by default.
func dpopAlgorithms() []string { return []string{algES256, algEdDSA, algPS256, algRS256} }

// DPoPOptions turn on DPoP-bound access tokens (AuthOptions.DPoP). A zero
// value is DPoP off; every other zero field means its default.
type DPoPOptions struct {
	// Mode is DPoPOff (the zero value), DPoPAllow or DPoPRequire.
	Mode DPoPMode
	// Algorithms are those a proof may be signed with, among ES256, EdDSA,
	// PS256 and RS256 (default: all four, in that order). The metadata's
	// dpop_signing_alg_values_supported and the DPoP challenges' algs list
	// them.
	Algorithms []string
	// ProofWindow is how far a proof's iat may be from the server's time,
	// before or after it (default 5 minutes, at most 10). A proof is
	// remembered until its iat plus ProofWindow, when it would be refused
	// as too old anyway.
	ProofWindow time.Duration
	// MaxProofs bounds the proofs remembered against replay (default
	// DefaultDPoPMaxProofs, about 60 bytes each); MaxClientProofs bounds
	// those of one principal (0, the default: a quarter of MaxProofs;
	// Unlimited: all of MaxProofs). A proof that does not fit is refused
	// 503: a proof is never forgotten before it expires, which would let it
	// be replayed. A principal sending more than MaxClientProofs requests
	// per ProofWindow is refused some of them. Unlike MaxClientSessions,
	// whose sessions can be taken back, the share binds even while the
	// ledger has room: a remembered proof cannot be given up, so a share
	// of the whole would let one principal lock every other out for a
	// ProofWindow.
	MaxProofs       int
	MaxClientProofs int
	// NonceKey, when set (at least 32 bytes), makes every proof carry a
	// nonce this server issued (RFC 9449 §9) less than ProofWindow ago: a
	// proof without one is refused 401 use_dpop_nonce, and every answer of
	// the MCP endpoint carries the current nonce in its DPoP-Nonce header
	// (a new one every 10 seconds). A nonce is the time signed with the
	// key: servers sharing the key accept each other's nonces, and none
	// needs to be remembered.
	NonceKey []byte
}

// Wire names of RFC 9449.
const (
	authSchemeDPoP         = "DPoP"
	headerDPoP             = "DPoP"
	headerDPoPNonce        = "DPoP-Nonce"
	errorCodeInvalidDPoP   = "invalid_dpop_proof"
	errorCodeUseDPoPNonce  = "use_dpop_nonce"
	introspectionTypeDPoP  = "DPoP"
	confirmationThumbprint = "jkt"
)

// Reasons the gate refuses a token for its binding, as clients see them.
const (
	reasonBoundAsBearer = "the access token is DPoP-bound: send it with the DPoP scheme and a DPoP proof"
	reasonNotBound      = "the access token is not DPoP-bound, so no DPoP proof can be checked against it"
	reasonOtherKey      = "the access token is bound to another key than the DPoP proof's"
	reasonDPoPOnly      = "this server accepts DPoP-bound access tokens only, with the DPoP scheme and a DPoP proof"
	// The messages of a proof that does not fit in the ledger (503).
	reasonProofsFull       = "the server holds as many recent DPoP proofs as it may; retry later"
	reasonClientProofsFull = "this principal sent as many DPoP proofs as it may within the proof window; retry later"
)

// dpopGate is the DPoP part of an authGate, built by newDPoPGate;
// read-only afterwards but for the ledger (safe for concurrent use).
type dpopGate struct {
	mode      DPoPMode
	algs      []string
	algsParam string // the challenges' algs parameter, quoted
	window    time.Duration
	ledger    *proofLedger
	nonceKey  []byte           // nil without nonces
	origin    string           // the resource's scheme://host: htu's origin but behind a proxy
	forwarded forwardedOrigin  // nil: no proxy is trusted
	now       func() time.Time // the server's clock
}

// forwardedOrigin returns the scheme and host a request was addressed to
// as a trusted reverse proxy reports them (Forwarded proto= and host=),
// "" for each it does not report.
type forwardedOrigin func(r *http.Request) (scheme, host string)

// newDPoPGate validates opts and returns the gate's DPoP part, nil when
// opts.Mode is DPoPOff. resource is the checked AuthOptions.Resource.
func newDPoPGate(opts DPoPOptions, resource *url.URL, forwarded forwardedOrigin) (*dpopGate, error) {
	if err := opts.check("HTTPOptions.Auth.DPoP."); err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
	}
	if opts.Mode == DPoPOff {
		return nil, nil
	}
	algs := opts.Algorithms
	if algs == nil {
		algs = dpopAlgorithms()
	}
	defaultTo(&opts.ProofWindow, DefaultDPoPProofWindow)
	defaultTo(&opts.MaxProofs, DefaultDPoPMaxProofs)
	return &dpopGate{
		mode:      opts.Mode,
		algs:      slices.Clone(algs),
		algsParam: quoteAuthParam(strings.Join(algs, " ")),
		window:    opts.ProofWindow,
		ledger:    newProofLedger(opts.MaxProofs, proofShare(opts.MaxClientProofs, opts.MaxProofs)),
		nonceKey:  slices.Clone(opts.NonceKey),
		origin:    resource.Scheme + "://" + resource.Host,
		forwarded: forwarded,
		now:       time.Now,
	}, nil
}

// checkProof checks the DPoP proof of r, which sends token with the DPoP
// scheme: exactly one DPoP header, holding a proof that parses, matches r
// (method, URL, time, the token's hash), is signed by its jwk and, with
// nonces, carries a recent one. It returns the proof, or the refusal to
// answer.
func (d *dpopGate) checkProof(r *http.Request, token string) (*dpopProof, *authRefusal) {
	values := r.Header.Values(headerDPoP)
	switch {
	case len(values) == 0:
		return nil, d.invalidProof(reasonProofMissing)
	case len(values) > 1:
		return nil, d.invalidProof(reasonProofRepeated)
	}
	proof, reason := parseDPoPProof(values[0], d.algs)
	if reason != "" {
		return nil, d.invalidProof(reason)
	}
	now := d.now()
	if reason := proof.matches(proofTarget{method: r.Method, uri: d.targetURI(r), token: token, now: now, window: d.window}); reason != "" {
		return nil, d.invalidProof(reason)
	}
	if !proof.signed() {
		return nil, d.invalidProof(reasonProofSignature)
	}
	if d.nonceKey != nil && !d.nonceValid(proof.nonce, now) {
		return nil, &authRefusal{status: http.StatusUnauthorized, scheme: authSchemeDPoP, code: errorCodeUseDPoPNonce, reason: reasonProofNonce}
	}
	return proof, nil
}

func (d *dpopGate) invalidProof(reason string) *authRefusal {
	return &authRefusal{status: http.StatusUnauthorized, scheme: authSchemeDPoP, code: errorCodeInvalidDPoP, reason: reason}
}

// targetURI is the URL r was addressed to, without its query: the
// resource's origin (or, from a trusted proxy, the scheme and host its
// Forwarded header reports) and the path of r as it came (its RequestURI,
// which a handler mounted under http.StripPrefix still has whole).
func (d *dpopGate) targetURI(r *http.Request) string {
	origin := d.origin
	if d.forwarded != nil {
		if scheme, host := d.forwarded(r); host != "" {
			if scheme == "" {
				scheme, _, _ = strings.Cut(d.origin, ":")
			}
			origin = scheme + "://" + host
		}
	}
	path := r.URL.EscapedPath()
	if sent, err := url.ParseRequestURI(r.RequestURI); err == nil && sent.Path != "" {
		path = sent.EscapedPath()
	}
	return origin + path
}

// remember records an accepted proof of principal p until it expires. It
// returns nil, or the refusal of a replayed proof, or the 503 of a full
// ledger (status only).
func (d *dpopGate) remember(proof *dpopProof, p *Principal) *authRefusal {
	switch d.ledger.remember(proof.thumbprint, proof.jti, principalBinding(p), proof.iat.Add(d.window), d.now()) {
	case proofReplayed:
		return d.invalidProof(reasonProofReplayed)
	case proofsFull:
		return &authRefusal{status: http.StatusServiceUnavailable, reason: reasonProofsFull}
	case proofsFullForClient:
		return &authRefusal{status: http.StatusServiceUnavailable, reason: reasonClientProofsFull}
	}
	return nil
}

// dpopBinding returns the thumbprint of the key a token's cnf claim (RFC
// 7800) binds it to (RFC 9449 §6): "" when there is no cnf, a bearer
// token. ok is false when cnf binds it otherwise (another confirmation
// method beside or instead of jkt, or a jkt that is not a SHA-256
// thumbprint), which this server cannot check.
func dpopBinding(cnf json.RawMessage) (jkt string, ok bool) {
	if cnf == nil {
		return "", true
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(cnf, &members) != nil || len(members) != 1 {
		return "", false
	}
	raw, has := members[confirmationThumbprint]
	if !has || json.Unmarshal(raw, &jkt) != nil || len(decodeB64URL(jkt)) != sha256.Size {
		return "", false
	}
	return jkt, true
}

// principalBindingKey returns the thumbprint p's token is bound to, from
// its claims' cnf (a JWT's payload or an introspection answer), as
// dpopBinding.
func principalBindingKey(p *Principal) (jkt string, ok bool) {
	cnf, has := lookupMember(p.Claims, "cnf")
	if !has {
		return "", true
	}
	return dpopBinding(cnf)
}

// A nonce (RFC 9449 §9) is the second it was issued at, rounded down to
// dpopNonceTimeGranularity, and the first 16 bytes of its HMAC-SHA256 under
// the nonce key, in base64url: unpredictable without the key, checked
// without remembering it, the same for all requests of a granule.
const (
	dpopNonceBytes           = 8 + 16
	dpopNonceTimeGranularity = 10 * time.Second
)

// nonceAt returns the nonce the server issues at now.
func (d *dpopGate) nonceAt(now time.Time) string {
	var b [dpopNonceBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.Truncate(dpopNonceTimeGranularity).Unix()))
	copy(b[8:], d.nonceMAC(b[:8]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// nonceValid reports whether nonce was issued with the key within the
// proof window of now (either way: another server's clock may be ahead).
func (d *dpopGate) nonceValid(nonce string, now time.Time) bool {
	b := decodeB64URL(nonce)
	if len(b) != dpopNonceBytes || !hmac.Equal(b[8:], d.nonceMAC(b[:8])) {
		return false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0)
	return !issued.Before(now.Add(-d.window)) && !issued.After(now.Add(d.window))
}

func (d *dpopGate) nonceMAC(issued []byte) []byte {
	mac := hmac.New(sha256.New, d.nonceKey)
	mac.Write([]byte("mcpstdio DPoP nonce\x00"))
	mac.Write(issued)
	return mac.Sum(nil)[:16]
}

// check returns the error of the first field of o that is invalid, naming
// it after field (the path of o, "HTTPOptions.Auth.DPoP.").
func (o DPoPOptions) check(field string) error {
	switch {
	case o.Mode == DPoPOff:
		if o.Algorithms != nil || o.ProofWindow != 0 || o.MaxProofs != 0 || o.MaxClientProofs != 0 || o.NonceKey != nil {
			return errors.New(field + "Mode is off (DPoPOff): set it to DPoPAllow or DPoPRequire for the other DPoP options to apply")
		}
		return nil
	case o.Mode != DPoPAllow && o.Mode != DPoPRequire:
		return fmt.Errorf(field+"Mode %v is not DPoPOff, DPoPAllow or DPoPRequire", o.Mode)
	case o.NonceKey != nil && len(o.NonceKey) < minDPoPNonceKeyBytes:
		return fmt.Errorf(field+"NonceKey must hold at least %d bytes, got %d", minDPoPNonceKeyBytes, len(o.NonceKey))
	case o.Algorithms != nil && len(o.Algorithms) == 0:
		return errors.New(field + "Algorithms must name at least one algorithm (nil means all)")
	}
	supported := dpopAlgorithms()
	for i, alg := range o.Algorithms {
		if !slices.Contains(supported, alg) {
			return fmt.Errorf(field+"Algorithms: %q is not one of %s", alg, strings.Join(supported, ", "))
		}
		if slices.Contains(o.Algorithms[:i], alg) {
			return fmt.Errorf(field+"Algorithms: %q is named twice", alg)
		}
	}
	return checkOptions(
		checkAtMost(field+"ProofWindow", o.ProofWindow, maxDPoPProofWindow),
		checkOption(field+"MaxProofs", o.MaxProofs),
		checkOption(field+"MaxClientProofs", o.MaxClientProofs, Unlimited),
	)
}

// proofShare is one principal's share of the replay ledger's maxProofs:
// share as set, a quarter of maxProofs (rounded up) for 0, the whole for
// Unlimited.
func proofShare(share, maxProofs int) int {
	switch share {
	case 0:
		return (maxProofs + 3) / 4
	case Unlimited:
		return maxProofs
	}
	return share
}
