package child

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// WarmPool keeps Config.WarmChildren children started ahead of time for
// new legacy sessions with a child of their own (--warm-children). Node
// servers take 0.3-1.7 s to boot; a host that opens a session and calls a
// tool at once (Codex) otherwise starts its turn before the tools exist.
// A warm child is started after the era probe, so it is known to be a
// command that speaks the handshake era; it sees nothing until its
// session's initialize, which carries that client's own capabilities.
type WarmPool struct {
	env   *Env
	first *Shared         // the Handler's first child, whose era probe decides
	ready chan *warmChild // at most WarmChildren
	taken chan struct{}   // a child was taken: start another
}

type warmChild struct {
	conn *Conn
	host *stdiohost.Host
	to   *warmOwner
}

// warmOwner routes a warm child's messages to the session that took it;
// before that there is none, and a child that speaks first is ignored.
type warmOwner struct{ s atomic.Pointer[Owner] }

func (o *warmOwner) Unrouted(c *Conn, m *wire.Message) {
	if s := o.s.Load(); s != nil {
		(*s).Unrouted(c, m)
	}
}

func (o *warmOwner) ChildRequest(c *Conn, m *wire.Message) {
	if s := o.s.Load(); s != nil {
		(*s).ChildRequest(c, m)
		return
	}
	c.Send(wire.ErrorResponse(m.IDBytes(), wire.CodeInternalError, "mcp-bridge: no client yet", nil))
}

// NewWarmPool returns the pool of env.WarmChildren, nil when there are
// none to keep (the front asks for none unless each legacy session has a
// child of its own).
func NewWarmPool(env *Env, first *Shared) *WarmPool {
	n := env.WarmChildren
	if n <= 0 {
		return nil
	}
	return &WarmPool{env: env, first: first, ready: make(chan *warmChild, n), taken: make(chan struct{}, 1)}
}

// Run keeps the pool full until ctx ends, then stops every warm child.
func (p *WarmPool) Run(ctx context.Context) {
	defer p.drain()
	select {
	case <-p.first.known:
	case <-ctx.Done():
		return
	}
	if !p.first.eras.legacy {
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
func (p *WarmPool) start(ctx context.Context) *warmChild {
	to := &warmOwner{}
	conn := NewConn(&p.env.IDs, to, p.env.Log.With().Str("child", "warm").Logger())
	host, err := p.env.StartHost(conn)
	if err != nil {
		p.env.Warn.Warn(p.env.Log, "warm_start").Err(err).Msg("cannot start a warm child")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.env.StartTimeout)
	defer cancel()
	if _, err := conn.Request(ctx, "ping", nil); err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.env.Warn.Warn(p.env.Log, "warm_ping").Err(err).Msg("a warm child did not answer ping; stopped")
		}
		host.Close()
		conn.FailAll("warm child stopped", nil)
		return nil
	}
	return &warmChild{conn: conn, host: host, to: to}
}

// Take returns a warm child for s, whose messages go to s from now on, or
// nils when none is ready.
func (p *WarmPool) Take(s Owner) (*Conn, *stdiohost.Host) {
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
		wc.to.s.Store(&s)
		return wc.conn, wc.host
	}
}

func (p *WarmPool) drain() {
	for {
		select {
		case wc := <-p.ready:
			wc.host.Close()
		default:
			return
		}
	}
}

// Ready returns how many warm children wait for a session.
func (p *WarmPool) Ready() int { return len(p.ready) }
