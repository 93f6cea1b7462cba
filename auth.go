package main

// Authorization over HTTP: the MCP server as an OAuth 2.1 resource server.
// An HTTPHandler given HTTPOptions.Auth has a handler of its protected
// resource metadata (RFC 9728, ProtectedResourceMetadata), refuses requests
// without a valid bearer token with RFC 6750 challenges (or, with
// AuthOptions.DPoP, without a DPoP-bound token and its proof: auth_dpop.go),
// puts the token's Principal in the request's context (PrincipalFromContext,
// HandlerRequest.Principal), and binds the sessions it creates to that
// principal. Tokens are verified by a TokenVerifier: JWTVerifier
// (auth_jwt.go, keys from auth_jwks.go) or IntrospectionVerifier
// (auth_introspect.go). The stdio transport takes no tokens: an application
// that serves stdio puts a Principal in Serve's context itself, if it wants
// one.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// missingScopes returns those of want the token does not grant, in order.
func (p *Principal) missingScopes(want []string) []string {
	var missing []string
	for _, s := range want {
		if !p.HasScope(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// A TokenVerifier decides whether a bearer token is valid for this server.
type TokenVerifier interface {
	// VerifyToken returns the Principal of token when it is valid for this
	// resource, else an error (wrapping ErrInvalidToken; a *TokenError says
	// why in words a client may see). Any error is answered 401
	// invalid_token, never 5xx: an authorization server that cannot be
	// reached makes tokens unverifiable, not the server broken. It must
	// return when ctx is done. Safe for concurrent use.
	VerifyToken(ctx context.Context, token string) (*Principal, error)
}

// ErrInvalidToken is what every token refusal wraps.
var ErrInvalidToken = errors.New("invalid access token")

// TokenError is a token refused for a reason a client may be told: Reason
// becomes the challenge's error_description. It wraps ErrInvalidToken and,
// when there is one, the cause (which is only logged).
type TokenError struct {
	Reason string
	cause  error
}

func (e *TokenError) Error() string {
	if e.cause != nil {
		return "access token refused: " + e.Reason + ": " + e.cause.Error()
	}
	return "access token refused: " + e.Reason
}

func (e *TokenError) Unwrap() []error { return []error{ErrInvalidToken, e.cause} }

// tokenError returns a *TokenError; cause may be nil.
func tokenError(reason string, cause error) *TokenError {
	return &TokenError{Reason: reason, cause: cause}
}

// AuthOptions turn on authorization for an HTTPHandler (HTTPOptions.Auth).
type AuthOptions struct {
	// Resource is this server's canonical URI (RFC 8707, RFC 9728), the
	// audience its tokens must name: an absolute https URI without a
	// fragment (http only for a loopback host), e.g.
	// "https://mcp.example.com/mcp". Required. The metadata's location, in
	// challenges, is derived from it, never from a request's Host or path:
	// its well-known path inserted between its host and its path
	// (https://mcp.example.com/.well-known/oauth-protected-resource/mcp),
	// where HTTPHandler.ProtectedResourceMetadata says to mount it.
	Resource string
	// AuthorizationServers are the issuer identifiers of the authorization
	// servers the metadata names; at least one is required.
	AuthorizationServers []string
	// Verifier verifies each request's bearer token. Required.
	Verifier TokenVerifier
	// Scopes are required of every request; one missing is answered 403
	// insufficient_scope naming them. They are the scope of the 401
	// challenges.
	Scopes []string
	// ToolScopes are the scopes a tools/call of the named tool requires
	// besides Scopes; one missing is answered 403 insufficient_scope naming
	// Scopes and the tool's.
	ToolScopes map[string][]string
	// ScopesSupported is the metadata's scopes_supported; nil means Scopes
	// followed by every tool's scopes.
	ScopesSupported []string
	// ResourceName, when set, is the metadata's human-readable
	// resource_name.
	ResourceName string
	// DPoP, when its Mode is set, also takes (DPoPAllow) or takes only
	// (DPoPRequire) DPoP-bound access tokens (RFC 9449); the zero value
	// takes bearer tokens only. The Verifier verifies DPoP-bound tokens as
	// any other; the key a token is bound to is read from its Principal's
	// Claims (cnf.jkt), so a TokenVerifier of your own must keep cnf there.
	DPoP DPoPOptions
}

// Well-known paths of RFC 9728 and the names of RFC 6750 challenges.
const (
	wellKnownProtectedResource = "/.well-known/oauth-protected-resource"
	headerWWWAuthenticate      = "WWW-Authenticate"
	authSchemeBearer           = "Bearer"
	paramAccessToken           = "access_token" // RFC 6750 §2.3: refused, never read

	errorCodeInvalidToken      = "invalid_token"
	errorCodeInvalidRequest    = "invalid_request"
	errorCodeInsufficientScope = "insufficient_scope"
)

// authGate is the authorization step of an HTTPHandler, built from
// AuthOptions by newAuthGate; read-only afterwards.
type authGate struct {
	verifier         TokenVerifier
	dpop             *dpopGate // nil when DPoP is off
	scopes           []string
	toolScopes       map[string][]string
	metadata         []byte // the RFC 9728 document
	metadataPath     string // where it is to be mounted
	resourceMetadata string // its URL, named in every challenge
}

// newAuthGate validates opts and prepares what the gate serves; forwarded
// reports the origin a trusted proxy forwarded a request for (nil when no
// proxy is trusted).
func newAuthGate(opts *AuthOptions, forwarded forwardedOrigin) (*authGate, error) {
	if opts.Verifier == nil {
		return nil, errors.New("mcpstdio: HTTPOptions.Auth.Verifier is required")
	}
	resource, err := parseResourceURI(opts.Resource)
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: HTTPOptions.Auth.Resource: %w", err)
	}
	if len(opts.AuthorizationServers) == 0 {
		return nil, errors.New("mcpstdio: HTTPOptions.Auth.AuthorizationServers must name at least one issuer")
	}
	for _, issuer := range opts.AuthorizationServers {
		if err := checkIssuerURL(issuer); err != nil {
			return nil, fmt.Errorf("mcpstdio: HTTPOptions.Auth.AuthorizationServers: %w", err)
		}
	}
	for _, s := range opts.Scopes {
		if !isScopeToken(s) {
			return nil, fmt.Errorf("mcpstdio: HTTPOptions.Auth.Scopes: %q is not a scope (RFC 6749 §3.3)", s)
		}
	}
	supported := slices.Clone(opts.ScopesSupported)
	if supported == nil {
		supported = slices.Clone(opts.Scopes)
	}
	toolScopes := make(map[string][]string, len(opts.ToolScopes))
	for _, tool := range slices.Sorted(maps.Keys(opts.ToolScopes)) {
		for _, s := range opts.ToolScopes[tool] {
			if !isScopeToken(s) {
				return nil, fmt.Errorf("mcpstdio: HTTPOptions.Auth.ToolScopes[%q]: %q is not a scope (RFC 6749 §3.3)", tool, s)
			}
			if opts.ScopesSupported == nil && !slices.Contains(supported, s) {
				supported = append(supported, s)
			}
		}
		toolScopes[tool] = slices.Clone(opts.ToolScopes[tool])
	}
	dpop, err := newDPoPGate(opts.DPoP, resource, forwarded)
	if err != nil {
		return nil, err
	}
	doc := struct {
		Resource                      string   `json:"resource"`
		AuthorizationServers          []string `json:"authorization_servers"`
		ScopesSupported               []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported        []string `json:"bearer_methods_supported"`
		ResourceName                  string   `json:"resource_name,omitempty"`
		DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
		DPoPBoundAccessTokensRequired *bool    `json:"dpop_bound_access_tokens_required,omitempty"`
	}{Resource: opts.Resource, AuthorizationServers: opts.AuthorizationServers, ScopesSupported: supported,
		BearerMethodsSupported: []string{"header"}, ResourceName: opts.ResourceName}
	if dpop != nil {
		required := dpop.mode == DPoPRequire
		doc.DPoPSigningAlgValuesSupported, doc.DPoPBoundAccessTokensRequired = dpop.algs, &required
	}
	metadata, err := marshalJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: encoding the protected resource metadata: %w", err)
	}
	g := &authGate{
		verifier:   opts.Verifier,
		dpop:       dpop,
		scopes:     slices.Clone(opts.Scopes),
		toolScopes: toolScopes,
		metadata:   metadata,
		// RFC 9728 §3.1: the well-known segment goes between the host
		// and the resource's path.
		metadataPath: wellKnownProtectedResource + strings.TrimSuffix(resource.EscapedPath(), "/"),
	}
	g.resourceMetadata = resource.Scheme + "://" + resource.Host + g.metadataPath
	return g, nil
}

// ProtectedResourceMetadata returns the handler of the protected resource
// metadata document (RFC 9728) of HTTPOptions.Auth, and the path to mount it
// at on the resource's host: the well-known path followed by the path of
// AuthOptions.Resource ("/.well-known/oauth-protected-resource/mcp" for
// "https://mcp.example.com/mcp"), which is where every challenge's
// resource_metadata points. The two fit http.ServeMux.Handle:
//
//	mux.Handle("/mcp", h)
//	mux.Handle(h.ProtectedResourceMetadata())
//
// The handler answers GET and HEAD with the document, without a token, and
// any other method 405; it does not look at the request's path, so it can
// be mounted at the root well-known path too
// ("/.well-known/oauth-protected-resource", where some clients look when a
// challenge names none). Without HTTPOptions.Auth there is no document: it
// returns "" and nil.
func (h *HTTPHandler) ProtectedResourceMetadata() (path string, handler http.Handler) {
	if h.auth == nil {
		return "", nil
	}
	return h.auth.metadataPath, http.HandlerFunc(h.auth.serveMetadata)
}

// parseResourceURI checks a resource URI: absolute, without a fragment,
// https or (on a loopback host) http.
func parseResourceURI(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || strings.Contains(s, "#") || u.User != nil {
		return nil, fmt.Errorf("%q is not an absolute URI without a fragment", s)
	}
	if err := checkSecureScheme(u); err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	return u, nil
}

// checkSecureScheme accepts https, and http on a loopback host only.
func checkSecureScheme(u *url.URL) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Host):
		return nil
	case u.Scheme == "http":
		return errors.New("must use https (http only on a loopback host)")
	}
	return errors.New("must be an https URL")
}

