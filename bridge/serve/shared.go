package serve

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// ModernVersion is the 2026-07-28 protocol revision, the one stateless
// clients send in every request's _meta.
const ModernVersion = "2026-07-28"

// probeMeta is the _meta envelope of the bridge's own requests to a child.
const probeMeta = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-bridge","version":"1"}}}`

// sharedChild is the one child that every modern (2026-07-28) client
// shares: the requests are stateless, so one process serves them all once
// ids, progress tokens and subscription ids are kept apart.
type sharedChild struct {
	h     *Handler
	conn  atomic.Pointer[childConn]
	tools toolCache

	mu        sync.Mutex
	ready     bool
	versions  []string // supportedVersions from the child's server/discover
	lastError string
}

func newSharedChild(h *Handler) *sharedChild { return &sharedChild{h: h} }

func (s *sharedChild) run(ctx context.Context) {
	sup := &stdiohost.Supervisor{
		Start:          s.launch,
		OnExit:         s.exited,
		InitialBackoff: s.h.cfg.RestartBackoff,
		Logger:         s.h.log,
	}
	sup.Run(ctx)
	if c := s.conn.Swap(nil); c != nil {
		c.failAll("mcp-bridge is shutting down", nil)
	}
}

func (s *sharedChild) launch() (*stdiohost.Host, error) {
	conn := newChildConn(&s.h.ids, s, s.h.log.With().Str("child", "shared").Logger())
	host, err := startHost(s.h, conn)
	if err != nil {
		s.setState(false, nil, err.Error())
		return nil, err
	}
	s.conn.Store(conn)
	s.probe(conn)
	return host, nil
}

// probe asks a new child for its server/discover result: the versions it
// supports (for -32022 answers) and that it answers at all (/readyz).
func (s *sharedChild) probe(conn *childConn) {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.cfg.probeTimeout())
	defer cancel()
	resp, err := conn.request(ctx, "server/discover", []byte(probeMeta))
	if err != nil {
		s.setState(false, nil, "MCP server did not answer server/discover: "+err.Error())
		return
	}
	var versions []string
	if resp.Result.Present() {
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
			Capabilities      struct {
				Tools *struct{} `json:"tools"`
			} `json:"capabilities"`
		}
		if json.Unmarshal(resp.Bytes(resp.Result), &r) == nil {
			versions = r.SupportedVersions
			if r.Capabilities.Tools != nil {
				s.tools.prefetch(ctx, conn)
			}
		}
	}
	s.setState(true, versions, "")
	s.h.log.Info().Strs("versions", versions).Msg("MCP server ready")
}

func (s *sharedChild) setState(ready bool, versions []string, reason string) {
	s.mu.Lock()
	s.ready, s.lastError = ready, reason
	if versions != nil {
		s.versions = versions
	}
	s.mu.Unlock()
}

func (s *sharedChild) exited(host *stdiohost.Host) {
	s.setState(false, nil, "MCP server process exited; restarting")
	if c := s.conn.Swap(nil); c != nil {
		c.failAll("mcp-bridge: the MCP server process exited", host.Err())
	}
}

// notReady returns why /readyz should fail, or "".
func (s *sharedChild) notReady() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready {
		return ""
	}
	if s.lastError != "" {
		return s.lastError
	}
	return "MCP server starting"
}

// supported returns the modern versions the child supports.
func (s *sharedChild) supported() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.versions {
		if v >= ModernVersion {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = []string{ModernVersion}
	}
	return out
}

func (s *sharedChild) pending() int {
	if c := s.conn.Load(); c != nil {
		return c.pending()
	}
	return 0
}

// unrouted: a modern client only ever sees messages tied to its own request
// (2026-07-28 streamable-http §Receiving: notifications "MUST relate to the
// originating client request"), so anything unattributed is dropped.
func (s *sharedChild) unrouted(c *childConn, m *wire.Message) {
	c.log.Debug().Str("method", m.Method).Msg("child notification with no modern request to carry it; dropped")
}

// childRequest: 2026-07-28 forbids server-to-client requests; answer them so
// the child does not wait forever.
func (s *sharedChild) childRequest(c *childConn, m *wire.Message) {
	c.log.Warn().Str("method", m.Method).Msg("child sent a server-to-client request to 2026-07-28 clients; refused")
	c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound,
		"mcp-bridge: 2026-07-28 clients do not take server-to-client requests (use input_required)", nil))
}

// startHost starts a child for conn with the Handler's settings.
func startHost(h *Handler, conn *childConn) (*stdiohost.Host, error) {
	host, err := stdiohost.Start(h.cfg.Command(), stdiohost.Options{
		OnMessage:      conn.onMessage,
		MaxMessageSize: h.cfg.MaxMessageSize,
		TerminateDelay: h.cfg.TerminateDelay,
		Logger:         conn.log,
	})
	if err != nil {
		return nil, err
	}
	conn.attach(host)
	return host, nil
}
