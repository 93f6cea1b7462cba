package main

// MCP Apps (the io.modelcontextprotocol/ui extension, SEP-1865): an app is an
// HTML page that a host renders in a sandboxed frame beside a tool's result.
// The page is a resource with a ui:// URI and the MIME type
// text/html;profile=mcp-app; a tool names it in _meta.ui.resourceUri. The
// page talks to the host, never to this server: the host relays the tool
// calls and resource reads it asks for. docs/how-to/apps.md shows the whole
// flow.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// AppsExtension identifies MCP Apps in capabilities.extensions. A client
// that renders apps declares it with the MIME types it renders
// (HandlerRequest.ClientAppMIMETypes); a Runtime declares it, with
// AppMIMEType, while it serves an app.
const AppsExtension = "io.modelcontextprotocol/ui"

// AppMIMEType is the MIME type of an app's page, in resources/list and in
// the resources/read contents.
const AppMIMEType = "text/html;profile=mcp-app"

// Who may call a tool linked to an app (ToolUI.Visibility).
const (
	// VisibleToModel: the host lists the tool to its model, which may call
	// it.
	VisibleToModel = "model"
	// VisibleToApp: an app of this server may call the tool through the
	// host.
	VisibleToApp = "app"
)

const (
	appURIPrefix = "ui://"
	// uiMetaKey is the _meta member of a tool, and of an app's resource and
	// contents, that carries the extension's settings; a tool's has the
	// members resourceURIKey and visibilityKey (ToolUI).
	uiMetaKey      = "ui"
	resourceURIKey = "resourceUri"
	visibilityKey  = "visibility"
	// mimeTypesKey is the member of the extension's settings in
	// capabilities that lists the MIME types of apps.
	mimeTypesKey = "mimeTypes"
	// flatResourceURIMetaKey is the tool _meta key the extension deprecates
	// for _meta.ui.resourceUri. Hosts in use read only it, so a linked tool
	// carries both.
	flatResourceURIMetaKey = "ui/resourceUri"
)

// App is a page a host renders for the tools linked to it (AddApp, LinkApp).
type App struct {
	// URI names the app: "ui://" and a name, such as "ui://weather/view".
	URI string
	// Name identifies the app in resources/list; required.
	Name        string
	Title       string
	Description string
	Icons       []Icon
	// HTML is the page: an HTML5 document in valid UTF-8 that starts with
	// the doctype <!DOCTYPE html> (after blanks and comments). resources/read
	// serves it as text. A host renders it in a sandboxed frame under a
	// Content-Security-Policy built from UI.CSP, so a page that loads nothing
	// from elsewhere (inline scripts and styles) needs no CSP.
	HTML string
	// UI is the app's _meta.ui, sent in resources/list and with the
	// resources/read contents. The zero value sends no _meta.
	UI AppUI
}

// AppUI is how an app asks to be rendered (_meta.ui of its resource).
type AppUI struct {
	// CSP lists the origins the page may reach; a host allows no other.
	CSP AppCSP `json:"csp,omitzero"`
	// Permissions are the browser features the page asks for; a host may
	// grant them.
	Permissions AppPermissions `json:"permissions,omitzero"`
	// Domain is a dedicated origin for the page's frame, in the format the
	// host documents (such as "a904794854a047f6.claudemcpcontent.com"); ""
	// lets the host choose.
	Domain string `json:"domain,omitempty"`
	// PrefersBorder asks for a visible border and background (true) or none
	// (false); nil leaves it to the host.
	PrefersBorder *bool `json:"prefersBorder,omitempty"`
}

