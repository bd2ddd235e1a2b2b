package connect

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// passBatch forwards a JSON-RPC batch (2025-03-26 only) as one POST. Its
// requests are put in flight first, on the stdin loop, so that the host's
// later messages (a cancellation, a request reusing an id) see them.
func (b *Bridge) passBatch(ctx context.Context, raw []byte) {
	elems, err := batchElements(raw)
	if err != nil || len(elems) == 0 {
		b.write(wire.ErrorResponse(nil, wire.CodeInvalidRequest, "Invalid Request: empty or malformed batch", nil))
		return
	}
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
		raw = rebatch(raw, elems, traced)
	}
	b.goRequest(func() {
		defer func() {
			for _, p := range reqs {
				b.retire(p)
			}
		}()
		b.relayBatch(ctx, raw, reqs)
	})
}

// relayBatch sends the batch and writes each message of the answer as its
// own line; a response reaches the host only if it answers one of the
// batch's requests, and each of them is answered exactly once: by the
// remote, or with an error if the remote left it out.
func (b *Bridge) relayBatch(ctx context.Context, raw []byte, reqs []*pending) {
	hdr := b.remote.HeadersFor(&wire.Message{})
	resp, err := b.remote.Post(ctx, raw, hdr)
	if err != nil {
		b.log.Warn().Err(err).Msg("batch not accepted by the remote")
		if len(reqs) == 0 {
			_, msg, _ := b.remote.Describe(err, nil)
			b.write(wire.ErrorResponse(nil, wire.CodeConnectionClosed, "mcp-bridge: the remote rejected a batch: "+strings.TrimPrefix(msg, "mcp-bridge: "), nil))
		}
		var se *httpclient.StatusError
		errors.As(err, &se)
		for _, p := range reqs {
			b.fail(p, err, se)
		}
		return
	}
	defer resp.Close()
	for {
		msg, err := resp.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the remote answered the batch without a response to this request")
			}
			for _, p := range reqs {
				b.fail(p, err, nil)
			}
			return
		}
		b.route(msg, source{batch: reqs})
	}
}

// rebatch returns the array raw with element i replaced by with[i] where
// that is not nil (the whitespace between elements goes).
func rebatch(raw []byte, elems []wire.Span, with [][]byte) []byte {
	out := make([]byte, 0, len(raw)+len(elems)*64)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		if with[i] != nil {
			out = append(out, with[i]...)
		} else {
			out = append(out, raw[e.Start:e.End]...)
		}
	}
	return append(out, ']')
}

// batchElements returns the spans of the elements of raw, a JSON array
// (firstByte(raw) == '[').
func batchElements(raw []byte) ([]wire.Span, error) {
	return wire.Elements(raw, wire.Span{Start: bytes.IndexByte(raw, '['), End: len(raw)})
}
