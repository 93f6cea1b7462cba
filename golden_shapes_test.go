package main

import (
	"context"
	"encoding/json"
	"errors"
)

// The shapes catalog serves the golden transcripts testdata/golden/
// shapes_<version>.jsonl: the same requests in each initialize-era version,
// against entries that set every field and content type some version lacks,
// so that each transcript shows exactly what its version is sent (see
// dialectOf).

// shapesIcons, shapesMeta and shapesAnnotations fill the optional fields of
// every entry.
func shapesIcons() []Icon {
	return []Icon{{Src: "https://example.com/shape.png", MIMEType: "image/png"}}
}

const shapesMeta = `{"example.com/shape":true}`

func shapesAnnotations() *Annotations {
	priority := 0.5
	return &Annotations{Audience: []string{"user"}, Priority: &priority, LastModified: "2025-01-02T03:04:05Z"}
}

// shapesLink is the resource a resource_link block points at.
func shapesLink() Resource {
	return Resource{URI: "test://shapes/doc", Name: "doc", Title: "Shapes Document", MIMEType: "text/plain",
		Annotations: shapesAnnotations(), Icons: shapesIcons(), Meta: json.RawMessage(shapesMeta)}
}

// shapesBlocks are content blocks of every type, each with every optional
// field set.
func shapesBlocks() []Content {
	text := TextContent("a text block")
	text.Annotations, text.Meta = shapesAnnotations(), json.RawMessage(shapesMeta)
	image := ImageContent([]byte("png"), "image/png")
	image.Annotations = shapesAnnotations()
	audio := AudioContent([]byte("wav"), "audio/wav")
	embedded := EmbeddedResourceContent(ResourceContents{URI: "test://shapes/doc", MIMEType: "text/plain", Text: "the document", Meta: json.RawMessage(shapesMeta)})
	embedded.Annotations = &Annotations{Audience: []string{"assistant"}}
	return []Content{text, image, audio, ResourceLinkContent(shapesLink()), embedded}
}

type shapesInput struct {
	Word string `json:"word" jsonschema:"a word to measure"`
}

type shapesOutput struct {
	Length int `json:"length"`
}

// registerShapesCatalog registers the shapes catalog on rt.
func registerShapesCatalog(rt *Runtime) error {
	readOnly := true
	measure := Tool{Name: "measure", Title: "Measure", Description: "Counts the bytes of a word",
		Annotations: &ToolAnnotations{Title: "Measure a word", ReadOnlyHint: &readOnly},
		Icons:       shapesIcons(), Meta: json.RawMessage(shapesMeta)}
	errs := []error{
		AddTypedTool(rt, measure, func(_ context.Context, _ *HandlerRequest, in shapesInput) (shapesOutput, error) {
			return shapesOutput{Length: len(in.Word)}, nil
		}),
		rt.AddTool(Tool{Name: "blocks", Description: "Returns a block of every content type, and structured content"},
			func(context.Context, *HandlerRequest) (*ToolResult, error) {
				return &ToolResult{Content: shapesBlocks(), StructuredContent: map[string]int{"blocks": 5}, Meta: json.RawMessage(shapesMeta)}, nil
			}),
		rt.AddTool(Tool{Name: "progress", Description: "Reports progress with a message"},
			func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				if err := req.ReportProgress(ctx, Progress{Progress: 1, Total: 2, Message: "half way"}); err != nil {
					return nil, err
				}
				return TextResult("done"), nil
			}),
		rt.AddTool(Tool{Name: "elicit", Description: "Asks the client for a name"},
			func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				_, err := req.Elicit(ctx, "name", map[string]any{"message": "Your name?", "requestedSchema": map[string]any{
					"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
				if errors.Is(err, ErrVersionLacksMethod) {
					return TextResult("elicitation is not defined here: " + err.Error()), nil
				}
				return nil, err
			}),
		rt.AddResource(shapesLink(), func(context.Context, *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{MIMEType: "text/plain", Text: "the document", Meta: json.RawMessage(shapesMeta)}}}, nil
		}),
		rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://shapes/{name}", Name: "named", Title: "Named Shape",
			Annotations: shapesAnnotations(), Icons: shapesIcons(), Meta: json.RawMessage(shapesMeta)},
			func(context.Context, *HandlerRequest) (*ResourceResult, error) { return nil, ErrResourceNotFound }),
		rt.AddPrompt(Prompt{Name: "review", Title: "Review", Description: "Reviews a document",
			Arguments: []PromptArgument{{Name: "style", Title: "Review style", Required: true}},
			Icons:     shapesIcons(), Meta: json.RawMessage(shapesMeta)},
			func(context.Context, *HandlerRequest) (*PromptResult, error) {
				var messages []PromptMessage
				for _, block := range shapesBlocks() {
					messages = append(messages, PromptMessage{Role: "user", Content: block})
				}
				return &PromptResult{Description: "A review", Messages: messages}, nil
			}),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return rt.AddPromptCompletion("review", "style", PrefixCompletion("brief", "thorough"))
}
