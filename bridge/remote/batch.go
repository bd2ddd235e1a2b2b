package remote

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// What the remote sends reaches the host side one JSON message at a time:
// the remote is not trusted to send JSON, nor to send one message where a
// 2025-03-26 server may send a batch (deliver). Which request a message
// answers is the host side's (connect's route.go).

// sink takes the remote's messages one at a time and reports whether one
// carried a request's final response: a Call, or one of Config's
// callbacks (sinkFunc).
type sink interface {
	Emit(msg []byte) (final bool)
}

// sinkFunc is a callback as a sink; what it takes ends no request.
type sinkFunc func(msg []byte)

func (f sinkFunc) Emit(msg []byte) bool {
	f(msg)
	return false
}

// deliver hands msg to to, one message at a time, and reports whether one
// carried the final response of to's request.
func (r *Remote) deliver(msg []byte, to sink) (final bool) {
	if !r.validJSON(msg) {
		return false
	}
	if wire.FirstByte(msg) != '[' {
		return to.Emit(msg)
	}
	// A 2025-03-26 server may answer with a batch; stdout carries one
	// message a line, and each element is judged like a message of its
	// own.
	elems, err := wire.BatchElements(msg)
	if err != nil || len(elems) == 0 {
		r.warns.badMessage.Event(&r.log, zerolog.WarnLevel).Int("bytes", len(msg)).Msg("remote sent an empty or malformed batch; dropped")
		return false
	}
	for _, e := range elems {
		el := msg[e.Start:e.End]
		if wire.FirstByte(el) == '[' {
			r.warns.badMessage.Event(&r.log, zerolog.WarnLevel).Int("bytes", len(el)).Msg("remote sent a batch inside a batch; dropped")
			continue
		}
		if to.Emit(el) {
			final = true
		}
	}
	return final
}

// validJSON reports whether msg is JSON, checked whole whatever its size
// (wire.Valid crosses a 16 MiB result in about 6 ms, a tenth of relaying
// it). The envelope reader only walks the keys it routes on; a line the
// host cannot parse must not reach it.
func (r *Remote) validJSON(msg []byte) bool {
	if wire.Valid(msg) {
		return true
	}
	r.warns.badMessage.Event(&r.log, zerolog.WarnLevel).Int("bytes", len(msg)).Msg("remote sent something that is not JSON; dropped")
	return false
}

// unsolicited takes a message of the standalone GET stream
// (Config.Unsolicited).
func (r *Remote) unsolicited(msg []byte) { r.deliver(msg, sinkFunc(r.cfg.Unsolicited)) }

// Batch sends a host batch (2025-03-26 only) as one POST and hands each
// message of the answer to each, as deliver does. It returns the error
// every request of the batch still unanswered gets: refused, the remote
// did not take the batch (BatchRefusal); otherwise the answer ended
// without a response to it, or broke.
func (r *Remote) Batch(ctx context.Context, raw []byte, each func(msg []byte)) (refused bool, err error) {
	hdr := r.HeadersFor(&wire.Message{})
	resp, err := r.client.Post(ctx, raw, hdr)
	if err != nil {
		r.log.Warn().Err(err).Msg("batch not accepted by the remote")
		return true, err
	}
	defer resp.Close()
	for {
		msg, err := resp.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the remote answered the batch without a response to this request")
			}
			return false, err
		}
		r.deliver(msg, sinkFunc(each))
	}
}

// BatchRefusal is the error response (id null) that tells the host the
// remote refused a batch (err) of which no request waits for an answer.
func (r *Remote) BatchRefusal(err error) []byte {
	_, msg, _ := r.Describe(err, nil)
	return wire.ErrorResponse(nil, wire.CodeConnectionClosed, "mcp-bridge: the remote rejected a batch: "+strings.TrimPrefix(msg, "mcp-bridge: "), nil)
}
