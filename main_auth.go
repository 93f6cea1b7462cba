package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
)

// authFlags are the reference server's -auth-* flags: with -auth-issuer and
// -http, the endpoint is an OAuth resource server (auth.go).
type authFlags struct {
	issuer, resource           string
	scopes, toolScopes         string
	introspectionURL, clientID string
	clientSecretFile           string
	acceptUntyped              bool
	dpop                       DPoPMode
	dpopMaxProofs              int
	dpopMaxClientProofs        int
	clientSecret               string              // read from clientSecretFile by check
	scopeList                  []string            // parsed by check
	toolScopeMap               map[string][]string // parsed by check
}

// register adds the flags to fs.
func (f *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.issuer, "auth-issuer", "", "with -http, require OAuth access tokens issued by this authorization server (`URL`, its issuer identifier; https, or http on loopback)")
	fs.StringVar(&f.resource, "auth-resource", "", "with -auth-issuer, this server's canonical `URL`, the audience its tokens must name (e.g. https://mcp.example.com/mcp)")
	fs.StringVar(&f.scopes, "auth-scopes", "", "with -auth-issuer, comma-separated scopes every request needs")
	fs.StringVar(&f.toolScopes, "auth-tool-scopes", "", "with -auth-issuer, comma-separated TOOL=SCOPE pairs: the scopes a tools/call of TOOL also needs (name a tool twice for two scopes)")
	fs.StringVar(&f.introspectionURL, "auth-introspection-url", "", "with -auth-issuer, verify opaque tokens at this RFC 7662 introspection endpoint instead of JWTs with the issuer's keys")
	fs.StringVar(&f.clientID, "auth-client-id", "", "with -auth-introspection-url, the client id this server authenticates with (HTTP Basic)")
	fs.StringVar(&f.clientSecretFile, "auth-client-secret-file", "", "with -auth-introspection-url, the `FILE` holding that client's secret (trailing whitespace trimmed)")
	fs.BoolVar(&f.acceptUntyped, "auth-accept-untyped-tokens", false, "with -auth-issuer, also accept JWT access tokens whose typ is JWT or absent (default: at+jwt only, RFC 9068)")
	fs.Func("auth-dpop", "with -auth-issuer, DPoP-bound access tokens (RFC 9449): `MODE` off, allow (bearer and DPoP tokens) or require (DPoP tokens only) (default off)", func(v string) error {
		for _, m := range []DPoPMode{DPoPOff, DPoPAllow, DPoPRequire} {
			if v == m.String() {
				f.dpop = m
				return nil
			}
		}
		return fmt.Errorf("%q is not off, allow or require", v)
	})
	optionVar(fs, &f.dpopMaxProofs, "auth-dpop-max-proofs", DefaultDPoPMaxProofs, "with -auth-dpop, the DPoP proofs remembered against replay (a proof that does not fit is refused 503)")
	optionVar(fs, &f.dpopMaxClientProofs, "auth-dpop-max-client-proofs", 0, "with -auth-dpop, the DPoP proofs remembered of one principal (0: a quarter of -auth-dpop-max-proofs; unlimited: all of them)", Unlimited)
}

// check validates the flags once parsed (withHTTP: -http was given) and
// reads the client secret file.
func (f *authFlags) check(withHTTP bool) error {
	if f.issuer == "" {
		for name, v := range map[string]string{"-auth-resource": f.resource, "-auth-scopes": f.scopes, "-auth-tool-scopes": f.toolScopes,
			"-auth-introspection-url": f.introspectionURL, "-auth-client-id": f.clientID, "-auth-client-secret-file": f.clientSecretFile} {
			if v != "" {
				return fmt.Errorf("%s needs -auth-issuer", name)
			}
		}
		if f.acceptUntyped {
			return errors.New("-auth-accept-untyped-tokens needs -auth-issuer")
		}
		if f.dpop != DPoPOff {
			return errors.New("-auth-dpop needs -auth-issuer")
		}
	}
	if f.dpop == DPoPOff && (f.dpopMaxProofs != DefaultDPoPMaxProofs && f.dpopMaxProofs != 0 || f.dpopMaxClientProofs != 0) {
		return errors.New("-auth-dpop-max-proofs and -auth-dpop-max-client-proofs need -auth-dpop allow or require")
	}
	if f.issuer == "" {
		return nil
	}
	switch {
	case !withHTTP:
		return errors.New("-auth-issuer applies to -http only (a stdio server takes its credentials from its environment)")
	case f.resource == "":
		return errors.New("-auth-issuer needs -auth-resource, this server's canonical URL")
	case f.introspectionURL == "" && (f.clientID != "" || f.clientSecretFile != ""):
		return errors.New("-auth-client-id and -auth-client-secret-file apply to -auth-introspection-url only")
	case f.introspectionURL != "" && (f.clientID == "" || f.clientSecretFile == ""):
		return errors.New("-auth-introspection-url needs -auth-client-id and -auth-client-secret-file")
	case f.introspectionURL != "" && f.acceptUntyped:
		return errors.New("-auth-accept-untyped-tokens applies to JWT access tokens, not to -auth-introspection-url")
	}
	f.scopeList = splitList(f.scopes)
	f.toolScopeMap = map[string][]string{}
	for _, pair := range splitList(f.toolScopes) {
		tool, scope, ok := strings.Cut(pair, "=")
		if tool, scope = strings.TrimSpace(tool), strings.TrimSpace(scope); !ok || tool == "" || scope == "" {
			return fmt.Errorf("-auth-tool-scopes: %q is not TOOL=SCOPE", pair)
		}
		f.toolScopeMap[tool] = append(f.toolScopeMap[tool], scope)
	}
	if f.clientSecretFile != "" {
		data, err := os.ReadFile(f.clientSecretFile)
		if err != nil {
			return fmt.Errorf("-auth-client-secret-file: %w", err)
		}
		if f.clientSecret = string(bytes.TrimRight(data, " \t\r\n\v\f")); f.clientSecret == "" {
			return fmt.Errorf("-auth-client-secret-file: %s is empty", f.clientSecretFile)
		}
	}
	return nil
}

// resourceHost is the host[:port] of -auth-resource.
func (f *authFlags) resourceHost() string {
	u, err := url.Parse(f.resource)
	if err != nil {
		return ""
	}
	return u.Host
}

// options returns the AuthOptions the checked flags describe, nil without
// -auth-issuer. An error names what is wrong.
func (f *authFlags) options(logger *slog.Logger) (*AuthOptions, error) {
	if f.issuer == "" {
		return nil, nil
	}
	var verifier TokenVerifier
	var err error
	if f.introspectionURL != "" {
		verifier, err = NewIntrospectionVerifier(IntrospectionVerifierOptions{Endpoint: f.introspectionURL, ClientID: f.clientID, ClientSecret: f.clientSecret,
			Issuer: f.issuer, Resource: f.resource, Logger: logger})
	} else {
		verifier, err = NewJWTVerifier(JWTVerifierOptions{Issuer: f.issuer, Resource: f.resource, AcceptUntypedTokens: f.acceptUntyped, Logger: logger})
	}
	if err != nil {
		return nil, err
	}
	opts := &AuthOptions{Resource: f.resource, AuthorizationServers: []string{f.issuer}, Verifier: verifier, Scopes: f.scopeList, ToolScopes: f.toolScopeMap}
	if f.dpop != DPoPOff {
		opts.DPoP = DPoPOptions{Mode: f.dpop, MaxProofs: f.dpopMaxProofs, MaxClientProofs: f.dpopMaxClientProofs}
	}
	return opts, nil
}
