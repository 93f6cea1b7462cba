package main

import (
	"encoding/json"
	"slices"
	"strconv"
)

// What each protocol version defines, where versions differ, and the shaping
// of results to it. The table is dialectOf; everything that depends on the
// version asks it, so that a version is added or changed in one place. The
// facts come from each version's schema (schema/<version>/schema.ts of the
// MCP specification) and its changelog.

// dialect is what one protocol version defines where versions differ. The
// zero value is an unknown version.
type dialect struct {
	known bool
	// stateless: every request carries its version in params._meta and
	// there is no initialize (2026-07-28).
	stateless bool
	// streamableHTTP: the version defines the Streamable HTTP transport
	// (from 2025-03-26; 2024-11-05 had HTTP+SSE, which this package does not
	// serve). See carriedBy.
	streamableHTTP bool
	// batches: a client may send a JSON-RPC batch, an array of requests and
	// notifications, answered by one array of responses (2025-03-26 only;
	// 2025-06-18 removed them). Every other version answers a batch -32600.
	batches bool
	// ssePriming: a Streamable HTTP SSE stream opens with an event that
	// carries only an id and the retry field, so that a client can resume
	// it at once (SEP-1699, from 2025-11-25).
	ssePriming bool

	// What results, notifications and capabilities may carry. Each flag
	// says the version's schema defines the field or content type; shaping
	// leaves out, or replaces, what it does not.
	toolAnnotations   bool // Tool.annotations (2025-03-26)
	audioContent      bool // audio content blocks (2025-03-26)
	completionsCap    bool // ServerCapabilities.completions (2025-03-26)
	progressMessage   bool // notifications/progress message (2025-03-26)
	titles            bool // title of Implementation, Tool, Resource, ResourceTemplate, Prompt, PromptArgument (2025-06-18)
	structuredContent bool // Tool.outputSchema and CallToolResult.structuredContent (2025-06-18)
	resourceLinks     bool // resource_link content blocks (2025-06-18)
	entityMeta        bool // _meta of Tool, Resource, ResourceTemplate, ResourceContents, Prompt and content blocks (2025-06-18)
	lastModified      bool // Annotations.lastModified (2025-06-18)
	elicitation       bool // the elicitation/create request to the client (2025-06-18)
	icons             bool // icons of Implementation, Tool, Resource, ResourceTemplate and Prompt; Implementation description and websiteUrl (2025-11-25)
	toolExecution     bool // Tool.execution.taskSupport (2025-11-25 only: 2026-07-28's Tool has no such field; the tasks extension, tasks.go)
}

// dialectOf returns what version v defines; the zero dialect for a version
// this package does not speak. Each version lists what it has, so that
// reading one line tells what a client of that version is sent.
func dialectOf(v string) dialect {
	switch v {
	case ProtocolVersion20241105:
		return dialect{known: true}
	case ProtocolVersion20250326:
		return dialect{known: true, streamableHTTP: true, batches: true,
			toolAnnotations: true, audioContent: true, completionsCap: true, progressMessage: true}
	case ProtocolVersion20250618:
		return dialect{known: true, streamableHTTP: true,
			toolAnnotations: true, audioContent: true, completionsCap: true, progressMessage: true,
			titles: true, structuredContent: true, resourceLinks: true, entityMeta: true, lastModified: true, elicitation: true}
	case ProtocolVersion20251125:
		return dialect{known: true, streamableHTTP: true, ssePriming: true,
			toolAnnotations: true, audioContent: true, completionsCap: true, progressMessage: true,
			titles: true, structuredContent: true, resourceLinks: true, entityMeta: true, lastModified: true, elicitation: true,
			icons: true, toolExecution: true}
	case ProtocolVersion20260728:
		return dialect{known: true, stateless: true, streamableHTTP: true, ssePriming: true,
			toolAnnotations: true, audioContent: true, completionsCap: true, progressMessage: true,
			titles: true, structuredContent: true, resourceLinks: true, entityMeta: true, lastModified: true, elicitation: true,
			icons: true}
	}
	return dialect{}
}

// definesClientRequest reports whether the version defines method, a
// server-to-client request (ask.go): elicitation arrived in 2025-06-18;
// sampling and roots are in every version.
func (d dialect) definesClientRequest(method string) bool {
	return method != MethodElicit || d.elicitation
}

// acceptsBatches reports whether protocol version v lets a client send
// JSON-RPC batches (only 2025-03-26 does). A transport answers a batch in a
// session of another version, or before initialize, -32600.
func acceptsBatches(v string) bool { return dialectOf(v).batches }

// TransportStreamableHTTP is the Request.Transport of a message that arrived
// over Streamable HTTP.
const TransportStreamableHTTP = "streamable-http"

// carriedBy reports whether the version is served on transport (a
// Request.Transport): stdio carries every version; Streamable HTTP only those
// that define it. A 2024-11-05 client that POSTs initialize is answered
// another version, as for any version the server does not serve there.
func (d dialect) carriedBy(transport string) bool {
	return transport != TransportStreamableHTTP || d.streamableHTTP
}

// implementation returns the fields of i the version defines.
func (d dialect) implementation(i Implementation) Implementation {
	if !d.titles {
		i.Title = ""
	}
	if !d.icons {
		i.Description, i.WebsiteURL, i.Icons = "", "", nil
	}
	return i
}