// checkIssuerURL checks an issuer identifier (RFC 8414 §2): https (http on
// loopback), a host, no query and no fragment.
func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#") || u.User != nil {
		return fmt.Errorf("issuer %q is not an absolute URL without query or fragment", s)
	}
	if err := checkSecureScheme(u); err != nil {
		return fmt.Errorf("issuer %q: %w", s, err)
	}
	return nil
}

// isScopeToken reports whether s is a scope token: one or more of the
// printable ASCII characters but space, '"' and '\' (RFC 6749 §3.3).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// admit is the gate of every request the handler serves: it verifies the
// access token (and, with the DPoP scheme, its proof) and returns the request
// with the Principal in its context, or nil after answering a challenge. With
// DPoP nonces, every answer carries the current nonce.
func (g *authGate) admit(w http.ResponseWriter, r *http.Request) *http.Request {
	if g.dpop != nil && g.dpop.nonceKey != nil {
		w.Header().Set(headerDPoPNonce, g.dpop.nonceAt(g.dpop.now()))
	}
	p, refusal := g.authorize(r)
	if refusal != nil {
		g.refuse(w, refusal)
		return nil
	}
	return r.WithContext(ContextWithPrincipal(r.Context(), p))
}

// authRefusal is a request the gate lets no further, as it answers it.
type authRefusal struct {
	status int
	scheme string   // the scheme whose challenge carries the error; "" for every challenge
	code   string   // the challenge's error; "" for none (no credential was read)
	reason string   // its error_description, also in the body
	scopes []string // the challenges' scope; nil for the gate's
}