// AppCSP are the origins an app's page may reach, each a scheme (http,
// https, ws or wss), a host and an optional port, such as
// "https://api.example.com"; the host may start with "*." for every
// subdomain. A nil list allows none.
type AppCSP struct {
	// ConnectDomains: fetch, XHR and WebSocket (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains: scripts, styles, images, fonts and media.
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains: nested frames (frame-src).
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains: the document's base URI (base-uri).
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// AppPermissions are the browser features an app's page asks for, each sent
// as an empty object when true.
type AppPermissions struct {
	Camera, Microphone, Geolocation, ClipboardWrite bool
}

// MarshalJSON encodes the features asked for, {"camera":{}, ...}.
func (p AppPermissions) MarshalJSON() ([]byte, error) {
	features := map[string]struct{}{}
	for name, asked := range map[string]bool{
		"camera": p.Camera, "microphone": p.Microphone, "geolocation": p.Geolocation, "clipboardWrite": p.ClipboardWrite,
	} {
		if asked {
			features[name] = struct{}{}
		}
	}
	return marshalJSON(features)
}

// ToolUI links a tool to an app: the tool's _meta.ui (LinkApp).
type ToolUI struct {
	// ResourceURI is the URI of the app the host renders the tool's results
	// in; it must be registered (AddApp) before the tool. "" links a tool
	// that only sets Visibility.
	ResourceURI string `json:"resourceUri,omitempty"`
	// Visibility says who may call the tool: VisibleToModel, VisibleToApp or
	// both. nil means both, and sends nothing. A tool visible to the app
	// alone is still listed in tools/list and served to any caller: the
	// host keeps it from its model, and this server cannot tell the app's
	// calls from the model's.
	Visibility []string `json:"visibility,omitempty"`
}

// LinkApp returns tool with ui as its _meta.ui and, when ui names an app,
// the deprecated _meta["ui/resourceUri"] beside it; the other members of
// tool.Meta are kept. It fails for a ResourceURI that is not ui://, a
// Visibility that is empty or holds anything but VisibleToModel and
// VisibleToApp (once each), an empty ui, or a tool.Meta that is not a JSON
// object or links an app already. AddTool then refuses the tool unless the
// Runtime serves the app.
//
// The tool's handler answers every client, those that render no app too
// (HandlerRequest.ClientRendersApps tells them apart), so its results must
// carry content that stands on its own: the text a model or a host without
// apps shows. What the app alone needs goes in StructuredContent.
func LinkApp(tool Tool, ui ToolUI) (Tool, error) {
	if ui.ResourceURI == "" && ui.Visibility == nil {
		return tool, fmt.Errorf("linking tool %q: a ToolUI needs a ResourceURI or a Visibility", tool.Name)
	}
	if err := ui.check(); err != nil {
		return tool, fmt.Errorf("linking tool %q: %w", tool.Name, err)
	}
	members, err := metaMembers(tool.Meta)
	if err != nil {
		return tool, fmt.Errorf("linking tool %q: %w", tool.Name, err)
	}
	for _, key := range []string{uiMetaKey, flatResourceURIMetaKey} {
		if _, taken := members[key]; taken {
			return tool, fmt.Errorf("linking tool %q: its _meta has %q already", tool.Name, key)
		}
	}
	if members[uiMetaKey], err = marshalJSON(ui); err != nil {
		return tool, fmt.Errorf("linking tool %q: %w", tool.Name, err)
	}
	if ui.ResourceURI != "" {
		members[flatResourceURIMetaKey], _ = marshalJSON(ui.ResourceURI) // a string always encodes
	}
	if tool.Meta, err = marshalJSON(members); err != nil {
		return tool, fmt.Errorf("linking tool %q: %w", tool.Name, err)
	}
	return tool, nil
}

// check validates the link's fields.
func (ui ToolUI) check() error {
	if ui.ResourceURI != "" {
		if err := checkAppURI(ui.ResourceURI); err != nil {
			return fmt.Errorf("resourceUri: %w", err)
		}
	}
	if ui.Visibility == nil {
		return nil
	}
	if len(ui.Visibility) == 0 {
		return errors.New(`visibility is empty: list "model", "app" or both, or leave it out for both`)
	}
	for i, v := range ui.Visibility {
		if v != VisibleToModel && v != VisibleToApp {
			return fmt.Errorf(`visibility %q is neither "model" nor "app"`, v)
		}
		if slices.Contains(ui.Visibility[:i], v) {
			return fmt.Errorf("visibility lists %q twice", v)
		}
	}
	return nil
}

// metaMembers decodes a _meta object (nil for none) into its members.
func metaMembers(meta json.RawMessage) (map[string]json.RawMessage, error) {
	members := map[string]json.RawMessage{}
	if meta == nil {
		return members, nil
	}
	if !isJSONObjectText(meta) || json.Unmarshal(meta, &members) != nil {
		return nil, errors.New("_meta must be a JSON object")
	}
	return members, nil
}

// checkAppURI checks that uri names an app: ui:// and a name.
func checkAppURI(uri string) error {
	if !strings.HasPrefix(uri, appURIPrefix) || len(uri) == len(appURIPrefix) {
		return fmt.Errorf("%q is not a ui:// URI", uri)
	}
	if _, err := url.Parse(uri); err != nil {
		return fmt.Errorf("%q is not a URI", uri)
	}
	return nil
}

// AddApp serves app: resources/list lists it, with AppMIMEType and its
// _meta.ui, and resources/read answers its page, with the same MIME type and
// _meta.ui. From the first AddApp on, the Runtime declares AppsExtension in
// its capabilities while it serves an app, and AddTool checks the app link
// of every tool it registers (LinkApp): the app named must be served, and a
// link given only in the deprecated _meta["ui/resourceUri"] or only in
// _meta.ui.resourceUri gets the other. A tool registered before the first
// AddApp is not checked.
//
// AddApp fails for a URI that is not ui://, an empty name, HTML that is not
// an HTML5 document in UTF-8, an origin of UI.CSP that is not
// scheme://host[:port], a UI.Domain with blanks or control characters, or a
// URI already registered (as any resource).
func (rt *Runtime) AddApp(app App) error {
	entry, err := newAppEntry(app)
	if err != nil {
		return fmt.Errorf("adding app %q: %w", app.URI, err)
	}
	rt.setToolCheck(AppsExtension, rt.checkAppLink)
	rt.mu.Lock()
	added := rt.cat.resources.add(app.URI, entry)
	if added {
		rt.declareExtension(AppsExtension, json.RawMessage(appsSettings))
	}
	rt.mu.Unlock()
	if !added {
		return fmt.Errorf("adding app %q: a resource with that URI is already registered", app.URI)
	}
	rt.AnnounceListChanged(ResourcesChanged)
	return nil
}

// appsSettings are the settings a Runtime declares the extension with.
const appsSettings = `{"` + mimeTypesKey + `":["` + AppMIMEType + `"]}`

// RemoveApp stops serving the app at uri. It fails, and removes nothing,
// when no app is served at uri or a registered tool links to it (remove
// those tools first). RemoveResource removes an app too, without that check.
func (rt *Runtime) RemoveApp(uri string) error {
	rt.mu.Lock()
	if e := rt.cat.resources.byKey[uri]; e == nil || !isAppResource(e.resource) {
		rt.mu.Unlock()
		return fmt.Errorf("removing app %q: no app is served at that URI", uri)
	}
	var linked []string
	for _, e := range rt.cat.tools.list {
		if link, _ := toolAppURI(e.tool.Meta); link == uri {
			linked = append(linked, e.tool.Name)
		}
	}
	if linked != nil {
		rt.mu.Unlock()
		return fmt.Errorf("removing app %q: tools link to it: %s", uri, strings.Join(linked, ", "))
	}
	rt.cat.resources.remove(uri)
	if !slices.ContainsFunc(rt.cat.resources.list, func(e *resourceEntry) bool { return isAppResource(e.resource) }) {
		rt.declareExtension(AppsExtension, nil)
	}
	rt.mu.Unlock()
	rt.AnnounceListChanged(ResourcesChanged)
	return nil
}

// isAppResource reports whether r is an app's resource.
func isAppResource(r Resource) bool {
	return strings.HasPrefix(r.URI, appURIPrefix) && r.MIMEType == AppMIMEType
}

// newAppEntry checks app and returns its resource entry, whose handler
// serves the page.
func newAppEntry(app App) (*resourceEntry, error) {
	if err := checkAppURI(app.URI); err != nil {
		return nil, err
	}
	if app.Name == "" {
		return nil, errors.New("a name is required")
	}
	if !utf8.ValidString(app.HTML) {
		return nil, errors.New("the HTML is not valid UTF-8")
	}
	if !startsWithHTML5Doctype(app.HTML) {
		return nil, errors.New("the HTML is not an HTML5 document: it must start with <!DOCTYPE html>")
	}
	if err := app.UI.check(); err != nil {
		return nil, err
	}
	ui, err := marshalJSON(app.UI)
	if err != nil {
		return nil, fmt.Errorf("encoding _meta.ui: %w", err)
	}
	var meta json.RawMessage
	if string(ui) != "{}" {
		meta, _ = marshalJSON(map[string]json.RawMessage{uiMetaKey: ui}) // ui is valid JSON
	}
	contents := []ResourceContents{{URI: app.URI, MIMEType: AppMIMEType, Text: app.HTML, Meta: meta}}
	return &resourceEntry{
		resource: Resource{
			URI: app.URI, Name: app.Name, Title: app.Title, Description: app.Description,
			MIMEType: AppMIMEType, Size: int64(len(app.HTML)), Icons: slices.Clone(app.Icons), Meta: meta,
		},
		handler: func(context.Context, *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: slices.Clone(contents)}, nil
		},
	}, nil
}