// capabilities returns the server capabilities the version defines.
func (d dialect) capabilities(caps serverCapabilities) serverCapabilities {
	if !d.completionsCap {
		caps.Completions = nil
	}
	return caps
}

// tool returns the fields of t the version defines.
func (d dialect) tool(t Tool) Tool {
	d.entity(&t.Title, &t.Meta, &t.Icons)
	if !d.toolAnnotations {
		t.Annotations = nil
	}
	if !d.structuredContent {
		t.OutputSchema = nil
	}
	if !d.toolExecution || t.Execution == nil || t.Execution.TaskSupport == "" {
		t.Execution = nil
	}
	return t
}

// resource returns the fields of r the version defines.
func (d dialect) resource(r Resource) Resource {
	d.entity(&r.Title, &r.Meta, &r.Icons)
	r.Annotations = d.annotations(r.Annotations)
	return r
}

// template returns the fields of t the version defines.
func (d dialect) template(t ResourceTemplate) ResourceTemplate {
	d.entity(&t.Title, &t.Meta, &t.Icons)
	t.Annotations = d.annotations(t.Annotations)
	return t
}

// prompt returns the fields of p the version defines.
func (d dialect) prompt(p Prompt) Prompt {
	if !d.titles {
		p.Title = ""
		if slices.ContainsFunc(p.Arguments, func(a PromptArgument) bool { return a.Title != "" }) {
			p.Arguments = slices.Clone(p.Arguments)
			for i := range p.Arguments {
				p.Arguments[i].Title = ""
			}
		}
	}
	d.entity(nil, &p.Meta, &p.Icons)
	return p
}

// entity clears what the version does not define of the fields tools,
// resources, templates and prompts share: the title (nil: the caller
// shapes it), _meta and icons.
func (d dialect) entity(title *string, meta *json.RawMessage, icons *[]Icon) {
	if !d.titles && title != nil {
		*title = ""
	}
	if !d.entityMeta {
		*meta = nil
	}
	if !d.icons {
		*icons = nil
	}
}

// annotations returns the fields of a the version defines; a is not
// modified.
func (d dialect) annotations(a *Annotations) *Annotations {
	if a == nil || d.lastModified || a.LastModified == "" {
		return a
	}
	c := *a
	c.LastModified = ""
	if c.Audience == nil && c.Priority == nil {
		return nil // nothing left: the block carries no annotations
	}
	return &c
}

// resourceContents returns the fields of rc the version defines.
func (d dialect) resourceContents(rc ResourceContents) ResourceContents {
	if !d.entityMeta {
		rc.Meta = nil
	}
	return rc
}

// shapesResults reports whether the version lacks any field or content type
// of results that this package sends, so that shaping has work to do.
func (d dialect) shapesResults() bool {
	return !(d.toolAnnotations && d.audioContent && d.titles && d.structuredContent && d.resourceLinks &&
		d.entityMeta && d.lastModified && d.icons)
}

// content returns block as the version defines it, and whether that differs
// from block. A block of a type the version does not have becomes a text
// block that says what it was, so that the reader still learns of it: a
// resource link names its URI (which resources/read reads in any version),
// audio its media type and size.
func (d dialect) content(block Content) (Content, bool) {
	if !d.shapesResults() {
		return block, false
	}
	switch {
	case block.Type == ContentResourceLink && block.Link != nil && !d.resourceLinks:
		text := "Resource link: " + block.Link.URI
		if block.Link.Name != "" {
			text += " (" + block.Link.Name + ")"
		}
		return TextContent(text), true
	case block.Type == ContentResourceLink && block.Link != nil:
		link := d.resource(*block.Link)
		block.Link = &link
		return block, true
	case block.Type == ContentAudio && !d.audioContent:
		return TextContent("[audio content omitted: " + block.MIMEType + ", " + strconv.Itoa(len(block.Data)) +
			" bytes; this protocol version has no audio content]"), true
	}
	changed := false
	if block.Meta != nil && !d.entityMeta {
		block.Meta, changed = nil, true
	}
	if a := d.annotations(block.Annotations); a != block.Annotations {
		block.Annotations, changed = a, true
	}
	if block.Resource != nil && block.Resource.Meta != nil && !d.entityMeta {
		rc := d.resourceContents(*block.Resource)
		block.Resource, changed = &rc, true
	}
	return block, changed
}

// contents returns blocks as the version defines them: blocks itself when
// none needs a change, else a new slice.
func (d dialect) contents(blocks []Content) []Content {
	var out []Content
	for i, block := range blocks {
		shaped, changed := d.content(block)
		if out == nil && changed {
			out = slices.Clone(blocks[:i:i])
		}
		if out != nil {
			out = append(out, shaped)
		}
	}
	if out == nil {
		return blocks
	}
	return out
}

// promptMessages returns messages as the version defines them: messages
// itself when none needs a change, else a new slice.
func (d dialect) promptMessages(messages []PromptMessage) []PromptMessage {
	var out []PromptMessage
	for i, m := range messages {
		shaped, changed := d.content(m.Content)
		if out == nil && changed {
			out = slices.Clone(messages[:i:i])
		}
		if out != nil {
			out = append(out, PromptMessage{Role: m.Role, Content: shaped})
		}
	}
	if out == nil {
		return messages
	}
	return out
}
