package serve

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// ChildProtocol pins the era of the child, or lets the bridge detect it.
type ChildProtocol string

const (
	ChildAuto   ChildProtocol = "auto"
	ChildModern ChildProtocol = "modern" // 2026-07-28 only
	ChildLegacy ChildProtocol = "legacy" // the 2025 handshake only
)

// eras is what the child was found to speak.
type eras struct {
	modern, legacy bool
}

func (e eras) String() string {
	switch {
	case e.modern && e.legacy:
		return "dual-era"
	case e.modern:
		return "2026-07-28 only"
	default:
		return "legacy only"
	}
}

// detectEras decides which eras the child speaks. A dual-era client
// "SHOULD probe with server/discover before sending any other request"
// (2026-07-28 stdio §Backward compatibility); because some legacy servers
// exit on any request before initialize, the probe runs on a throwaway
// sibling process, and its verdict holds for every child of this command.
func detectEras(h *Handler) eras {
	switch h.cfg.ChildProtocol {
	case ChildModern:
		return eras{modern: true}
	case ChildLegacy:
		return eras{legacy: true}
	}
	timeout := min(h.cfg.probeTimeout(), 5*time.Second)
	// Two siblings at once: one is asked server/discover, the other
	// initialize. A dual-era server picks its era from how the client opens
	// (versioning §Dual-era servers), so each question needs a fresh process.
	var modern, legacy bool
	var wg sync.WaitGroup
	wg.Go(func() {
		p := newProber(h)
		if p == nil {
			return
		}
		defer p.close()
		resp, err := p.ask("server/discover", []byte(probeMeta), timeout)
		switch {
		case err != nil:
			// No answer, or the child died. The fallback "MUST NOT be keyed
			// to one specific error code": only a modern answer counts.
		case resp.Result.Present():
			modern = true
		case resp.Error.Present() && resp.ErrorCode == wire.CodeUnsupportedVersion:
			modern = true // a modern server that wants another modern version
		}
	})
	wg.Go(func() {
		p := newProber(h)
		if p == nil {
			return
		}
		defer p.close()
		init := []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bridge-probe","version":"1"}}`)
		if resp, err := p.ask("initialize", init, timeout); err == nil && resp.Result.Present() {
			v, _ := wire.StringField(resp.Raw, resp.Result, "protocolVersion")
			legacy = slices.Contains(legacyVersions, v)
		}
	})
	wg.Wait()
	if !modern && !legacy {
		// Neither answered (it may need longer, or fail to start): assume
		// it speaks both and let the real requests show what it does.
		return eras{modern: true, legacy: true}
	}
	return eras{modern: modern, legacy: legacy}
}

// prober runs the throwaway sibling.
type prober struct {
	conn *childConn
	host *stdiohost.Host
}

type dropOwner struct{}

func (dropOwner) unrouted(*childConn, *wire.Message) {}
func (dropOwner) childRequest(c *childConn, m *wire.Message) {
	c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeMethodNotFound, "probe", nil))
}

func newProber(h *Handler) *prober {
	log := h.log.With().Str("child", "probe").Logger().Level(max(h.log.GetLevel(), zerolog.WarnLevel))
	conn := newChildConn(&h.ids, dropOwner{}, log)
	host, err := stdiohost.Start(h.cfg.Command(), stdiohost.Options{
		OnMessage:      conn.onMessage,
		MaxMessageSize: h.cfg.MaxMessageSize,
		TerminateDelay: 500 * time.Millisecond,
		Logger:         log,
	})
	if err != nil {
		return nil
	}
	conn.attach(host)
	return &prober{conn: conn, host: host}
}

func (p *prober) ask(method string, params []byte, timeout time.Duration) (*wire.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.conn.request(ctx, method, params)
}

func (p *prober) close() {
	p.host.Close()
	p.conn.failAll("probe done", nil)
}

// discoverFromInitialize builds the server/discover result a 2026-07-28
// client gets from a legacy child's InitializeResult (server/discover: a
// DiscoverResult lists supportedVersions, capabilities, instructions, and
// serverInfo in _meta; it is a cacheable result, so it carries ttlMs and
// cacheScope).
func discoverFromInitialize(init []byte) []byte {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions *string         `json:"instructions"`
	}
	json.Unmarshal(init, &r)
	b := []byte(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":`)
	b = append(b, orEmptyObject(r.Capabilities)...)
	if r.Instructions != nil {
		b = wire.AppendString(append(b, `,"instructions":`...), *r.Instructions)
	}
	// Private: the child's answer may depend on who asked.
	b = append(b, `,"ttlMs":0,"cacheScope":"private"`...)
	if len(r.ServerInfo) > 0 {
		b = append(append(append(b, `,"_meta":{"io.modelcontextprotocol/serverInfo":`...), r.ServerInfo...), '}')
	}
	return append(b, '}')
}

// initializeFromDiscover builds the InitializeResult a legacy client gets
// from a modern child's DiscoverResult, at the version negotiated for it.
func initializeFromDiscover(discover []byte, version string) []byte {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
		Instructions *string         `json:"instructions"`
		Meta         struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	json.Unmarshal(discover, &r)
	b := wire.AppendString([]byte(`{"protocolVersion":`), version)
	b = append(append(b, `,"capabilities":`...), orEmptyObject(r.Capabilities)...)
	info := r.Meta.ServerInfo
	if len(info) == 0 {
		info = []byte(`{"name":"mcp-bridge","version":"1"}`)
	}
	b = append(append(b, `,"serverInfo":`...), info...)
	if r.Instructions != nil {
		b = wire.AppendString(append(b, `,"instructions":`...), *r.Instructions)
	}
	return append(b, '}')
}

func orEmptyObject(b json.RawMessage) []byte {
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}")
	}
	return b
}

// negotiateLegacy picks the version a legacy client gets: its own when the
// bridge speaks it, else the latest ("Otherwise, the server MUST respond
// with another protocol version it supports").
func negotiateLegacy(requested string) string {
	if slices.Contains(legacyVersions[:3], requested) {
		return requested
	}
	return legacyVersions[0]
}