// check validates the origins and the domain.
func (u AppUI) check() error {
	for _, list := range []struct {
		name    string
		origins []string
	}{
		{"connectDomains", u.CSP.ConnectDomains},
		{"resourceDomains", u.CSP.ResourceDomains},
		{"frameDomains", u.CSP.FrameDomains},
		{"baseUriDomains", u.CSP.BaseURIDomains},
	} {
		for _, origin := range list.origins {
			if !isCSPOrigin(origin) {
				return fmt.Errorf("_meta.ui.csp.%s: %q is not scheme://host[:port] with scheme http, https, ws or wss", list.name, origin)
			}
		}
	}
	if strings.ContainsFunc(u.Domain, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("_meta.ui.domain %q holds blanks or control characters", u.Domain)
	}
	return nil
}

// isCSPOrigin reports whether s is an origin a CSP source list may hold:
// scheme://host[:port], the host optionally starting with "*.".
func isCSPOrigin(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return false
	}
	host := strings.TrimPrefix(u.Hostname(), "*.")
	if strings.HasPrefix(u.Host, "[") { // an IPv6 literal, which url.Parse checked
		return host != ""
	}
	return host != "" && !strings.ContainsFunc(host, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-')
	})
}

// startsWithHTML5Doctype reports whether html starts with the HTML5 doctype,
// <!DOCTYPE html> (in any case, blanks allowed, or with SYSTEM
// "about:legacy-compat"), after a byte order mark, blanks and comments.
func startsWithHTML5Doctype(html string) bool {
	rest := strings.TrimPrefix(html, "\ufeff")
	for {
		rest = strings.TrimLeft(rest, " \t\n\f\r")
		comment, found := strings.CutPrefix(rest, "<!--")
		if !found {
			break
		}
		_, after, closed := strings.Cut(comment, "-->")
		if !closed {
			return false
		}
		rest = after
	}
	const doctype = "<!doctype"
	if len(rest) < len(doctype) || !strings.EqualFold(rest[:len(doctype)], doctype) {
		return false
	}
	rest = rest[len(doctype):]
	name := strings.TrimLeft(rest, " \t\n\f\r")
	if len(name) == len(rest) || len(name) < len("html") || !strings.EqualFold(name[:len("html")], "html") {
		return false
	}
	// The doctype ends there, or says SYSTEM "about:legacy-compat" first.
	after := strings.TrimLeft(name[len("html"):], " \t\n\f\r")
	if len(after) > len("system") && strings.EqualFold(after[:len("system")], "system") {
		system := strings.TrimLeft(after[len("system"):], " \t\n\f\r")
		if len(system) == len(after)-len("system") {
			return false // no blank after SYSTEM
		}
		for _, quoted := range []string{`"about:legacy-compat"`, `'about:legacy-compat'`} {
			if rest, ok := strings.CutPrefix(system, quoted); ok {
				after = strings.TrimLeft(rest, " \t\n\f\r")
			}
		}
	}
	return strings.HasPrefix(after, ">")
}

