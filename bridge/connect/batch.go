package connect

import (
	"context"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// passBatch forwards a JSON-RPC batch (2025-03-26 only) as one POST. Its
// requests are put in flight first, on the stdin loop, so that the host's
// later messages (a cancellation, a request reusing an id) see them.
func (b *Bridge) passBatch(ctx context.Context, raw []byte, elems []wire.Span) {
	if raw, elems = b.refuseHiddenInBatch(raw, elems); len(elems) == 0 {
		return // all of it answered here
	}
	var reqs []*pending
	var traced [][]byte // with telemetry: each request as it goes out
	for i, e := range elems {
		var m wire.Message
		if wire.Parse(raw[e.Start:e.End], &m) != nil || m.Kind != wire.KindRequest {
			continue
		}
		// One POST carries them all: a cancellation marks its request
		// (no answer) but cannot close the stream the others share.
		p := &pending{id: clone(m.IDBytes()), method: m.Method, modern: m.IsModern(), started: time.Now(), cancel: func() {}, ex: pass{b}}
		p.wireID, p.wireModern = p.id, p.modern
		if !b.register(p) {
			continue
		}
		reqs = append(reqs, p)
		// Each request of the batch is observed as if sent alone: its
		// own span, named as the remote's parent in its own _meta
		// (observe edits m in place).
		if b.tel != nil {
			if traced == nil {
				traced = make([][]byte, len(elems))
			}
			traced[i] = b.observe(p, &m).Raw
		}
	}
	if traced != nil {
		raw = wire.Rebatch(raw, elems, traced)
	}
	b.host.Go(func() {
		defer func() {
			for _, p := range reqs {
				b.retire(p)
			}
		}()
		b.relayBatch(ctx, raw, reqs)
	})
}

// relayBatch sends the batch and writes each message of the answer as its
// own line (remote.Remote.Batch); a response reaches the host only if it
// answers one of the batch's requests, and each of them is answered
// exactly once: by the remote, or with an error if the remote left it out.
func (b *Bridge) relayBatch(ctx context.Context, raw []byte, reqs []*pending) {
	refused, err := b.remote.Batch(ctx, raw, func(msg []byte) { b.route(msg, source{batch: reqs}) })
	if refused && len(reqs) == 0 {
		b.host.Write(b.remote.BatchRefusal(err))
	}
	for _, p := range reqs {
		b.fail(p, err, nil)
	}
}
