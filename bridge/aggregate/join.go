package aggregate

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A startup is the start of a session's servers, shared by initialize and
// the goroutines that start them. Its fields are guarded by session.mu.
type startup struct {
	got    []*downstream // by Config index: those started before closed
	done   []bool        // by Config index: started or failed before closed
	left   int           // servers neither started nor failed
	all    chan struct{} // closed when left reaches 0 before closed
	closed bool          // initialize has stopped waiting: the rest join
}

// startOrJoin starts server i. If initialize is still waiting, the server
// is handed to it; otherwise the server joins the session on its own.
func (s *session) startOrJoin(ctx context.Context, st *startup, i int, params []byte) {
	d := s.start(ctx, i, params)
	s.mu.Lock()
	late := st.closed
	if !late {
		st.got[i] = d
		st.done[i] = true
		st.left--
		if st.left == 0 {
			close(st.all)
		}
	}
	s.mu.Unlock()
	switch {
	case d == nil:
		s.retryStart(ctx, i, params)
	case late:
		s.join(ctx, d)
	default:
		d.open()
	}
}

// Delays between the starts of a server that failed to start or to
// initialize: a server still booting, or down for a while, joins the
// session when it answers instead of being left out for good.
const (
	firstRetry = time.Second
	maxRetry   = 30 * time.Second
)

// retryStart starts server i again, with a growing delay, until it starts
// (then it joins the session) or the session ends.
func (s *session) retryStart(ctx context.Context, i int, params []byte) {
	delay := firstRetry
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if d := s.start(ctx, i, params); d != nil {
			s.join(ctx, d)
			return
		}
		delay = min(2*delay, maxRetry)
		t.Reset(delay)
	}
}

// join adds a server that finished its initialize after the client's
// initialize was answered. Nothing of it reaches the client before that
// answer: what it sends is held until then (see open), and it gets its
// notifications/initialized only then (a server "SHOULD NOT send requests
// other than pings and logging before receiving the initialized
// notification", 2025-11-25 lifecycle). It is made routable, then opened,
// then the kinds it offers are listed again (which renews the catalog and
// reports collisions), and only then is the client told they changed, so
// that a client that lists again at once sees the server's entries and
// can call them.
//
// A late server ranks after every server already in the session, so that
// no name the client has seen changes owner: its entries are the ones
// renamed on a collision.
func (s *session) join(ctx context.Context, d *downstream) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return // shutdown closes it with the others
	}
	d.late = true
	if len(s.sendInitialized([]*downstream{d})) == 0 {
		return
	}
	if !s.publish([]*downstream{d}) {
		return
	}
	d.open()
	d.log.Info().Msg("aggregate: server joined the session late; its tools, prompts and resources join the lists")
	s.lateExtensions(d)
	var wg sync.WaitGroup
	for k := range numKinds {
		if d.caps.has(k) {
			wg.Go(func() { s.list(ctx, k) })
		}
	}
	wg.Wait()
	if ctx.Err() != nil || d.isGone() {
		return // a server that has ended announced its own leaving
	}
	for _, k := range []kind{kindTools, kindPrompts, kindResources} {
		if d.caps.has(k) {
			s.writeUp(wire.Notification(kinds[k].changed, nil))
		}
	}
}

// publish makes ds routable, after the servers already in the session.
// The slice the session holds is never changed once stored: a reader takes
// one snapshot (downstreams) and sees one consistent set. It reports false
// when the session is closing.
func (s *session) publish(ds []*downstream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	// A server that has ended (removed by a reload, say) leaves the set
	// here, so that the set does not grow with every reload.
	var old []*downstream
	for _, d := range s.downstreams() {
		if !d.left.Load() {
			old = append(old, d)
		}
	}
	next := make([]*downstream, 0, len(old)+len(ds))
	next = append(append(next, old...), ds...)
	for i, d := range ds {
		d.rank = len(old) + i
	}
	s.ds.Store(&next)
	return true
}

// downstreams returns the routable servers, in rank order: those ready
// when initialize was answered in Config order, then those that joined
// later in the order they joined. The caller must not change the slice.
func (s *session) downstreams() []*downstream {
	if p := s.ds.Load(); p != nil {
		return *p
	}
	return nil
}

// routable reports whether d is one of the session's routable servers.
func (s *session) routable(d *downstream) bool {
	return slices.Contains(s.downstreams(), d)
}