// checkAppLink is the extension's rule for the tools AddTool registers (see
// AddApp). The caller holds rt.mu.
func (rt *Runtime) checkAppLink(tool *Tool) error {
	if tool.Meta == nil {
		return nil
	}
	members, err := metaMembers(tool.Meta)
	if err != nil {
		return err
	}
	uiRaw, hasUI := members[uiMetaKey]
	flatRaw, hasFlat := members[flatResourceURIMetaKey]
	if !hasUI && !hasFlat {
		return nil
	}
	ui := map[string]json.RawMessage{}
	if hasUI && (!isJSONObject(uiRaw) || json.Unmarshal(uiRaw, &ui) != nil) {
		return errors.New("_meta.ui must be a JSON object")
	}
	var link ToolUI
	if raw, ok := ui[resourceURIKey]; ok {
		if link.ResourceURI, ok = decodeString(raw); !ok {
			return errors.New("_meta.ui.resourceUri must be a string")
		}
	}
	if raw, ok := ui[visibilityKey]; ok {
		if json.Unmarshal(raw, &link.Visibility) != nil || link.Visibility == nil {
			return errors.New("_meta.ui.visibility must be an array of strings")
		}
	}
	if err := link.check(); err != nil {
		return fmt.Errorf("_meta.ui.%w", err)
	}
	changed := false
	if hasFlat {
		flat, ok := decodeString(flatRaw)
		if !ok {
			return fmt.Errorf("_meta[%q] must be a string", flatResourceURIMetaKey)
		}
		switch {
		case link.ResourceURI == "":
			if err := checkAppURI(flat); err != nil {
				return fmt.Errorf("_meta[%q]: %w", flatResourceURIMetaKey, err)
			}
			link.ResourceURI, ui[resourceURIKey], changed = flat, flatRaw, true
			members[uiMetaKey], _ = marshalJSON(ui) // its members are valid JSON
		case flat != link.ResourceURI:
			return fmt.Errorf("_meta[%q] is %q, but _meta.ui.resourceUri is %q", flatResourceURIMetaKey, flat, link.ResourceURI)
		}
	}
	if link.ResourceURI == "" {
		return nil
	}
	if e := rt.cat.resources.byKey[link.ResourceURI]; e == nil || !isAppResource(e.resource) {
		return fmt.Errorf("_meta.ui.resourceUri %q names no app this server serves (AddApp it before the tool)", link.ResourceURI)
	}
	if !hasFlat {
		members[flatResourceURIMetaKey], _ = marshalJSON(link.ResourceURI)
		changed = true
	}
	if changed {
		if tool.Meta, err = marshalJSON(members); err != nil {
			return fmt.Errorf("encoding _meta: %w", err)
		}
	}
	return nil
}

