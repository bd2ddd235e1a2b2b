package aggregate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// serverInfo is what the aggregate calls itself.
var serverInfo = map[string]string{"name": "mcp-bridge aggregate", "version": "1"}

// initialize dials and initializes every server with the client's
// capabilities and clientInfo, lists everything once (which reports name
// collisions), and answers with the union of the servers' capabilities.
// It writes the answer itself, before the session is ready, so that no
// notification of the servers reaches the client ahead of it.
func (s *session) initialize(ctx context.Context, m *wire.Message) []byte {
	at, okAt := wire.Field(m.Raw, m.Params, "protocolVersion")
	requested, ok := wire.StringField(m.Raw, m.Params, "protocolVersion")
	if !okAt || !ok {
		s.initStarted.Store(false) // the client may try again
		return errorFor(m, wire.CodeInvalidParams, "aggregate: params.protocolVersion is missing")
	}
	// "If the server supports the requested protocol version, it MUST
	// respond with the same version. Otherwise, the server MUST respond
	// with another protocol version it supports" (2025-11-25 lifecycle).
	// The servers are asked for the version the client gets, so that all
	// three speak the same one.
	version := translate.NegotiateLegacy(requested)
	rel := wire.Span{Start: at.Start - m.Params.Start, End: at.End - m.Params.Start}
	params := wire.Splice(m.Bytes(m.Params), wire.Edit{Span: rel, Value: wire.AppendString(nil, version)})

	started := make([]*downstream, len(s.cfg.Servers))
	var wg sync.WaitGroup
	for i := range s.cfg.Servers {
		wg.Go(func() { started[i] = s.start(ctx, i, params) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	for _, d := range started {
		if d != nil {
			s.ds = append(s.ds, d)
		}
	}
	if len(s.ds) == 0 && len(s.cfg.Servers) > 0 {
		s.log.Error().Msg("aggregate: no server started; the aggregate is empty")
	}
	for k := range numKinds {
		wg.Go(func() { s.list(ctx, k) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	result, _ := json.Marshal(s.initResult(version))
	s.writeUp(wire.ResultResponse(m.IDBytes(), result))
	close(s.ready)
	return nil
}

// start dials server i and initializes it; nil when it fails, which is
// logged.
func (s *session) start(ctx context.Context, i int, params []byte) *downstream {
	name := s.cfg.Servers[i].Name
	log := s.log.With().Str("server", name).Logger()
	d, err := s.dial(i)
	if err != nil {
		log.Warn().Err(err).Msg("aggregate: server did not start; it is left out")
		return nil
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	resp, err := d.call(ictx, "initialize", nil, func(id, _ []byte) []byte {
		return wire.Request(id, "initialize", params)
	})
	fail := func(msg string) *downstream {
		log.Warn().Err(err).Msg("aggregate: " + msg + "; it is left out")
		d.closeInput() // it ends; shutdown waits for it
		return nil
	}
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return fail("server did not initialize")
	case resp.Error.Present():
		log.Warn().RawJSON("error", resp.Bytes(resp.Error)).Msg("aggregate: server refused initialize; it is left out")
		d.closeInput()
		return nil
	}
	v, _ := wire.StringField(resp.Raw, resp.Result, "protocolVersion")
	if !translate.SpeaksLegacy(v) {
		log.Warn().Str("protocol_version", v).Msg("aggregate: server answered with a protocol version the aggregate does not speak; it is left out")
		d.closeInput()
		return nil
	}
	d.caps = readCapabilities(resp)
	d.instructions, _ = wire.StringField(resp.Raw, resp.Result, "instructions")
	if err := d.write(wire.Notification("notifications/initialized", nil)); err != nil {
		return fail("server did not take notifications/initialized")
	}
	log.Debug().Str("protocol_version", v).Msg("aggregate: server initialized")
	return d
}

type initResult struct {
	ProtocolVersion string            `json:"protocolVersion"`
	Capabilities    map[string]any    `json:"capabilities"`
	ServerInfo      map[string]string `json:"serverInfo"`
	Instructions    string            `json:"instructions,omitempty"`
}

// initResult unites the servers' capabilities. Tools, prompts and
// resources are always offered with listChanged: a server may add some
// later, and a server that ends takes its own away.
func (s *session) initResult(version string) initResult {
	changing := map[string]bool{"listChanged": true}
	resources := map[string]bool{"listChanged": true}
	caps := map[string]any{"tools": changing, "prompts": changing, "resources": resources}
	var instructions []string
	for _, d := range s.ds {
		if d.caps.subscribe {
			resources["subscribe"] = true
		}
		if d.caps.logging {
			caps["logging"] = struct{}{}
		}
		if d.caps.completions {
			caps["completions"] = struct{}{}
		}
		if d.instructions != "" {
			instructions = append(instructions, d.name+": "+d.instructions)
		}
	}
	return initResult{
		ProtocolVersion: version,
		Capabilities:    caps,
		ServerInfo:      serverInfo,
		Instructions:    strings.Join(instructions, "\n\n"),
	}
}
