// Command mcp-bridge carries the Model Context Protocol between stdio and
// Streamable HTTP, in both directions:
//
//	mcp-bridge connect [flags] URL           a remote MCP server as a local stdio server
//	mcp-bridge serve [flags] -- CMD [ARG...] a local stdio MCP server at an HTTP /mcp endpoint
//	mcp-bridge version
//
// Run "mcp-bridge help" for the flags. Logs always go to stderr; in connect
// mode stdout carries MCP messages only.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
