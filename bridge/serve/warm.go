package serve

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// warmPool keeps Config.WarmChildren children started ahead of time for
// new legacy sessions with a child of their own (--warm-children). Node
// servers take 0.3-1.7 s to boot; a host that opens a session and calls a
// tool at once (Codex) otherwise starts its turn before the tools exist.
// A warm child is started after the era probe, so it is known to be a
// command that speaks the handshake era; it sees nothing until its
// session's initialize, which carries that client's own capabilities.
type warmPool struct {
	h     *Handler
	ready chan *warmChild // at most WarmChildren
	taken chan struct{}   // a child was taken: start another
}

type warmChild struct {
	conn *childConn
	host *stdiohost.Host
	to   *warmOwner
}

// warmOwner routes a warm child's messages to the session that took it;
// before that there is none, and a child that speaks first is ignored.
type warmOwner struct{ s atomic.Pointer[session] }

func (o *warmOwner) unrouted(c *childConn, m *wire.Message) {
	if s := o.s.Load(); s != nil {
		s.unrouted(c, m)
	}
}

func (o *warmOwner) childRequest(c *childConn, m *wire.Message) {
	if s := o.s.Load(); s != nil {
		s.childRequest(c, m)
		return
	}
	c.send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: no client yet", nil))
}

func newWarmPool(h *Handler) *warmPool {
	n := h.cfg.WarmChildren
	if n <= 0 || h.cfg.sessionMode() != SessionAuto {
		return nil
	}
	return &warmPool{h: h, ready: make(chan *warmChild, n), taken: make(chan struct{}, 1)}
}

// run keeps the pool full until ctx ends, then stops every warm child.
func (p *warmPool) run(ctx context.Context) {
	defer p.drain()
	select {
	case <-p.h.shared.known:
	case <-ctx.Done():
		return
	}
	if !p.h.shared.eras.legacy {
		return // sessions ride on the shared child: nothing to keep warm
	}
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(250*time.Millisecond), backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		for len(p.ready) < cap(p.ready) && ctx.Err() == nil {
			wc := p.start(ctx)
			if wc == nil {
				t := time.NewTimer(b.NextBackOff())
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				continue
			}
			b.Reset()
			p.ready <- wc // room: only run adds
		}
		select {
		case <-p.taken:
		case <-ctx.Done():
			return
		}
	}
}

// start starts a child and probes it with ping, which the handshake era
// allows before initialize (2025-11-25 lifecycle: the client "SHOULD NOT
// send requests other than pings before the server has responded to the
// initialize request"): any answer, error or not, shows it reads its
// input, so it has booted.
func (p *warmPool) start(ctx context.Context) *warmChild {
	to := &warmOwner{}
	conn := newChildConn(&p.h.ids, to, p.h.log.With().Str("child", "warm").Logger())
	host, err := startHost(p.h, conn)
	if err != nil {
		p.h.warn.Warn(p.h.log, "warm_start").Err(err).Msg("cannot start a warm child")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.h.cfg.startTimeout())
	defer cancel()
	if _, err := conn.request(ctx, "ping", nil); err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.h.warn.Warn(p.h.log, "warm_ping").Err(err).Msg("a warm child did not answer ping; stopped")
		}
		host.Close()
		conn.failAll("warm child stopped", nil)
		return nil
	}
	return &warmChild{conn: conn, host: host, to: to}
}

// take returns a warm child for s, or nils when none is ready.
func (p *warmPool) take(s *session) (*childConn, *stdiohost.Host) {
	if p == nil {
		return nil, nil
	}
	for {
		var wc *warmChild
		select {
		case wc = <-p.ready:
		default:
			return nil, nil
		}
		select {
		case p.taken <- struct{}{}:
		default:
		}
		select {
		case <-wc.host.Exited():
			wc.host.Close() // died while waiting: try the next
			continue
		default:
		}
		wc.to.s.Store(s)
		return wc.conn, wc.host
	}
}

func (p *warmPool) drain() {
	for {
		select {
		case wc := <-p.ready:
			wc.host.Close()
		default:
			return
		}
	}
}
