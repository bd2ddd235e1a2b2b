package child

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A modern client's subscriptions/listen on a legacy child, whose change
// notifications are unsolicited and session-wide: the machine is
// translate's ListenHub (listenhub.go), one per shared child; serve holds
// the listen's event stream open (serveLegacyListen), and the child is the
// hub's back: its advertised capabilities and its resources/subscribe.

// changeCapabilities reads the change notifications the child sends from
// the DiscoverResult clients get.
func (s *Shared) changeCapabilities() translate.ChangeCaps {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	json.Unmarshal(s.DiscoverResult(), &r)
	return translate.ParseChangeCaps(r.Capabilities)
}

// resubscribe restores the child's resource subscriptions after a restart.
func (s *Shared) resubscribe(conn *Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Listen.Resubscribe(ctx, childBack{s, conn})
}

// childBack is a legacy child as the back of its listen hub.
type childBack struct {
	s    *Shared
	conn *Conn
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
	resp, err := b.conn.Request(ctx, method, params)
	if err == nil && resp.Error.Present() {
		err = errors.New("the child answered " + string(resp.Bytes(resp.Error)))
	}
	if err != nil {
		b.s.env.Log.Warn().Err(err).Str("uri", uri).Str("method", method).Msg("resource subscription at the child failed")
	}
	return err
}

// ListenBack is conn, the shared child's current connection, as the back
// of the listen hub.
func (s *Shared) ListenBack(conn *Conn) translate.ListenBack { return childBack{s, conn} }
