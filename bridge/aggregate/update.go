package aggregate

import "context"

// server returns the session's server i.
func (s *session) server(i int) Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[i]
}

// serverContext returns the context of server i's start, retries and
// join: the session's, ended early when update removes the server.
// s.mu is held.
func (s *session) serverContext(i int) context.Context {
	for len(s.stops) <= i {
		s.stops = append(s.stops, nil)
		s.removed = append(s.removed, false)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.stops[i] = cancel
	return ctx
}

// update applies SetServers to a running session: the servers named in
// remove are closed (each leaves the lists as a server that ends does,
// and the client is told), and those in add are started and join the
// session late. Before initialize began, the session simply starts with
// the new list.
func (s *session) update(add []Server, remove []string) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	var closing []*downstream
	for i, srv := range s.servers {
		if i < len(s.removed) && s.removed[i] {
			continue
		}
		for _, name := range remove {
			if srv.Name != name {
				continue
			}
			for len(s.removed) <= i {
				s.removed = append(s.removed, false)
				s.stops = append(s.stops, nil)
			}
			s.removed[i] = true
			if s.stops[i] != nil {
				s.stops[i]()
			}
			for _, d := range s.all {
				if d.idx == i {
					closing = append(closing, d)
				}
			}
		}
	}
	if s.params == nil {
		// initialize has not begun: it starts whatever the list is then.
		kept := s.servers[:0:0]
		for i, srv := range s.servers {
			if i >= len(s.removed) || !s.removed[i] {
				kept = append(kept, srv)
			}
		}
		s.servers, s.removed, s.stops = append(kept, add...), nil, nil
		s.mu.Unlock()
		return
	}
	params := s.params
	var starts []int
	var ctxs []context.Context
	for _, srv := range add {
		s.servers = append(s.servers, srv)
		i := len(s.servers) - 1
		starts = append(starts, i)
		ctxs = append(ctxs, s.serverContext(i))
	}
	s.mu.Unlock()
	for _, d := range closing {
		d.log.Info().Msg("aggregate: server removed from the configuration; its tools, prompts and resources leave the lists")
		d.removed.Store(true)
		d.closeInput()
	}
	for j, i := range starts {
		// Refused once shutdown joins the starts: the session is ending
		// and the server would join nothing.
		s.joiners.Go(func() { s.startLate(ctxs[j], i, params) })
	}
}

// startLate starts a server added to a running session; it joins once
// the session is ready, or is retried like a server that failed to
// start.
func (s *session) startLate(ctx context.Context, i int, params []byte) {
	if d := s.start(ctx, i, params); d != nil {
		s.join(ctx, d)
		return
	}
	s.retryStart(ctx, i, params)
}
