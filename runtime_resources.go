package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// ErrResourceNotFound, returned (or wrapped) by a ResourceHandler, is
// answered as the dialect's "Resource not found" error for the URI read.
var ErrResourceNotFound = errors.New("resource not found")

// Resource describes a resource as resources/list shows it (and as a
// resource_link content block carries it).
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Size        int64           `json:"size,omitempty"` // bytes; 0 = unknown
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"` // a JSON object, or nil
	// A client of an older protocol version is sent only the fields its
	// version defines (dialect.resource): no Icons before 2025-11-25; no
	// Title, Meta or Annotations.LastModified before 2025-06-18.
}

// ResourceTemplate describes a family of resources by an RFC 6570 level-1
// URI template such as "test://template/{id}/data".
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"` // a JSON object, or nil
	// Shaped for older versions as Resource is (dialect.template).
}

// ResourceResult is the answer to resources/read.
type ResourceResult struct {
	// Contents are the resource's contents; an empty URI is filled in with
	// the URI that was read.
	Contents []ResourceContents
	Meta     json.RawMessage // a JSON object, or nil
}

// ResourceHandler reads a resource. req.URI is the URI read and, for a
// template, req.Variables the values its variables matched. An error that
// wraps ErrResourceNotFound is answered "Resource not found"; an *RPCError is
// sent as is; any other error is logged and answered -32603 "Internal error".
// A nil result with a nil error has no contents.
type ResourceHandler func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error)

type resourceEntry struct {
	resource Resource
	handler  ResourceHandler
}

type templateEntry struct {
	template ResourceTemplate
	parsed   uriTemplate
	handler  ResourceHandler
	// completers are the completion handlers by variable; the map is
	// replaced, never modified, once the entry is in the catalog.
	completers map[string]CompletionHandler
}

// AddResource registers a static resource. It fails for an empty or
// scheme-less URI, an empty name, a nil handler, or a URI already registered.
func (rt *Runtime) AddResource(r Resource, handler ResourceHandler) error {
	if err := checkResourceFields(r.URI, r.Name, r.Meta, handler); err != nil {
		return fmt.Errorf("adding resource %q: %w", r.URI, err)
	}
	r.Icons = slices.Clone(r.Icons)
	r.Meta = slices.Clone(r.Meta)
	r.Annotations = cloneAnnotations(r.Annotations)
	rt.mu.Lock()
	added := rt.cat.resources.add(r.URI, &resourceEntry{resource: r, handler: handler})
	rt.mu.Unlock()
	if !added {
		return fmt.Errorf("adding resource %q: a resource with that URI is already registered", r.URI)
	}
	rt.AnnounceListChanged(ResourcesChanged)
	return nil
}

// AddResourceTemplate registers a resource template. It fails for a template
// that is not RFC 6570 level 1 (only {var} expressions), an empty name, a nil
// handler, or a template already registered.
func (rt *Runtime) AddResourceTemplate(t ResourceTemplate, handler ResourceHandler) error {
	parsed, err := parseURITemplate(t.URITemplate)
	if err == nil {
		err = checkResourceFields(t.URITemplate, t.Name, t.Meta, handler)
	}
	if err != nil {
		return fmt.Errorf("adding resource template %q: %w", t.URITemplate, err)
	}
	t.Icons = slices.Clone(t.Icons)
	t.Meta = slices.Clone(t.Meta)
	t.Annotations = cloneAnnotations(t.Annotations)
	rt.mu.Lock()
	added := rt.cat.templates.add(t.URITemplate, &templateEntry{template: t, parsed: parsed, handler: handler})
	rt.mu.Unlock()
	if !added {
		return fmt.Errorf("adding resource template %q: that template is already registered", t.URITemplate)
	}
	rt.AnnounceListChanged(ResourcesChanged)
	return nil
}

// RemoveResource unregisters the static resource with the given URI and
// reports whether it was registered.
func (rt *Runtime) RemoveResource(uri string) bool {
	rt.mu.Lock()
	removed := rt.cat.resources.remove(uri)
	rt.mu.Unlock()
	return rt.announceIf(removed, ResourcesChanged)
}

