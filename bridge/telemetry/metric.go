package telemetry

import (
	"math"
	"sort"
	"sync/atomic"
)

// The metric types are lock-free: the request path touches a few atomics
// and never a lock or the heap. A scrape reads them while they change, so
// it sees each value as of some moment during the scrape (Prometheus asks
// no more of a counter).

// A counter counts events; it only goes up, by whole numbers.
type counter struct{ n atomic.Uint64 }

func (c *counter) inc() { c.n.Add(1) }

// A gauge is a float64 that goes up and down (its bits, so that it can be
// updated by compare-and-swap).
type gauge struct{ bits atomic.Uint64 }

func (g *gauge) add(d float64) { addFloat(&g.bits, d) }
func (g *gauge) set(v float64) { g.bits.Store(math.Float64bits(v)) }
func (g *gauge) get() float64  { return math.Float64frombits(g.bits.Load()) }

// addFloat adds d to the float64 whose bits b holds.
func addFloat(b *atomic.Uint64, d float64) {
	for {
		old := b.Load()
		if b.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// A histogram counts observations into fixed buckets. counts[i] holds the
// observations in (bounds[i-1], bounds[i]], the last one those above every
// bound (+Inf): they are not cumulative, so an observation is one add, and
// the total count is their sum (it therefore always equals the +Inf
// bucket, as Prometheus requires, however a scrape interleaves).
type histogram struct {
	bounds []float64 // sorted, shared by every histogram of a family
	counts []atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	// Prometheus buckets are upper-inclusive ("le"): the first bound >= v.
	// NaN lands in +Inf, as sort.SearchFloat64s puts it past every bound.
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i].Add(1)
	addFloat(&h.sum, v)
}

// snapshot returns the cumulative bucket counts (the last is the total)
// and the sum.
func (h *histogram) snapshot(cum []uint64) ([]uint64, float64) {
	cum = cum[:0]
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
		cum = append(cum, n)
	}
	return cum, math.Float64frombits(h.sum.Load())
}

// A summary is read whole at scrape time (go_gc_duration_seconds): the
// quantiles given, the sum and the count.
type summary struct {
	quantiles, values []float64
	sum               float64
	count             uint64
}
