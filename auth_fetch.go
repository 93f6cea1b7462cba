package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of the verifiers' requests to the authorization server, which is
// a remote party like any other: every request is bounded in time and in
// the bytes read.
const (
	DefaultIssuerFetchTimeout     = 10 * time.Second
	DefaultIssuerMaxResponseBytes = 1 << 20
	maxIssuerRedirects            = 3
)

// maxClockSkew bounds a verifier's ClockSkew.
const maxClockSkew = 5 * time.Minute

// normalizeIssuerOptions checks and defaults the options both verifiers have
// (JWTVerifierOptions and IntrospectionVerifierOptions, which kind names in
// the error): the clock skew they allow, the bounds of their requests to the
// authorization server, and their logger.
func normalizeIssuerOptions(kind string, skew, fetchTimeout *time.Duration, maxResponseBytes *int, logger **slog.Logger) error {
	if err := checkOptions(
		checkAtMost(kind+".ClockSkew", *skew, maxClockSkew),
		checkOption(kind+".FetchTimeout", *fetchTimeout),
		checkOption(kind+".MaxResponseBytes", *maxResponseBytes),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	defaultTo(skew, DefaultClockSkew)
	defaultTo(fetchTimeout, DefaultIssuerFetchTimeout)
	defaultTo(maxResponseBytes, DefaultIssuerMaxResponseBytes)
	*logger = defaultLogger(*logger)
	return nil
}

// issuerHTTP makes the verifiers' requests to an authorization server. Each
// request has a deadline, reads at most maxBytes of the answer, wants a 200
// with a JSON object (duplicate keys refused), and follows at most
// maxIssuerRedirects redirects, each to an https URL (http on loopback).
// Safe for concurrent use; read-only after newIssuerHTTP.
type issuerHTTP struct {
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
}

// newIssuerHTTP returns an issuerHTTP that sends with a copy of client
// (http.DefaultClient when nil) whose redirects are checked.
func newIssuerHTTP(client *http.Client, timeout time.Duration, maxBytes int) issuerHTTP {
	c := http.Client{}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxIssuerRedirects {
			return fmt.Errorf("more than %d redirects", maxIssuerRedirects)
		}
		return checkSecureScheme(req.URL)
	}
	return issuerHTTP{client: &c, timeout: timeout, maxBytes: int64(maxBytes)}
}

// get fetches the JSON object at rawURL.
func (c issuerHTTP) get(ctx context.Context, rawURL string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, req)
}

// do sends req within the timeout and returns the JSON object it answers.
func (c issuerHTTP) do(ctx context.Context, req *http.Request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s %s: status %d", req.Method, req.URL.Redacted(), resp.StatusCode)
	case int64(len(body)) > c.maxBytes:
		return nil, fmt.Errorf("%s %s: the answer exceeds %d bytes", req.Method, req.URL.Redacted(), c.maxBytes)
	case !isStrictJSONObject(body):
		return nil, fmt.Errorf("%s %s: the answer is not a JSON object (or repeats a member)", req.Method, req.URL.Redacted())
	}
	return body, nil
}

// isStrictJSONObject reports whether b is one JSON object without
// duplicate members at any depth (see decodeEnvelope).
func isStrictJSONObject(b []byte) bool {
	env, err := decodeEnvelope(b)
	return err == nil && env.kind == kindObject
}

// metadataURLs returns where the metadata of issuer may be, in the order
// to try them: RFC 8414 §3.1 (the well-known segment before the path), then
// OpenID Connect Discovery with the segment inserted and appended.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	base := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}
}

// issuerMetadata is what the verifiers read of an authorization server's
// metadata.
type issuerMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// discoverIssuer fetches the metadata of issuer (RFC 8414, else OpenID
// Connect Discovery): the first document found whose issuer is exactly
// issuer (§3.3: another value is an attack or a misconfiguration).
func discoverIssuer(ctx context.Context, c issuerHTTP, issuer string) (*issuerMetadata, error) {
	var errs []error
	for _, u := range metadataURLs(issuer) {
		body, err := c.get(ctx, u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var md issuerMetadata
		if err := json.Unmarshal(body, &md); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if md.Issuer != issuer {
			errs = append(errs, fmt.Errorf("%s names the issuer %s, not %s", u, strconv.Quote(md.Issuer), strconv.Quote(issuer)))
			continue
		}
		return &md, nil
	}
	return nil, fmt.Errorf("discovering the metadata of %s: %w", issuer, errors.Join(errs...))
}
