package serve

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
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
			legacy = translate.IsLegacy(v)
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
// child dedicated to one principal may ask, through an input round.
func (h *Handler) bridgeInitParams() []byte {
	caps := "{}"
	if h.cfg.perPrincipal() {
		caps = bridgeCapabilities
	}
	return []byte(`{"protocolVersion":"` + translate.Legacy + `","capabilities":` + caps + `,"clientInfo":{"name":"mcp-bridge","version":"1"}}`)
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
	host, err := h.launch(opts)
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

func orEmptyObject(b json.RawMessage) []byte {
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}")
	}
	return b
}
