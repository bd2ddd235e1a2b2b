package lifecycle

import "sync"

// A Signal is one stage of a shutdown (draining, refusing, closing): a
// channel closed once, by the first Fire, however many callers fire it.
// It replaces a channel and the sync.Once beside it that every stage
// used to pair by hand. The zero value is ready to use; a Signal must not
// be copied after first use.
type Signal struct {
	make, fire sync.Once
	ch         chan struct{}
}

// Fire closes the Signal's channel; calling it again does nothing.
func (s *Signal) Fire() {
	s.make.Do(s.init)
	s.fire.Do(func() { close(s.ch) })
}

// Done returns a channel closed once Fire has been called.
func (s *Signal) Done() <-chan struct{} {
	s.make.Do(s.init)
	return s.ch
}

// Fired reports whether Fire has been called.
func (s *Signal) Fired() bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func (s *Signal) init() { s.ch = make(chan struct{}) }
