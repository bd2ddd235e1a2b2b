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
	// Every child of this process is started by stdiohost, the condition
	// for reaping the orphans it inherits (see stdiohost.AdoptOrphans); the
	// test binary, which calls run too, starts children of its own.
	adoptOrphans = true
	if code, ok := runService(os.Args[1:]); ok {
		os.Exit(code) // ran as a Windows service
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