// authorize returns the Principal of r's access token, or why r is
// refused. A Bearer token must not be DPoP-bound; a DPoP one must be, to
// the key of a valid proof that was not used before.
func (g *authGate) authorize(r *http.Request) (*Principal, *authRefusal) {
	if r.URL.Query().Has(paramAccessToken) {
		return nil, &authRefusal{status: http.StatusBadRequest, code: errorCodeInvalidRequest, reason: "access tokens are accepted in the Authorization header only"}
	}
	scheme, token, problem := g.credential(r.Header.Values("Authorization"))
	switch {
	case problem != "":
		return nil, &authRefusal{status: http.StatusBadRequest, code: errorCodeInvalidRequest, reason: problem}
	case scheme == "":
		return nil, &authRefusal{status: http.StatusUnauthorized}
	case scheme == authSchemeBearer && g.dpop != nil && g.dpop.mode == DPoPRequire:
		return nil, &authRefusal{status: http.StatusUnauthorized, reason: reasonDPoPOnly}
	}
	var proof *dpopProof
	if scheme == authSchemeDPoP {
		var refusal *authRefusal
		if proof, refusal = g.dpop.checkProof(r, token); refusal != nil {
			return nil, refusal
		}
	}
	invalid := func(reason string) *authRefusal {
		return &authRefusal{status: http.StatusUnauthorized, scheme: scheme, code: errorCodeInvalidToken, reason: reason}
	}
	p, err := g.verifier.VerifyToken(r.Context(), token)
	if err != nil || p == nil || p.ID() == "" {
		reason := "the access token is not valid for this resource"
		if te, ok := errors.AsType[*TokenError](err); ok {
			reason = te.Reason
		}
		return nil, invalid(reason)
	}
	jkt, checkable := principalBindingKey(p)
	switch {
	case !checkable || jkt != "" && g.dpop == nil:
		return nil, invalid(reasonBound)
	case jkt != "" && scheme == authSchemeBearer:
		return nil, invalid(reasonBoundAsBearer)
	case jkt == "" && scheme == authSchemeDPoP:
		return nil, invalid(reasonNotBound)
	case scheme == authSchemeDPoP && jkt != proof.thumbprint:
		return nil, invalid(reasonOtherKey)
	}
	if proof != nil {
		if refusal := g.dpop.remember(proof, p); refusal != nil {
			return nil, refusal
		}
	}
	if p.missingScopes(g.scopes) != nil {
		return nil, &authRefusal{status: http.StatusForbidden, scheme: scheme, code: errorCodeInsufficientScope, reason: "the access token lacks a scope every request needs"}
	}
	return p, nil
}

