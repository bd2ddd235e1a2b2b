package aggregate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// serverInfo is what the aggregate calls itself.
var serverInfo = map[string]string{"name": "mcp-bridge aggregate", "version": "1"}

// initialize dials and initializes every server with the client's
// capabilities and clientInfo, lists everything once (which reports name
// collisions), and answers with the union of the capabilities of the
// servers ready by then: every server has initialized or failed, or
// Config.JoinTimeout has passed. A server still starting joins the session
// later (see join). initialize writes the answer itself, before the
// session is ready, so that no notification of the servers reaches the
// client ahead of it.
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

	// The servers of now; one added from here on (update) starts on its
	// own and joins late.
	s.mu.Lock()
	s.params = params
	n := len(s.servers)
	ctxs := make([]context.Context, n)
	for i := range n {
		ctxs[i] = s.serverContext(i)
	}
	s.mu.Unlock()
	st := &startup{got: make([]*downstream, n), done: make([]bool, n), left: n, all: make(chan struct{})}
	if n == 0 {
		close(st.all)
	}
	for i := range n {
		// Owned by the session, not by this handler: a server still
		// starting when the answer goes out joins later.
		s.joiners.Go(func() { s.startOrJoin(ctxs[i], st, i, params) })
	}
	timer := time.NewTimer(s.cfg.JoinTimeout)
	select {
	case <-st.all:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	s.mu.Lock()
	st.closed = true
	var gathered []*downstream
	for _, d := range st.got {
		if d != nil {
			gathered = append(gathered, d)
		}
	}
	var late []string
	for i, done := range st.done {
		if !done {
			late = append(late, s.servers[i].Name)
		}
	}
	s.mu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	for _, name := range late {
		s.cfg.OnAbsent(name, "initialize")
	}
	if len(late) > 0 {
		s.log.Warn().Strs("servers", late).Int64("join_timeout_ms", s.cfg.JoinTimeout.Milliseconds()).
			Msg("aggregate: answering initialize without servers still starting; each joins the session when it is ready")
	}
	ready := s.sendInitialized(gathered)
	if len(ready) == 0 && len(late) == 0 && n > 0 {
		s.log.Error().Msg("aggregate: no server started; the aggregate is empty")
	}
	res := s.initResult(version, ready)
	// Written before ready closes, read after it (and by a late server's
	// reader only once it is opened, which is after ready too).
	s.offered = res.offered
	s.publish(ready)
	var wg sync.WaitGroup
	for k := range numKinds {
		wg.Go(func() { s.list(ctx, k) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	result, _ := json.Marshal(res)
	s.initDone()
	s.writeUp(wire.ResultResponse(m.IDBytes(), result))
	close(s.ready)
	return nil
}

// sendInitialized sends each server its notifications/initialized, at
// once; it returns those that took it.
func (s *session) sendInitialized(ds []*downstream) []*downstream {
	ok := make([]bool, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			if err := d.write(wire.Notification("notifications/initialized", nil)); err != nil {
				d.log.Warn().Err(err).Msg("aggregate: server did not take notifications/initialized; it is left out")
				d.closeInput() // it ends; shutdown waits for it
				return
			}
			ok[i] = true
		})
	}
	wg.Wait()
	var out []*downstream
	for i, d := range ds {
		if ok[i] {
			out = append(out, d)
		}
	}
	return out
}

// start dials server i and initializes it; nil when it fails, which is
// logged. It does not send notifications/initialized: see sendInitialized.
func (s *session) start(ctx context.Context, i int, params []byte) *downstream {
	name := s.server(i).Name
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
	switch {
	case ctx.Err() != nil:
		d.closeInput() // the session ends, or the server was removed
		return nil
	case err != nil:
		log.Warn().Err(err).Msg("aggregate: server did not initialize; it is left out")
		d.closeInput() // it ends; shutdown waits for it
		return nil
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
	d.caps.extensions = readExtensions(resp)
	d.instructions, _ = wire.StringField(resp.Raw, resp.Result, "instructions")
	log.Debug().Str("protocol_version", v).Msg("aggregate: server initialized")
	return d
}

type initResult struct {
	ProtocolVersion string            `json:"protocolVersion"`
	Capabilities    map[string]any    `json:"capabilities"`
	ServerInfo      map[string]string `json:"serverInfo"`
	Instructions    string            `json:"instructions,omitempty"`

	offered capabilities // what Capabilities says, for the session
}

// initResult unites the servers' capabilities. Tools, prompts and
// resources are always offered with listChanged: a server may add some
// later, and a server that ends takes its own away.
func (s *session) initResult(version string, ds []*downstream) initResult {
	changing := map[string]bool{"listChanged": true}
	resources := map[string]bool{"listChanged": true}
	caps := map[string]any{"tools": changing, "prompts": changing, "resources": resources}
	var instructions []string
	offered := capabilities{tools: true, prompts: true, resources: true}
	for _, d := range ds {
		if d.caps.subscribe {
			resources["subscribe"] = true
			offered.subscribe = true
		}
		if d.caps.logging {
			caps["logging"] = struct{}{}
			offered.logging = true
		}
		if d.caps.completions {
			caps["completions"] = struct{}{}
			offered.completions = true
		}
		if d.instructions != "" {
			instructions = append(instructions, d.name+": "+d.instructions)
		}
	}
	if ext := s.extensions(ds); ext != nil {
		caps["extensions"] = ext
		offered.extensions = ext
	}
	if t := offerTasks(ds); t != nil {
		caps["tasks"] = t
	}
	return initResult{
		ProtocolVersion: version,
		Capabilities:    caps,
		ServerInfo:      serverInfo,
		Instructions:    strings.Join(instructions, "\n\n"),
		offered:         offered,
	}
}
