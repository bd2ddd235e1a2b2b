// Package lineio frames newline-delimited messages, the wire format of the
// MCP stdio transport.
//
// 2026-07-28 stdio §Message format: "Messages are delimited by newlines, and
// MUST NOT contain embedded newlines." A [Reader] returns one line per call
// with its terminator ("\n" or "\r\n") removed, and a line over its limit is
// skipped with a [TooLongError] that keeps the line's two ends; a [Writer]
// writes each message plus "\n" whole (concurrent callers' messages are
// combined into one write, never interleaved) and refuses messages that
// contain a newline.
//
// The package knows nothing about JSON-RPC, starts no goroutines and does not
// log. A blocked [Reader.Read] ends only when the underlying reader returns,
// so callers that need to interrupt a read close the underlying file or pipe.
package lineio
