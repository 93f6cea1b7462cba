package main

import (
	"encoding/json"
	"fmt"
)

// Implementation describes the server (or a client) software.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
	// Title is sent from 2025-06-18 on; Description, WebsiteURL and Icons
	// from 2025-11-25 on. An answer in an older version omits them.
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an image a client may show for a server, tool, resource or prompt.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"` // "light" or "dark"
}

// Annotations are hints to the client about a content block or resource.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"` // "user", "assistant"
	Priority     *float64 `json:"priority,omitempty"` // 0 (optional) to 1 (required)
	LastModified string   `json:"lastModified,omitempty"`
}

// Content types of a content block.
const (
	ContentText             = "text"
	ContentImage            = "image"
	ContentAudio            = "audio"
	ContentResourceLink     = "resource_link"
	ContentEmbeddedResource = "resource"
)

// Content is one content block of a tool result or prompt message. Build it
// with TextContent, ImageContent, AudioContent, ResourceLinkContent or
// EmbeddedResourceContent, then set Annotations or Meta if needed. Only the
// fields of its Type are sent; an unknown Type fails to marshal, which the
// runtime answers -32603 "Internal error". A client of a version without
// the block's type gets a text block in its place (a resource link before
// 2025-06-18, audio before 2025-03-26), and Meta only
// from 2025-06-18 on.
type Content struct {
	Type     string
	Text     string            // text
	Data     []byte            // image, audio: raw bytes, sent base64-encoded
	MIMEType string            // image, audio
	Link     *Resource         // resource_link (its own Annotations and Meta are sent)
	Resource *ResourceContents // resource (embedded)

	Annotations *Annotations    // all types but resource_link
	Meta        json.RawMessage // a JSON object, or nil; all types but resource_link
}

// TextContent returns a text content block.
func TextContent(text string) Content { return Content{Type: ContentText, Text: text} }

// ImageContent returns an image content block of raw image bytes.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MIMEType: mimeType}
}

// AudioContent returns an audio content block of raw audio bytes.
func AudioContent(data []byte, mimeType string) Content {
	return Content{Type: ContentAudio, Data: data, MIMEType: mimeType}
}

// ResourceLinkContent returns a link to a resource the client may read.
func ResourceLinkContent(r Resource) Content { return Content{Type: ContentResourceLink, Link: &r} }

// EmbeddedResourceContent returns a content block carrying a resource's
// contents inline.
func EmbeddedResourceContent(rc ResourceContents) Content {
	return Content{Type: ContentEmbeddedResource, Resource: &rc}
}

// MarshalJSON encodes the block with the fields its type defines.
func (c Content) MarshalJSON() ([]byte, error) {
	common := contentCommon{Annotations: c.Annotations, Meta: c.Meta}
	switch c.Type {
	case ContentText:
		return marshalJSON(struct {
			Type string `json:"type"`
			Text string `json:"text"`
			contentCommon
		}{c.Type, c.Text, common})
	case ContentImage, ContentAudio:
		return marshalJSON(struct {
			Type     string `json:"type"`
			Data     []byte `json:"data"`
			MIMEType string `json:"mimeType"`
			contentCommon
		}{c.Type, nonNilBytes(c.Data), c.MIMEType, common})
	case ContentResourceLink:
		if c.Link == nil {
			return nil, fmt.Errorf("resource_link content without Link")
		}
		return marshalJSON(struct {
			Type string `json:"type"`
			Resource
		}{c.Type, *c.Link})
	case ContentEmbeddedResource:
		if c.Resource == nil {
			return nil, fmt.Errorf("resource content without Resource")
		}
		return marshalJSON(struct {
			Type     string            `json:"type"`
			Resource *ResourceContents `json:"resource"`
			contentCommon
		}{c.Type, c.Resource, common})
	}
	return nil, fmt.Errorf("unknown content type %q", c.Type)
}

type contentCommon struct {
	Annotations *Annotations    `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// nonNilBytes makes empty data encode as "" rather than null.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ResourceContents is the content of a resource: text, or binary data when
// Blob is non-nil.
type ResourceContents struct {
	// URI defaults, in a resources/read answer, to the URI that was read.
	URI      string
	MIMEType string
	Text     string
	Blob     []byte // sent base64-encoded as "blob"; nil means text
	Meta     json.RawMessage
}

// MarshalJSON encodes {uri, mimeType?, text|blob, _meta?}.
func (rc ResourceContents) MarshalJSON() ([]byte, error) {
	type head struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
	}
	meta := rc.Meta
	if rc.Blob != nil {
		return marshalJSON(struct {
			head
			Blob []byte          `json:"blob"`
			Meta json.RawMessage `json:"_meta,omitempty"`
		}{head{rc.URI, rc.MIMEType}, rc.Blob, meta})
	}
	return marshalJSON(struct {
		head
		Text string          `json:"text"`
		Meta json.RawMessage `json:"_meta,omitempty"`
	}{head{rc.URI, rc.MIMEType}, rc.Text, meta})
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"` // "user" or "assistant"
	Content Content `json:"content"`
}
