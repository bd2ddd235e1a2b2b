package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A modern client's subscriptions/listen on a legacy child, whose change
// notifications are unsolicited and session-wide: the machine is
// translate's ListenHub (listenhub.go), one per shared child; serve holds
// the listen's event stream open and is the hub's back: the child's
// advertised capabilities and its resources/subscribe.

// changeCapabilities reads the change notifications the child sends from
// the DiscoverResult clients get.
func (s *sharedChild) changeCapabilities() translate.ChangeCaps {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	json.Unmarshal(s.discoverResult(), &r)
	return translate.ParseChangeCaps(r.Capabilities)
}

// serveLegacyListen answers a modern subscriptions/listen in front of a
// legacy child, until the client closes the stream or the bridge shuts
// down.
func (h *Handler) serveLegacyListen(w http.ResponseWriter, r *http.Request, m *wire.Message, sc *sharedChild, conn *childConn) {
	sk := h.newSink(1)
	// A listen stream the bridge serves itself is no call at the child, but
	// it is a request in flight like one (--max-inflight).
	h.lim.started()
	defer h.lim.ended(1)
	l := sc.listen.Open(r.Context(), childBack{sc, conn}, m, clone(m.IDBytes()), func(msg []byte) { sk.push(msg, false) })
	defer func() {
		sc.listen.Close(l)
		sk.close()
	}()
	rsp := newResponder(w, true)
	if pump(r.Context(), rsp, sk, h.ka, h.refusing.Done(), nil) == pumpStopped {
		rsp.event(l.Closing())
	}
}

// resubscribe restores the child's resource subscriptions after a restart.
func (s *sharedChild) resubscribe(conn *childConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.listen.Resubscribe(ctx, childBack{s, conn})
}

// childBack is a legacy child as the back of its listen hub.
type childBack struct {
	s    *sharedChild
	conn *childConn
}

func (b childBack) ChangeCaps() translate.ChangeCaps { return b.s.changeCapabilities() }

func (b childBack) Subscribe(ctx context.Context, uri string) error {
	return b.request(ctx, "resources/subscribe", uri)
}

func (b childBack) Unsubscribe(uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.request(ctx, "resources/unsubscribe", uri)
}

func (b childBack) request(ctx context.Context, method, uri string) error {
	params := append(wire.AppendString([]byte(`{"uri":`), uri), '}')
	resp, err := b.conn.request(ctx, method, params)
	if err == nil && resp.Error.Present() {
		err = errors.New("the child answered " + string(resp.Bytes(resp.Error)))
	}
	if err != nil {
		b.s.h.log.Warn().Err(err).Str("uri", uri).Str("method", method).Msg("resource subscription at the child failed")
	}
	return err
}
