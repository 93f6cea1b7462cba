// Command greet is a complete MCP server: one typed tool, served on
// stdin/stdout.
package main

// region greet
import (
	"context"
	"log"

	"example.com/hello/mcp"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func main() {
	rt, err := mcp.NewRuntime(mcp.RuntimeOptions{ServerInfo: mcp.Implementation{Name: "greet", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	err = mcp.AddTypedTool(rt, mcp.Tool{Name: "greet", Description: "Greets someone"},
		func(ctx context.Context, req *mcp.HandlerRequest, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	// ServeStdio serves stdin and stdout, with deadlines on every write and
	// nothing else of the process writing into the protocol; it returns nil
	// once stdin ends and every request is answered.
	if err := mcp.ServeStdio(context.Background(), rt, mcp.Options{}); err != nil {
		log.Fatal(err)
	}
}

// endregion greet
