// Command lineecho is the limit of a Go MCP server over stdio: it answers
// each line of stdin with a canned MCP answer that carries the request's id
// (and a tools/call's text, copied byte for byte), found by a byte scan
// with no JSON decoding; it reads 1 MiB at a time and writes the answers to
// the lines of one read in one write. It exits 0 at the end of its input.
// go run ./bench/limits compares the server with it.
package main

import (
	"fmt"
	"os"

	"mcpstdio/internal/cannedecho"
)

func main() {
	if err := cannedecho.ServeLines(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lineecho:", err)
		os.Exit(1)
	}
}