// toolAppURI returns the URI of the app a tool's _meta links it to, "" for
// none: _meta.ui.resourceUri, else the deprecated flat key.
func toolAppURI(meta json.RawMessage) (string, bool) {
	if !isJSONObject(meta) {
		return "", false
	}
	if ui := jsonObject(meta).get(uiMetaKey); isJSONObject(ui) {
		if uri, ok := decodeString(jsonObject(ui).get(resourceURIKey)); ok {
			return uri, true
		}
	}
	return decodeString(jsonObject(meta).get(flatResourceURIMetaKey))
}

// ClientAppMIMETypes returns the MIME types of the apps the client renders:
// the mimeTypes of its io.modelcontextprotocol/ui extension capability, as
// initialize declared it in the initialize era (or the request's own _meta
// client capabilities), as the request's _meta declares it in 2026-07-28.
// nil when the client declared none.
func (r *HandlerRequest) ClientAppMIMETypes() []string {
	settings := extensionSettings(r.ClientCapabilities, AppsExtension)
	if settings == nil {
		settings = extensionSettings(jsonObject(r.Meta).get(metaKeyClientCapabilities), AppsExtension)
	}
	var types []string
	for _, raw := range arrayElements(jsonObject(settings).get(mimeTypesKey)) {
		if t, ok := decodeString(raw); ok {
			types = append(types, t)
		}
	}
	return types
}

// ClientRendersApps reports whether the client renders apps of AppMIMEType
// (its ClientAppMIMETypes list that type, parameters compared as MIME does),
// so that a tool may return what only its app shows, beside the content
// every client gets.
func (r *HandlerRequest) ClientRendersApps() bool {
	return slices.ContainsFunc(r.ClientAppMIMETypes(), func(t string) bool {
		mediaType, params, err := mime.ParseMediaType(t)
		return err == nil && mediaType == "text/html" && params["profile"] == "mcp-app"
	})
}
