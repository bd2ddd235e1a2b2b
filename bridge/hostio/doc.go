// Package hostio is the stdio host as a peer: newline-delimited JSON-RPC
// read from the host's stdin and written to its stdout, for connect (the
// bridge a stdio-only host launches as its "server").
//
// A Host owns the mechanics of that end and nothing of the protocol
// beyond the line: the stdin reader, which hands each line to the
// caller's handle on the reader goroutine and answers a line too long to
// read with an error under its request's id (lineid.go); the serialized
// stdout writer, which keeps every message on one line; the bounded pool
// of kept goroutines the host's requests run on (workers.go) and their
// drain at shutdown; the order in which the host's notifications and
// responses are sent on (InOrder); the splitting of a batch into its
// messages; and the gate on the bridge's own log notifications (no
// notification before the host's notifications/initialized, notice.go).
//
// What a message means — the table of the host's requests in flight, the
// strategy that relays them, the routing of the remote's answers — is the
// caller's (bridge/connect), wired to the Host through Config and the
// handle function given to Run.
package hostio
