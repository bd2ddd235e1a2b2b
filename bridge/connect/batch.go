package connect

import (
	"bytes"
	"context"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// relayBatch forwards a JSON-RPC batch (2025-03-26 only) as one POST and
// writes each message of the answer as its own line.
func (b *Bridge) relayBatch(ctx context.Context, raw []byte) {
	hdr := b.headersFor(&wire.Message{})
	resp, err := b.client.Post(ctx, raw, hdr)
	if err != nil {
		b.log.Warn().Err(err).Msg("batch not accepted by the remote")
		b.write(wire.ErrorResponse(nil, wire.CodeConnectionClosed, "mcp-bridge: the remote rejected a batch: "+err.Error(), nil))
		return
	}
	defer resp.Close()
	for {
		msg, err := resp.Next()
		if err != nil {
			return
		}
		if firstByte(msg) == '[' {
			elems, err := batchElements(msg)
			if err == nil {
				for _, e := range elems {
					b.emit(msg[e.Start:e.End], nil)
				}
				continue
			}
		}
		b.emit(msg, nil)
	}
}

// batchElements returns the spans of the elements of raw, a JSON array
// (firstByte(raw) == '[').
func batchElements(raw []byte) ([]wire.Span, error) {
	return wire.Elements(raw, wire.Span{Start: bytes.IndexByte(raw, '['), End: len(raw)})
}
