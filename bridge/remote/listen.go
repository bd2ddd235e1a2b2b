package remote

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// The subscriptions/listen streams of a 2026-07-28 remote: a modern
// host's own listen request kept open (Relisten), and one of the bridge's
// own for a legacy host (Listen). What their messages mean to the host is
// the host side's (connect's request.go and legacyhost_listen.go).

// Relisten keeps a 2026-07-28 subscriptions/listen request (m) open for
// the host. A broken stream loses the request and "clients MUST re-issue
// it as a new request with a new request ID" (2026-07-28 changelog), so it
// is re-issued under an id of the bridge's own, after a growing pause.
// each takes each message of a response stream whose request carried id
// (again: a re-established one) and reports whether it was the final
// response. Relisten returns once that came or ctx ended, nil, or with the
// error of the first attempt.
func (r *Remote) Relisten(ctx context.Context, m *wire.Message, each func(msg []byte, m *wire.Message, id []byte, again bool) (final bool)) error {
	bo := ListenBackoff()
	hdr := r.HeadersFor(m)
	body, id := m.Raw, m.IDBytes()
	for attempt := 0; ; attempt++ {
		resp, err := r.client.Post(ctx, body, hdr)
		if err != nil {
			if attempt == 0 || ctx.Err() != nil {
				if ctx.Err() == nil {
					return err
				}
				return nil
			}
		} else {
			again := attempt > 0
			delivered, final := r.readListen(resp, func(msg []byte, m *wire.Message) bool { return each(msg, m, id, again) })
			resp.Close()
			if final || ctx.Err() != nil {
				return nil
			}
			if delivered {
				bo.Reset()
			}
		}
		wait := bo.NextBackOff()
		r.warns.listenBroke.Event(&r.log, zerolog.InfoLevel).Int64("in_ms", wait.Milliseconds()).Msg("subscriptions/listen stream broke; re-establishing")
		if !SleepCtx(ctx, wait) {
			return nil
		}
		id = r.MintID("listen")
		body = wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: id})
	}
}

// Listen keeps a listen stream of the bridge's own open until ctx ends,
// asking for params() (read afresh for each stream). A broken stream is a
// lost request that "clients MUST re-issue ... as a new request with a new
// request ID" (2026-07-28 changelog), after a growing pause. each takes
// every message of a stream but the response that ends it.
func (r *Remote) Listen(ctx context.Context, params func() []byte, each func(m *wire.Message)) {
	bo := ListenBackoff()
	for {
		id := r.MintID("listen")
		body := wire.Request(id, "subscriptions/listen", params())
		var m wire.Message
		if wire.Parse(body, &m) != nil {
			return
		}
		resp, err := r.client.Post(ctx, body, r.HeadersFor(&m))
		switch {
		case ctx.Err() != nil:
			if resp != nil {
				resp.Close()
			}
			return
		case err != nil:
			var se *httpclient.StatusError
			if errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 &&
				se.StatusCode != http.StatusRequestTimeout && se.StatusCode != http.StatusTooManyRequests {
				r.log.Warn().Err(err).Msg("the remote refused subscriptions/listen: the host gets no change notifications")
				return
			}
			r.log.Debug().Err(err).Msg("subscriptions/listen failed")
		default:
			delivered, _ := r.readListen(resp, func(_ []byte, m *wire.Message) bool {
				if m.Kind == wire.KindResponse && string(m.IDBytes()) == string(id) {
					// The server ended the subscription gracefully; the loop
					// opens a new one.
					return true
				}
				each(m)
				return false
			})
			resp.Close()
			if ctx.Err() != nil {
				return
			}
			if delivered {
				bo.Reset()
			}
		}
		wait := bo.NextBackOff()
		r.log.Debug().Int64("in_ms", wait.Milliseconds()).Msg("re-opening subscriptions/listen")
		if !SleepCtx(ctx, wait) {
			return
		}
	}
}

// readListen reads one listen stream, each message that is JSON-RPC into
// each until it reports the stream's end (end), and reports whether
// anything came.
func (r *Remote) readListen(resp *httpclient.Response, each func(msg []byte, m *wire.Message) (end bool)) (delivered, end bool) {
	var m wire.Message // one per stream: each does not keep it
	for {
		msg, err := resp.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.log.Debug().Err(err).Msg("listen stream read")
			}
			return delivered, false
		}
		if !r.validJSON(msg) || wire.Parse(msg, &m) != nil {
			continue
		}
		delivered = true
		if each(msg, &m) {
			return true, true
		}
	}
}