// RemoveResourceTemplate unregisters a template, with its completion
// handlers, and reports whether it was registered.
func (rt *Runtime) RemoveResourceTemplate(uriTemplate string) bool {
	rt.mu.Lock()
	if e := rt.cat.templates.byKey[uriTemplate]; e != nil {
		rt.cat.completers -= len(e.completers)
	}
	removed := rt.cat.templates.remove(uriTemplate)
	rt.mu.Unlock()
	return rt.announceIf(removed, ResourcesChanged)
}

func checkResourceFields(uri, name string, meta json.RawMessage, handler ResourceHandler) error {
	if !hasURIScheme(uri) {
		return errors.New("the URI must be absolute (start with a scheme and ':')")
	}
	if name == "" {
		return errors.New("a name is required")
	}
	if meta != nil && !isJSONObjectText(meta) {
		return errors.New("_meta must be a JSON object")
	}
	if handler == nil {
		return errors.New("nil handler")
	}
	return nil
}

// hasURIScheme reports whether s starts with an RFC 3986 scheme and ':'.
func hasURIScheme(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 1 || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < colon; i++ {
		if ch := s[i]; !isAlpha(ch) && !(ch >= '0' && ch <= '9') && ch != '+' && ch != '-' && ch != '.' {
			return false
		}
	}
	return true
}

func isAlpha(ch byte) bool { return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' }

func cloneAnnotations(a *Annotations) *Annotations {
	if a == nil {
		return nil
	}
	c := *a
	c.Audience = slices.Clone(a.Audience)
	return &c
}

type listResourcesResult struct {
	Resources  []Resource `json:"resources"`
	NextCursor string     `json:"nextCursor,omitempty"`
	resultEnvelope
}

type listResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
	resultEnvelope
}

// servesResources reports whether the resources capability is advertised.
func (rt *Runtime) servesResources() bool {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return len(rt.cat.resources.list) > 0 || len(rt.cat.templates.list) > 0
}

func (rt *Runtime) listResources(c *methodCall) Reply {
	if !rt.servesResources() {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	d := dialectOf(c.version)
	resources, next, rerr := listPage(rt, c, &rt.cat.resources, listResources, false, (*resourceEntry).item, func(e *resourceEntry) Resource {
		return d.resource(e.resource)
	})
	if rerr != nil {
		return Reply{Error: rerr}
	}
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return listResourcesResult{Resources: resources, NextCursor: next, resultEnvelope: env}
	})
}

func (rt *Runtime) listResourceTemplates(c *methodCall) Reply {
	if !rt.servesResources() {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	d := dialectOf(c.version)
	templates, next, rerr := listPage(rt, c, &rt.cat.templates, listResourceTemplates, false, (*templateEntry).item, func(e *templateEntry) ResourceTemplate {
		return d.template(e.template)
	})
	if rerr != nil {
		return Reply{Error: rerr}
	}
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return listResourceTemplatesResult{ResourceTemplates: templates, NextCursor: next, resultEnvelope: env}
	})
}

type readResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	resultEnvelope
}

