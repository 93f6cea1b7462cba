package main

import (
	"context"
	"errors"
	"strings"

	"example.com/hello/mcp"
)

// region server
// greetIn and greetOut are the greet tool's arguments and result; its input
// and output schemas are inferred from them.
type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greet(_ context.Context, _ *mcp.HandlerRequest, in greetIn) (greetOut, error) {
	if strings.TrimSpace(in.Name) == "" {
		return greetOut{}, errors.New("name is empty") // the client gets a result with isError true
	}
	return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
}

func motd(context.Context, *mcp.HandlerRequest) (*mcp.ResourceResult, error) {
	return &mcp.ResourceResult{Contents: []mcp.ResourceContents{{MIMEType: "text/plain", Text: "Be kind."}}}, nil
}

func welcome(_ context.Context, req *mcp.HandlerRequest) (*mcp.PromptResult, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return &mcp.PromptResult{Messages: []mcp.PromptMessage{
		{Role: "user", Content: mcp.TextContent("Write a warm welcome for " + args.Name + ".")},
	}}, nil
}

// newServer returns the server's runtime, its catalog registered.
func newServer() (*mcp.Runtime, error) {
	rt, err := mcp.NewRuntime(mcp.RuntimeOptions{ServerInfo: mcp.Implementation{Name: "hello", Version: "1.0.0"}})
	if err != nil {
		return nil, err
	}
	return rt, errors.Join(
		mcp.AddTypedTool(rt, mcp.Tool{Name: "greet", Description: "Greets someone by name"}, greet),
		rt.AddResource(mcp.Resource{URI: "hello://motd", Name: "motd", Description: "Message of the day"}, motd),
		rt.AddPrompt(mcp.Prompt{Name: "welcome", Description: "Welcomes someone",
			Arguments: []mcp.PromptArgument{{Name: "name", Required: true}}}, welcome),
	)
}

// endregion server
