// Package stdiohost runs an MCP stdio server as a child process and owns its
// lifetime.
//
// A [Host] starts the child in its own process group with three pipes. One
// goroutine reads the child's stdout, one message per line (package lineio),
// and hands each message to a callback; a second goroutine turns stderr
// lines into log records; a third waits for the process. Writes to the
// child's stdin are serialized, one line per message.
//
// [Host.Close] follows the shutdown sequence of the MCP stdio transport
// (2026-07-28 stdio §Shutdown, 2025-11-25 lifecycle §stdio): close the
// child's stdin, wait for it to exit, then SIGTERM, wait, then SIGKILL. The
// signals go to the whole process group, so grandchildren die with the
// child. When the child exits on its own, whatever is left of its group is
// terminated too.
//
// A [Supervisor] restarts a child that exits unexpectedly, with exponential
// backoff that resets once a child has stayed up.
//
// The package does not know JSON-RPC and never touches the bridge's own
// stdin, stdout or stderr.
package stdiohost
