package serve

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Draining a replica behind a load balancer happens in three steps, each a
// method of Handler, called in this order by the process that serves it
// (cmd/mcp-bridge on SIGTERM with --drain-delay):
//
//  1. BeginDrain: /readyz answers 503, so health-checking balancers stop
//     sending new work here; every request is still served.
//  2. Refuse: new work gets 503 (a balancer retries it elsewhere), and
//     subscriptions/listen streams end so their clients re-listen on
//     another replica; a live 2025 session keeps working, because its
//     child and state exist only here. SessionsEnded tells when the last one
//     has ended (DELETE, idle timeout, its child exiting).
//  3. BeginShutdown, then Close, as for any shutdown.

// ErrReplicaID is returned by New for a Config.ReplicaID that cannot be a
// session id prefix.
var ErrReplicaID = errors.New("serve: the replica id must be 1-63 letters, digits, '-' or '_'")

// HeaderReplica names the replica that answered, when Config.ReplicaID is
// set: clients and tests can see which replica a balancer chose.
const HeaderReplica = "Mcp-Bridge-Replica"

var replicaIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// ValidReplicaID reports whether id can prefix session ids: visible ASCII
// (2025-11-25 transports: the session ID "MUST only contain visible ASCII
// characters (ranging from 0x21 to 0x7E)") without the '.' that separates
// it from the random part, so "ID." is an unambiguous prefix to match.
func ValidReplicaID(id string) bool { return replicaIDRE.MatchString(id) }

// BeginDrain makes /readyz answer 503 from now on; nothing else changes.
func (h *Handler) BeginDrain() { h.draining.Fire() }

// Refuse stops taking new work: requests get 503 with Retry-After, except
// those of a live 2025 session, and listen streams end. It implies
// BeginDrain.
func (h *Handler) Refuse() {
	h.BeginDrain()
	h.refusing.Fire()
}

// SessionsEnded returns a channel closed once no 2025 session is left.
// After Refuse no new one can start, so it stays that way.
func (h *Handler) SessionsEnded() <-chan struct{} { return h.sessions.whenEmpty() }

// refused answers 503 to a request that a draining or stopping Handler no
// longer takes, and reports whether it did.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request) bool {
	select {
	case <-h.closing.Done():
	case <-h.refusing.Done():
		if sid := r.Header.Get(wire.HeaderSessionID); sid != "" && h.sessions.lookup(sid) != nil {
			return false
		}
	default:
		return false
	}
	// A load balancer retries a 503 on another replica (examples/deploy).
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, nil, wire.CodeInternalError, "mcp-bridge is shutting down", nil)
	return true
}
