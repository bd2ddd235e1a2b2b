package serve

import (
	"sync"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Who the clients are, in the logs: an operator asking "which hosts use
// this server, and which protocol do they speak?" reads it here. A 2025
// session says it once, at INFO, when its handshake is done; a 2026-07-28
// client has no session and names itself on every request, so its first
// request is logged at DEBUG.

// A clientID is what a client says about itself: clientInfo's name and
// version (the initialize params, or a 2026-07-28 request's _meta).
type clientID struct{ name, version string }

// clientOf reads clientInfo from an object span of m (params or _meta)
// under key.
func clientOf(m *wire.Message, obj wire.Span, key string) clientID {
	if !obj.Present() {
		return clientID{}
	}
	info, ok := wire.Field(m.Raw, obj, key)
	if !ok {
		return clientID{}
	}
	name, _ := wire.StringField(m.Raw, info, "name")
	version, _ := wire.StringField(m.Raw, info, "version")
	return clientID{name, version}
}

// initializeClient is the client of a 2025 initialize request.
func initializeClient(m *wire.Message) clientID { return clientOf(m, m.Params, "clientInfo") }

// logStarted is a 2025 session's one line about its client, once its
// protocol version is settled.
func (s *session) logStarted(c clientID) {
	s.mu.Lock()
	version := s.version
	s.mu.Unlock()
	s.log.Info().Str("client", c.name).Str("client_version", c.version).Str("protocol_version", version).
		Bool("translated", s.tr != nil).Msg("session started")
}

// maxClientsSeen bounds the set of 2026-07-28 clients already logged; when
// full it starts over, which only logs a client's first request again.
const maxClientsSeen = 1024

// clientsSeen remembers which 2026-07-28 clients have been logged. The
// zero value is ready to use.
type clientsSeen struct {
	mu   sync.Mutex
	seen map[clientKey]struct{}
}

type clientKey struct {
	principal string
	client    clientID
	protocol  string
}

// first logs a 2026-07-28 request at DEBUG if it is the first one of its
// client (principal, clientInfo and protocol version).
func (cs *clientsSeen) first(log zerolog.Logger, who auth.Principal, m *wire.Message) {
	e := log.Debug()
	if !e.Enabled() {
		return
	}
	k := clientKey{who.String(), clientOf(m, m.Meta, wire.MetaClientInfo), m.ProtocolVersion}
	cs.mu.Lock()
	_, old := cs.seen[k]
	if !old {
		if cs.seen == nil || len(cs.seen) >= maxClientsSeen {
			cs.seen = make(map[clientKey]struct{})
		}
		cs.seen[k] = struct{}{}
	}
	cs.mu.Unlock()
	if old {
		e.Discard()
		return
	}
	e.Str("principal", k.principal).Str("client", k.client.name).Str("client_version", k.client.version).Str("protocol_version", k.protocol).
		Str("method", m.Method).Msg("first request of a 2026-07-28 client")
}
