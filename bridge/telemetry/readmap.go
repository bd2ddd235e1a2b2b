package telemetry

import (
	"maps"
	"sync"
	"sync/atomic"
)

// A readMap is a map for the request path: looking up a key that has been
// there a while is an atomic load and a map read — no lock, no write to
// memory shared between cores (a sync.RWMutex's read lock is one, and
// under parallel requests that cache line is what they wait on). Keys
// are added under mu to dirty and become lock-free once the lookups that
// missed read add up to dirty's size, when dirty is copied into a new read
// map (the scheme of sync.Map, whose any-typed keys would allocate here).
// Entries are never removed: the caps bound them.
type readMap[K comparable, V any] struct {
	read atomic.Pointer[map[K]V] // never written once stored

	mu     sync.Mutex
	dirty  map[K]V // every entry; nil until the first store
	misses int
}

func (m *readMap[K, V]) load(k K) (V, bool) {
	if v, ok := m.peek(k); ok {
		return v, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.dirty[k]
	if ok {
		m.missed()
	}
	return v, ok
}

// peek is load without the locked look at what is not yet published: for
// a lookup that has a slower way to the same answer, and must not take
// the lock on every miss.
func (m *readMap[K, V]) peek(k K) (V, bool) {
	if r := m.read.Load(); r != nil {
		v, ok := (*r)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// loadOrStore returns the value of k, storing make()'s if there is none
// (make runs under the lock: once per key).
func (m *readMap[K, V]) loadOrStore(k K, make func() V) V {
	if v, ok := m.load(k); ok {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.dirty[k]; ok {
		return v
	}
	if m.dirty == nil {
		m.dirty = map[K]V{}
	}
	v := make()
	m.dirty[k] = v
	m.missed()
	return v
}

// len is the number of entries.
func (m *readMap[K, V]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.dirty)
}

// missed counts a lookup that read could not answer, and publishes dirty
// when they have cost as much as copying it would. Called under mu.
func (m *readMap[K, V]) missed() {
	m.misses++
	if m.misses >= len(m.dirty) {
		m.publish()
	}
}

// publish makes every entry lock-free. Called under mu.
func (m *readMap[K, V]) publish() {
	r := maps.Clone(m.dirty)
	m.read.Store(&r)
	m.misses = 0
}
