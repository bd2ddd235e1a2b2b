// Package stdiohost runs an MCP stdio server as a child process and owns its
// lifetime.
//
// A [Host] starts the child in its own process group (on Windows, a Job
// Object; tree_unix.go and tree_windows.go mirror each other) with three
// pipes. One goroutine reads the child's stdout, one message per line
// (package lineio), and hands each message to a callback; a second
// goroutine turns stderr lines into log records; a third waits for the
// process. Writes to the child's stdin are serialized, one line per message.
//
// [Host.Close] follows the shutdown sequence of the MCP stdio transport
// (2026-07-28 stdio §Shutdown, 2025-11-25 lifecycle §stdio): close the
// child's stdin, wait for it to exit, then SIGTERM, wait, then SIGKILL. The
// signals go to the whole process group, so grandchildren die with the
// child; on Windows the job is terminated instead, and it dies with the
// bridge however the bridge ends. When the child exits on its own, whatever
// is left of its group or job is terminated too. On Linux, [AdoptOrphans]
// reaches the descendants that left the group (setsid).
//
// [Run] applies the same lifetime rules to a command run to completion (a
// tool of `mcp-bridge exec`): its tree stopped when a context ends, what it
// left behind stopped when it exits, its output streamed to writers that
// bound what they keep.
//
// A [Supervisor] restarts a child that exits unexpectedly, with exponential
// backoff that resets once a child has stayed up.
//
// The package does not know JSON-RPC and never touches the bridge's own
// stdin, stdout or stderr.
package stdiohost
