package wire

import "sync/atomic"

// SpliceParsed is SpliceTo for a caller that hands on the result parsed:
// it applies edits to m.Raw (appending to dst) and, when out is not nil,
// sets *out to Parse's reading of the result without reading it again —
// m's spans moved past the edits (Rebased). An edit that Rebased cannot
// account for makes it parse the result afresh; out is then left
// KindInvalid if that fails. bridge/serve's child reader uses it for the
// in-process entry, whose client (the aggregate) would otherwise parse
// every message the child's reader parsed already.
func SpliceParsed(dst []byte, m *Message, out *Message, edits ...Edit) []byte {
	raw := SpliceTo(dst, m.Raw, edits...) // sorts edits
	if out == nil {
		return raw
	}
	if !m.Rebased(raw, out, edits) {
		if Parse(raw, out) != nil {
			*out = Message{Raw: raw}
		}
	}
	return raw
}

// Rebased sets *out to m as it reads once edits, sorted and not
// overlapping, have been applied to m.Raw, raw being the result: every
// span after an edit moves by what the edit added or removed, a span the
// edit replaced whole becomes the new value's, and a span around an edit
// grows or shrinks with it. It is Parse's reading of raw (FuzzSpliceParsed)
// when each edit replaces the whole value of a span m locates that holds
// no other (an id, a progress token, a subscription id, a request id)
// with a value of the same kind, or lies inside the result object, which
// Parse does not walk; for any other edit it reports false and sets
// nothing.
func (m *Message) Rebased(raw []byte, out *Message, edits []Edit) bool {
	if len(edits) == 0 {
		if len(raw) != len(m.Raw) {
			return false
		}
		*out = *m
		out.Raw = raw
		return true
	}
	for _, e := range edits {
		if !m.valueSpan(e.Span) && !(m.Result.Start < e.Span.Start && e.Span.End < m.Result.End) {
			return false
		}
	}
	*out = *m
	out.Raw = raw
	out.shift(edits)
	return true
}

// WithoutSubscriptionID returns m's message without the subscription id
// in its _meta (WithoutFields; m.Raw itself when it has none) and, when
// out is not nil, sets *out to Parse's reading of the result without
// reading it again: what the cut removed holds nothing Parse keeps but
// SubscriptionID, which is absent from now on; every other span moves
// past the cut, and _meta and params around it shrink. The listen stream
// of a 2025 session on a 2026-07-28 child (translate/legacysession) hands
// the aggregate its notifications this way.
func WithoutSubscriptionID(m *Message, out *Message) []byte {
	var edits []Edit
	if m.SubscriptionID.Present() {
		edits = withoutFields(m.Raw, m.Meta, MetaSubscriptionID)
	}
	raw := m.Raw
	if len(edits) > 0 {
		raw = SpliceTo(nil, m.Raw, edits...)
	}
	if out != nil {
		*out = *m
		out.Raw = raw
		out.SubscriptionID = Span{}
		out.shift(edits)
	}
	return raw
}

// shift moves m's spans past edits, sorted and not overlapping, that have
// been applied to m.Raw (Rebased): a span an edit replaced whole becomes
// the new value's, one after an edit moves by what the edit added or
// removed, one around an edit grows or shrinks with it.
func (m *Message) shift(edits []Edit) {
	for _, s := range [...]*Span{&m.ID, &m.Params, &m.Result, &m.Error, &m.Arguments,
		&m.Meta, &m.RequestID, &m.ProgressToken, &m.SubscriptionID} {
		if !s.Present() {
			continue
		}
		start, end := s.Start, s.End
		for _, e := range edits {
			d := len(e.Value) - (e.Span.End - e.Span.Start)
			switch {
			case e.Span == Span{start, end}:
				// Replaced whole: the new value, where the
				// edits before it have moved it.
				s.End = s.Start + len(e.Value)
				continue
			case e.Span.End <= start:
				s.Start += d
			}
			if e.Span.Start < end && e.Span.End <= end {
				s.End += d
			}
		}
	}
}

// valueSpan reports whether s is exactly one of the spans of m that hold a
// plain value and nothing else m locates.
func (m *Message) valueSpan(s Span) bool {
	if !s.Present() {
		return false
	}
	switch s {
	case m.ID, m.ProgressToken, m.SubscriptionID, m.RequestID:
		return true
	}
	return false
}

// parseHook, when set, sees every message Parse reads (ObserveParses).
var parseHook atomic.Pointer[func(raw []byte)]

// ObserveParses makes f see every message Parse reads from now on, until
// the returned func is called: for tests that count how often a path
// parses a message (the aggregate's hop parses each once per direction).
// f runs on the parsing goroutine and must be safe for concurrent use.
func ObserveParses(f func(raw []byte)) (stop func()) {
	parseHook.Store(&f)
	return func() { parseHook.Store(nil) }
}
