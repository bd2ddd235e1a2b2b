package serve

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

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
// exit on any request before initialize, the probe runs on throwaway
// sibling processes, and its verdict holds for every child of this command.
//
// The sibling that answered in the era the bridge will use becomes the
// first shared child (adopted), so the probe costs no extra start-up time.
func detectEras(h *Handler, o owner) (eras, *prober) {
	switch h.cfg.ChildProtocol {
	case ChildModern:
		return eras{modern: true}, nil
	case ChildLegacy:
		return eras{legacy: true}, nil
	}
	timeout := min(h.cfg.probeTimeout(), 5*time.Second)
	// Two siblings at once: one is asked server/discover, the other
	// initialize. A dual-era server picks its era from how the client opens
	// (versioning §Dual-era servers), so each question needs a fresh process.
	var modern, legacy bool
	var dp, ip *prober
	var wg sync.WaitGroup
	wg.Go(func() {
		if dp = newProber(h, o); dp == nil {
			return
		}
		resp, err := dp.ask("server/discover", []byte(probeMeta), timeout)
		switch {
		case err != nil:
			// No answer, or the child died. The fallback "MUST NOT be keyed
			// to one specific error code": only a modern answer counts.
		case resp.Result.Present():
			modern, dp.resp = true, resp
		case resp.Error.Present() && resp.ErrorCode == wire.CodeUnsupportedVersion:
			modern = true // a modern server that wants another modern version
		}
	})
	wg.Go(func() {
		if ip = newProber(h, o); ip == nil {
			return
		}
		if resp, err := ip.ask("initialize", h.bridgeInitParams(), timeout); err == nil && resp.Result.Present() {
			v, _ := wire.StringField(resp.Raw, resp.Result, "protocolVersion")
			legacy = slices.Contains(legacyVersions, v)
			ip.resp = resp
		}
	})
	wg.Wait()
	var adopt *prober
	switch {
	case modern && dp.resp != nil:
		adopt, dp = dp, nil
	case !modern && legacy:
		adopt, ip = ip, nil
	}
	for _, p := range []*prober{dp, ip} {
		if p != nil {
			p.close()
		}
	}
	if !modern && !legacy {
		// Neither answered (it may need longer, or fail to start): assume
		// it speaks both and let the real requests show what it does.
		return eras{modern: true, legacy: true}, nil
	}
	return eras{modern: modern, legacy: legacy}, adopt
}

// bridgeInitParams are the params of the bridge's own initialize to a
// legacy child that serves modern clients. A child shared by every client
// is told of no client capability: a 2025-era server keeps per-connection
// state about its client (server-everything caches the roots it asked for
// and hands them to whoever calls get-roots-list next), and nothing on
// stdio ties a server-to-client request to the call that caused it. Only a
// child dedicated to one principal may ask, through input_required.
func (h *Handler) bridgeInitParams() []byte {
	caps := "{}"
	if h.cfg.perPrincipal() {
		caps = bridgeCapabilities
	}
	return []byte(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"mcp-bridge","version":"1"}}`)
}

// prober runs a sibling process for the era probe.
type prober struct {
	conn *childConn
	host *stdiohost.Host
	resp *wire.Message // its answer, when it may be adopted
}

func newProber(h *Handler, o owner) *prober {
	log := h.log.With().Str("child", "shared").Logger()
	conn := newChildConn(&h.ids, o, log)
	opts := hostOptions(h, conn)
	opts.TerminateDelay = 500 * time.Millisecond
	host, err := stdiohost.Start(h.command(), opts)
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