func (rt *Runtime) readResource(ctx context.Context, c *methodCall) Reply {
	if !rt.servesResources() {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	uri, ok := decodeString(c.params.uri)
	if !ok {
		return Reply{Error: invalidParams("Invalid params: resources/read requires a string uri")}
	}
	handler, vars, item := rt.findResource(uri)
	if handler == nil {
		return Reply{Error: resourceNotFound(c, uri)}
	}
	if rerr := rt.checkAccess(c, item); rerr != nil {
		return Reply{Error: rerr}
	}
	req := c.handlerRequest()
	req.URI, req.Variables = uri, vars
	if rerr := rt.startAsking(c, &req.ask, uri); rerr != nil {
		return Reply{Error: rerr}
	}
	res, err := runHandler(rt, c, uri, func() (*ResourceResult, error) { return handler(ctx, req) })
	if reply, ok := rt.inputRequired(c, &req.ask, err); ok {
		return reply
	}
	if err != nil {
		if errors.Is(err, ErrResourceNotFound) {
			return Reply{Error: resourceNotFound(c, uri)}
		}
		return rt.handlerErrorReply(c, uri, err)
	}
	if res == nil {
		res = &ResourceResult{}
	}
	d := dialectOf(c.version)
	contents := make([]ResourceContents, len(res.Contents))
	for i, rc := range res.Contents {
		if rc.URI == "" {
			rc.URI = uri
		}
		contents[i] = d.resourceContents(rc)
	}
	return rt.envelopeReply(c, true, res.Meta, func(env resultEnvelope) any {
		return readResourceResult{Contents: contents, resultEnvelope: env}
	})
}

// findResource returns the handler serving uri: the static resource of that
// URI, else the first template, in template order, that matches it (with its
// variables), and the item an AccessPolicy decides on for reading uri. The
// handler is nil when none does.
func (rt *Runtime) findResource(uri string) (ResourceHandler, map[string]string, CatalogItem) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	if e := rt.cat.resources.byKey[uri]; e != nil {
		item := e.item()
		item.RequestedURI = uri
		return e.handler, nil, item
	}
	for _, e := range rt.cat.templates.list {
		if vars, ok := e.parsed.match(uri); ok {
			item := e.item()
			item.RequestedURI = uri
			return e.handler, vars, item
		}
	}
	return nil, nil, CatalogItem{}
}

// resourceNotFound is the dialect's error for an unknown URI: -32002 in the
// legacy era, -32602 in 2026-07-28, both with data {"uri": uri}.
func resourceNotFound(c *methodCall, uri string) *RPCError {
	code := CodeResourceNotFound
	if c.era == eraStateless {
		code = CodeInvalidParams
	}
	return &RPCError{Code: code, Message: "Resource not found", Data: map[string]string{"uri": uri}}
}

// uriTemplate is a parsed RFC 6570 level-1 template: literals and simple
// {var} expressions.
type uriTemplate struct {
	pattern *regexp.Regexp // anchored; group i+1 matches vars[i]
	vars    []string
}

// templateValue matches what a level-1 expansion produces: unreserved
// characters and percent-encoded octets, at least one.
const templateValue = `((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)`

// parseURITemplate parses a level-1 template. Operators of higher levels
// ({+var}, {#var}, {?var}, ...), lists ({a,b}) and modifiers ({var*},
// {var:3}) are refused, as are unbalanced braces and repeated variables.
func parseURITemplate(s string) (uriTemplate, error) {
	var pattern strings.Builder
	var vars []string
	pattern.WriteString("^")
	for rest := s; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			pattern.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if rest[open] == '}' {
			return uriTemplate{}, errors.New("unbalanced '}' in URI template")
		}
		pattern.WriteString(regexp.QuoteMeta(rest[:open]))
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return uriTemplate{}, errors.New("unterminated '{' in URI template")
		}
		name := rest[open+1 : open+end]
		if !isTemplateVarName(name) {
			return uriTemplate{}, fmt.Errorf("expression {%s} is not a level-1 variable ({name} of letters, digits, '_', '.' and %%XX)", name)
		}
		if slices.Contains(vars, name) {
			return uriTemplate{}, fmt.Errorf("variable %q appears twice", name)
		}
		vars = append(vars, name)
		pattern.WriteString(templateValue)
		rest = rest[open+end+1:]
	}
	pattern.WriteString("$")
	if len(vars) == 0 {
		return uriTemplate{}, errors.New("a URI template needs at least one {variable}")
	}
	return uriTemplate{pattern: regexp.MustCompile(pattern.String()), vars: vars}, nil
}

// isTemplateVarName reports whether name is an RFC 6570 varname:
// varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded.
func isTemplateVarName(name string) bool {
	if name == "" || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch ch := name[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '_', ch == '.':
		case ch == '%' && i+2 < len(name) && isHex(name[i+1]) && isHex(name[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(ch byte) bool {
	return ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F'
}

// match returns the percent-decoded values of the variables when uri is an
// expansion of the template.
func (t uriTemplate) match(uri string) (map[string]string, bool) {
	m := t.pattern.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(t.vars))
	for i, name := range t.vars {
		v, err := url.PathUnescape(m[i+1])
		if err != nil {
			return nil, false
		}
		vars[name] = v
	}
	return vars, true
}
