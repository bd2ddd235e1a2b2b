package connect

import (
	"context"
	"fmt"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// strategy is how the bridge relays to this remote: as is, or translating
// one way. It is chosen once per remote, when the era verdict is known
// (decideMode at the host's first request, or switchMode when a
// pass-through exchange reveals that the remote lacks the host's era), and
// every call site that depends on the remote's era invokes it rather than
// asking which era that is (TestStrategyChosenOnce).
type strategy interface {
	fmt.Stringer
	// relay answers one host request.
	relay(ctx context.Context, p *pending, m *wire.Message)
	// notify relays a host notification, after the host's earlier messages.
	notify(ctx context.Context, method string, raw []byte)
	// respond relays a host response that answers nothing the bridge asked.
	respond(ctx context.Context, m *wire.Message)
	// batch relays a host batch.
	batch(ctx context.Context, raw []byte)
	// unasked takes a message the remote sent outside any request's
	// stream, or reports false: it is routed as it came.
	unasked(msg []byte) bool
	// wireModern is the era a host request is sent in, as far as
	// cancellation knows before the request starts.
	wireModern(hostModern bool) bool
	// notices reports whether the host takes the bridge's own log
	// notifications (LogToHost).
	notices() bool
	// writeHeld answers p with held, the answer to method kept back while
	// the remote's era was probed.
	writeHeld(p *pending, held []byte, method string)
}

// chosen holds the strategy in force; Bridge.how points to one, swapped
// once, from pass-through.
type chosen struct{ strategy }

func (b *Bridge) strategy() strategy { return b.how.Load().strategy }

// passingThrough reports whether no translation was chosen (yet).
func (b *Bridge) passingThrough() bool { return b.how.Load() == b.passing }

// switchMode leaves pass-through for a translation, once.
func (b *Bridge) switchMode(to strategy) {
	if b.how.CompareAndSwap(b.passing, &chosen{to}) {
		b.log.Info().Stringer("mode", to).Msg("translating between protocol eras")
	}
}

// decideMode picks the strategy from the host's first request: its era
// (a request with the 2026-07-28 _meta envelope is modern, anything else,
// initialize above all, legacy) against the pinned or cached era of the
// remote. It runs on the stdin loop, before that request is relayed.
func (b *Bridge) decideMode(m *wire.Message) {
	hostModern := m.IsModern()
	era := b.remote.Verdict()
	switch b.protocol() {
	case ProtocolModern:
		era = verdictModern
	case ProtocolLegacy:
		era = verdictLegacy
	}
	switch {
	case !hostModern && era == verdictModern:
		b.switchMode(b.legacyHostMode())
	case hostModern && era == verdictLegacy:
		b.switchMode(b.modernHostMode())
	}
}

// passThrough relays host and remote as they are: they speak the same era,
// or nothing is known yet (detection watches the exchanges, detect.go).
type passThrough struct{ b *Bridge }

func (passThrough) String() string { return "pass-through" }
func (s passThrough) relay(ctx context.Context, p *pending, m *wire.Message) {
	s.b.passRelay(ctx, p, m)
}
func (s passThrough) notify(ctx context.Context, method string, raw []byte) {
	s.b.passNotify(ctx, method, raw)
}
func (s passThrough) respond(ctx context.Context, m *wire.Message) {
	s.b.inOrder(ctx, func(ctx context.Context) { s.b.remote.Send(ctx, m.Raw, s.b.remote.HeadersFor(m), "response") })
}
func (s passThrough) batch(ctx context.Context, raw []byte)       { s.b.passBatch(ctx, raw) }
func (passThrough) unasked([]byte) bool                           { return false }
func (passThrough) wireModern(hostModern bool) bool               { return hostModern }
func (passThrough) notices() bool                                 { return true }
func (s passThrough) writeHeld(p *pending, held []byte, _ string) { s.b.writeFinal(p, held) }

// translating is what both translations do alike: a host batch is split
// (2026-07-28 has none), and a host response reaches the remote only as
// the answer to a request the bridge made up (legacyHost.deliver).
type translating struct{ b *Bridge }

func (t translating) respond(_ context.Context, m *wire.Message) {
	t.b.log.Debug().RawJSON("id", m.IDBytes()).Msg("dropping a host response that answers nothing the bridge asked")
}
func (t translating) batch(ctx context.Context, raw []byte)       { t.b.splitBatch(ctx, raw) }
func (translating) unasked([]byte) bool                           { return false }
func (translating) notices() bool                                 { return true }
func (t translating) writeHeld(p *pending, held []byte, _ string) { t.b.writeFinal(p, held) }

// legacyHostMode translates for a 2025 host on a 2026-07-28-only remote
// (legacyhost*.go).
type legacyHostMode struct {
	translating
	h *legacyHost
}

func (b *Bridge) legacyHostMode() strategy { return legacyHostMode{translating{b}, &b.lh} }

func (legacyHostMode) String() string                                           { return "legacy host on a modern remote" }
func (s legacyHostMode) relay(ctx context.Context, p *pending, m *wire.Message) { s.h.relay(ctx, p, m) }
func (s legacyHostMode) notify(ctx context.Context, method string, _ []byte)    { s.h.notify(ctx, method) }

// wireModern: a request of a translated legacy host is cancelled by
// closing its stream, even before it starts.
func (legacyHostMode) wireModern(bool) bool { return true }

// modernHostMode translates for a 2026-07-28 host on a 2025-only remote
// (modernhost*.go).
type modernHostMode struct {
	translating
	h *modernHost
}

func (b *Bridge) modernHostMode() strategy { return modernHostMode{translating{b}, &b.mh} }

func (modernHostMode) String() string                                           { return "modern host on a legacy remote" }
func (s modernHostMode) relay(ctx context.Context, p *pending, m *wire.Message) { s.h.relay(ctx, p, m) }
func (s modernHostMode) notify(_ context.Context, method string, _ []byte) {
	s.b.log.Debug().Str("method", method).Msg("dropping a host notification: 2026-07-28 defines none but cancellation")
}
func (modernHostMode) wireModern(hostModern bool) bool { return hostModern }

// unasked: a 2026-07-28 host expects nothing unasked (nor the bridge's
// own notices); the translation sorts it out.
func (s modernHostMode) unasked(msg []byte) bool {
	s.h.fromRemote(msg)
	return true
}
func (modernHostMode) notices() bool { return false }

// writeHeld completes the 2025-shaped result held back for the host the
// way translation completes every result once the remote proved 2025-only.
func (s modernHostMode) writeHeld(p *pending, held []byte, method string) {
	var hm wire.Message
	if wire.Parse(held, &hm) == nil {
		held = translate.Complete(&hm, method, p.id)
	}
	s.b.writeFinal(p, held)
}
