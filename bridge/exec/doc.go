// Package exec is `mcp-bridge exec`: a stdio MCP server whose tools are
// command-line programs declared in a JSON tools file (docs/exec.md).
//
// The rules that make it safe hold in code, not in the file's goodwill:
// no shell ever runs (the program is started directly with an argv built
// element by element, and an interpreter as a tool's command must be
// declared as one); the program's path is resolved once, at load; every
// call's arguments are validated against the tool's inputSchema before
// anything runs, and a value that would read as an option is refused; the
// program's environment holds only what the tool lists; its working
// directory is fixed; its time, its output and the number of its
// concurrent runs are bounded; and when it ends, is timed out or is
// cancelled, everything it started ends with it (stdiohost.Run: a process
// group or Job Object).
//
// Files: file.go (the tools file), schema.go (the inputSchema subset),
// argv.go (argv from templates), run.go (one execution), result.go (the
// tools/call result), server.go and call.go (the MCP answering, both
// eras).
package exec
