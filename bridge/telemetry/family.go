package telemetry

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

type kind uint8

const (
	kindCounter kind = iota
	kindGauge
	kindHistogram
	kindSummary
)

func (k kind) String() string {
	return [...]string{"counter", "gauge", "histogram", "summary"}[k]
}

// A family is one metric name of /metrics: its HELP and TYPE, its label
// names and one child per distinct set of label values. Children are made
// once (the Scopes keep the ones they use) and never removed; the request
// path updates a child without touching the family.
type family struct {
	name, help string
	kind       kind
	labels     []string  // sorted, as Prometheus prints them
	perm       []int     // perm[i]: where the caller's i-th value goes
	bounds     []float64 // histograms
	les        []string  // the bounds as le values, +Inf last

	mu       sync.Mutex
	children map[string]*child // by the values joined with labelSep
	added    []*child          // every child, in the order made
	sorted   []*child          // the children in label-value order as of the last scrape; replaced, never edited
}

// A child is one series (a histogram: one set of series) of a family.
type child struct {
	values []string // in the family's label order
	c      counter
	g      gauge
	h      *histogram
	fv     *float64 // a counter read at scrape time whose value is not whole
	s      *summary // scrape-time families only
}

// labelSep cannot occur in a label value that reaches a family (the caps
// admit valid UTF-8 only, and 0xff is never valid UTF-8).
const labelSep = "\xff"

// newFamily makes a family whose children the caller names by values in
// the order of labels.
func newFamily(name, help string, k kind, labels ...string) *family {
	f := &family{name: name, help: help, kind: k, children: map[string]*child{}}
	idx := make([]int, len(labels))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return labels[idx[a]] < labels[idx[b]] })
	f.labels = make([]string, len(labels))
	f.perm = make([]int, len(labels))
	for to, from := range idx {
		f.labels[to] = labels[from]
		f.perm[from] = to
	}
	if k == kindHistogram {
		f.bounds = durationBuckets
		for _, b := range f.bounds {
			f.les = append(f.les, string(appendFloat(nil, b)))
		}
		f.les = append(f.les, "+Inf")
	}
	return f
}

// with returns the child for values (in the order newFamily was given the
// label names), making it if need be. It allocates: call it once per
// label set and keep the child.
func (f *family) with(values ...string) *child {
	v := make([]string, len(values))
	for i, x := range values {
		v[f.perm[i]] = x
	}
	key := strings.Join(v, labelSep)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.children[key]; ok {
		return c
	}
	c := &child{values: v}
	if f.kind == kindHistogram {
		c.h = newHistogram(f.bounds)
	}
	f.children[key] = c
	f.added = append(f.added, c)
	return c
}

// series returns the children in a stable order (sorted by label values).
// The order is worked out again only when children were added since the
// last scrape; the slice returned is never changed afterwards.
func (f *family) series() []*child {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sorted) != len(f.added) {
		f.sorted = slices.Clone(f.added)
		slices.SortFunc(f.sorted, func(a, b *child) int { return slices.Compare(a.values, b.values) })
	}
	return f.sorted
}