// credential returns the scheme and token of an Authorization header:
// Bearer, or DPoP when the gate takes DPoP tokens; "" when it holds no
// credential the gate reads (another scheme), or a problem when it is
// malformed or repeated.
func (g *authGate) credential(values []string) (scheme, token, problem string) {
	switch {
	case len(values) == 0:
		return "", "", ""
	case len(values) > 1:
		return "", "", "more than one Authorization header"
	}
	name, rest, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	switch {
	case strings.EqualFold(name, authSchemeBearer):
		scheme = authSchemeBearer
	case strings.EqualFold(name, authSchemeDPoP) && g.dpop != nil:
		scheme = authSchemeDPoP
	default:
		return "", "", "" // another scheme: no credential
	}
	token = strings.TrimLeft(rest, " ")
	if !isToken68(token) {
		return "", "", "the " + scheme + " credential is not a token68"
	}
	return scheme, token, ""
}

// isToken68 reports whether s is an RFC 7235 token68: 1*( ALPHA / DIGIT /
// "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	end := len(strings.TrimRight(s, "="))
	if end == 0 {
		return false
	}
	for i := 0; i < end; i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return true
}

// allowMessage is the gate's check of a decoded POST: a tools/call of a
// tool with ToolScopes needs them too. It answers a refused message 403
// insufficient_scope, naming the request's scopes and the tool's, and
// reports false.
func (g *authGate) allowMessage(w http.ResponseWriter, r *http.Request, msg *postedMessage) bool {
	if msg.method != methodToolsCall || msg.isNotification() || len(g.toolScopes) == 0 || msg.env.params == nil {
		return true
	}
	raw, ok := lookupMember(msg.env.params, "name")
	if !ok {
		return true
	}
	name, ok := decodeString(raw)
	if !ok {
		return true
	}
	need := g.toolScopes[name]
	if PrincipalFromContext(r.Context()).missingScopes(need) == nil {
		return true
	}
	scopes := slices.Clone(g.scopes)
	for _, s := range need {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	scheme, _, _ := g.credential(r.Header.Values("Authorization"))
	g.refuse(w, &authRefusal{status: http.StatusForbidden, scheme: scheme, code: errorCodeInsufficientScope, reason: "the tool " + name + " needs more scopes", scopes: scopes})
	return false
}

// refuse answers f: a 503 as it is, anything else with the challenges of
// the schemes the gate takes (RFC 6750 §3, RFC 9449 §7.1): the one
// carrying the error first, each with the metadata's URL and the scopes,
// DPoP's with the algorithms it takes. The body is a JSON-RPC error
// without id.
func (g *authGate) refuse(w http.ResponseWriter, f *authRefusal) {
	if f.status == http.StatusServiceUnavailable {
		httpError(w, f.status, "Service Unavailable: "+f.reason)
		return
	}
	scopes := f.scopes
	if scopes == nil {
		scopes = g.scopes
	}
	for _, scheme := range g.challengeSchemes(f.scheme) {
		var b strings.Builder
		b.WriteString(scheme + " ")
		if f.code != "" && (f.scheme == "" || f.scheme == scheme) {
			b.WriteString(`error="` + f.code + `", error_description=` + quoteAuthParam(f.reason) + ", ")
		}
		if scheme == authSchemeDPoP {
			b.WriteString("algs=" + g.dpop.algsParam + ", ")
		}
		b.WriteString("resource_metadata=" + quoteAuthParam(g.resourceMetadata))
		if len(scopes) > 0 {
			b.WriteString(", scope=" + quoteAuthParam(strings.Join(scopes, " ")))
		}
		w.Header().Add(headerWWWAuthenticate, b.String())
	}
	message := "Unauthorized"
	switch f.status {
	case http.StatusForbidden:
		message = "Forbidden"
	case http.StatusBadRequest:
		message = "Bad Request"
	}
	if f.reason != "" {
		message += ": " + f.reason
	}
	httpError(w, f.status, message)
}

// challengeSchemes returns the schemes the gate challenges with, first the
// one named (the scheme a refused request used), if the gate takes it.
func (g *authGate) challengeSchemes(first string) []string {
	switch {
	case g.dpop == nil:
		return []string{authSchemeBearer}
	case g.dpop.mode == DPoPRequire:
		return []string{authSchemeDPoP}
	case first == authSchemeDPoP:
		return []string{authSchemeDPoP, authSchemeBearer}
	}
	return []string{authSchemeBearer, authSchemeDPoP}
}

// quoteAuthParam returns s as an RFC 9110 quoted-string; characters a
// quoted-string cannot hold (controls, non-ASCII) become '?'.
func quoteAuthParam(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' && c != '\t' || c >= 0x7f:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// serveMetadata answers the protected resource metadata document; it needs
// no token.
func (g *authGate) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSONFrame(w, http.StatusOK, g.metadata)
}
