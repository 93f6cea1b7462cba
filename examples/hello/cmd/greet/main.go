// Command greet is a complete MCP server: one typed tool, served on
// stdin/stdout.
package main

// region greet
import (
	"context"
	"log"
	"os"

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
	// Serve returns nil once stdin ends and every request is answered.
	if err := mcp.Serve(context.Background(), rt, mcp.Options{Input: os.Stdin, Output: os.Stdout}); err != nil {
		log.Fatal(err)
	}
}

// endregion greet
