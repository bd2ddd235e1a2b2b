package connect

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// modernHost translates for a host that speaks 2026-07-28 on a remote that
// speaks only a 2025 revision. The host sees a stateless server; the remote
// sees one legacy session:
//
//   - the session is initialized on first need, with the capabilities and
//     identity of the host's first request's _meta, and server/discover is
//     answered from its InitializeResult;
//   - requests are forwarded under ids the bridge mints (a legacy id "MUST
//     NOT have been previously used ... within the same session", while a
//     modern host only keeps in-flight ids unique) without the 2026-07-28
//     envelope, which would make a dual-era server treat them as modern;
//   - results get the fields 2026-07-28 requires: resultType, and caching
//     hints on the cacheable ones (server/utilities/caching);
//   - server-to-client requests become InputRequiredResults
//     (modernhost_call.go), change notifications go to the host's
//     subscriptions/listen streams (modernhost_listen.go).
type modernHost struct {
	b *Bridge

	initMu sync.Mutex
	ready  bool
	result []byte // the remote's InitializeResult response
	caps   remote.Caps

	levelMu sync.Mutex
	level   string // the log level set on the remote session

	mu    sync.Mutex
	calls []*call // host requests in flight, oldest first

	// listeners are the host's subscriptions/listen streams
	// (modernhost_listen.go).
	listeners translate.ListenHub

	// rounds are the calls suspended in input rounds, by request state.
	rounds translate.Rounds[hostReq]

	rootsMu sync.Mutex
	roots   []byte // the host's latest answer to a roots/list, nil before one

	// urls are the remote's completed URL elicitations (urlelicit.go).
	urls translate.Completions
}

func (h *modernHost) init(b *Bridge) {
	h.b = b
	h.rounds.TTL = suspendTimeout
	h.rounds.MaxBytes = b.cfg.maxMessageSize()
}

// relay answers one host request.
func (h *modernHost) relay(ctx context.Context, p *pending, m *wire.Message) {
	h.b.resetWire(p, false)
	switch {
	case m.Method == "server/discover":
		h.discover(ctx, p, m)
	case m.Method == "subscriptions/listen":
		h.listen(ctx, p, m)
	case translate.IsURLRetry(m):
		h.urlRetry(ctx, p, m)
	case translate.IsRetry(m):
		h.resume(ctx, p, m)
	case h.task(ctx, p, m):
	default:
		h.call(ctx, p, m)
	}
}

// ensureSession initializes the remote's legacy session, once, with the
// newest handshake version (remote.Remote.Open: initialize, then
// notifications/initialized, then the GET stream).
func (h *modernHost) ensureSession(ctx context.Context, m *wire.Message) error {
	b := h.b
	h.initMu.Lock()
	defer h.initMu.Unlock()
	if h.ready {
		return nil
	}
	rm, err := b.remote.Open(ctx, translate.InitializeParams(m), h.fromRemote)
	if err != nil {
		if _, ok := remote.Refusal(err); ok && b.protocol() == ProtocolAuto {
			b.remote.ForgetVerdict()
		}
		return err
	}
	h.result = rm.Raw
	if sp, ok := wire.Field(rm.Raw, rm.Result, "capabilities"); ok {
		h.caps = remote.ParseCaps(rm.Bytes(sp))
	}
	h.ready = true
	return nil
}

// request sends method with params to the remote session and returns the
// error of a failed answer.
func (h *modernHost) request(ctx context.Context, method string, params []byte) error {
	rm, err := h.b.remote.Request(ctx, "req", method, params, h.fromRemote)
	if err != nil {
		return err
	}
	if rm.Error.Present() {
		return fmt.Errorf("%s: %s", method, rm.Bytes(rm.Error))
	}
	return nil
}

func (h *modernHost) remoteCaps() remote.Caps {
	h.initMu.Lock()
	defer h.initMu.Unlock()
	return h.caps
}

// discover answers server/discover from the InitializeResult.
func (h *modernHost) discover(ctx context.Context, p *pending, m *wire.Message) {
	b := h.b
	if err := h.ensureSession(ctx, m); err != nil {
		b.answerError(p, err)
		return
	}
	h.initMu.Lock()
	init := h.result
	h.initMu.Unlock()
	b.writeFinal(p, wire.ResultResponse(p.id, translate.TasksToModern(translate.DiscoverFromInitialize(resultOf(init)), resultOf(init))))
}

// applyLogLevel maps the per-request log level of 2026-07-28 onto the
// session-wide logging/setLevel of the remote, when the level changes.
// Log messages then reach only requests that asked for them (the call
// filters): "the server MUST NOT send notifications/message" for a request
// without a level (server/utilities/logging).
func (h *modernHost) applyLogLevel(ctx context.Context, m *wire.Message) {
	if m.LogLevel == "" || !h.remoteCaps().Logging {
		return
	}
	h.levelMu.Lock()
	defer h.levelMu.Unlock()
	if h.level == m.LogLevel {
		return
	}
	params := append(wire.AppendString([]byte(`{"level":`), m.LogLevel), '}')
	if err := h.request(ctx, "logging/setLevel", params); err != nil {
		h.b.log.Debug().Err(err).Msg("logging/setLevel on the remote")
		return
	}
	h.level = m.LogLevel
}

// fromRemote handles a message the remote sent outside any request's
// stream (the GET stream, mostly). A 2026-07-28 host expects nothing
// unasked: server requests go to a call as an input round, change
// notifications to the listen streams, progress to the request that owns
// the token; the rest is dropped.
func (h *modernHost) fromRemote(msg []byte) {
	var m wire.Message
	if wire.Parse(msg, &m) != nil {
		return
	}
	switch m.Kind {
	case wire.KindResponse:
		h.b.dropResponse(&m, "it came outside its request's stream, and the host speaks 2026-07-28")
	case wire.KindRequest:
		h.serverRequest(nil, &m)
	case wire.KindNotification:
		switch {
		case h.listeners.Deliver(&m):
		case m.Method == "notifications/progress":
			if c := h.progressOwner(m.Bytes(m.ProgressToken)); c != nil {
				c.forwardProgress(msg, &m)
			}
		case h.urls.Record(&m): // recorded, not forwarded (urlelicit.go)
		default:
			h.b.log.Debug().Str("method", m.Method).Msg("dropping a notification outside any request: the host speaks 2026-07-28")
		}
	}
}

// answerRemote POSTs the response to a server-to-client request: result,
// or else an error with code and message.
func (h *modernHost) answerRemote(sr translate.Ask, result []byte, code int, message string) {
	b := h.b
	var body []byte
	if result != nil {
		body = wire.ResultResponse(sr.ID, result)
	} else {
		body = wire.ErrorResponse(sr.ID, code, message, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.remote.Tell(ctx, body, "response to "+sr.Method)
}

// postCancel tells the remote that the bridge gave up on request id
// ("To cancel, the client SHOULD explicitly send an MCP
// CancelledNotification": a legacy server does not read a disconnect as
// one).
func (h *modernHost) postCancel(ctx context.Context, id []byte, reason string) {
	b := h.b
	params := append(append([]byte(`{"requestId":`), id...), `,"reason":`...)
	params = append(wire.AppendString(params, reason), '}')
	b.remote.Tell(ctx, wire.Notification("notifications/cancelled", params), "notifications/cancelled")
}
