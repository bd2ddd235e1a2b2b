package telemetry

import (
	"bytes"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Passing the trace context on: the request the bridge relays carries, in
// params._meta, the context its peer (the child, the remote server)
// should continue.

// Relay returns the message to send on for the request o observes: m with
// params._meta carrying Propagate's context (edited in place, see
// WithTrace), or m as it is when it holds that context already. meta is
// what m's _meta carries (ReadMeta). The traceparent is formatted on the
// stack: this runs on every traced request.
func (o *Op) Relay(m *wire.Message, meta MetaTrace) *wire.Message {
	var buf [traceparentLen]byte
	parent, state := o.propagate(&buf)
	return relay(m, parent, state, &meta)
}

// relay is the edit of Relay and Relayed: none when there is no context
// to pass on, or m carries it already.
func relay(m *wire.Message, parent, state string, meta *MetaTrace) *wire.Message {
	if meta.carries(parent, state) {
		return m // nothing the peer does not have already
	}
	return withTrace(m, parent, state, meta)
}

// carries reports whether the _meta t was read from needs no edit to pass
// on parent and state: there is none to pass, or it holds them already.
func (t *MetaTrace) carries(parent, state string) bool {
	return parent == "" || parent == t.Parent && state == t.State
}

// Hold keeps meta, what ReadMeta read of the request, for RelayEdits:
// the trace context then goes into the copy of the request its relay
// makes anyway (serve's child connection rewrites every request's id),
// not into a copy of its own. A path that passes the request on some
// other way calls Relayed. Only the request's goroutine calls these three,
// before End.
func (o *Op) Hold(meta MetaTrace) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if r := o.r; r != nil {
		r.meta, r.held = meta, true
	}
	o.mu.Unlock()
}

// Relayed is Relay with what Hold kept: m edited to carry the context
// (and nothing is held any more: RelayEdits then has none), or m as
// it is when nothing is held.
func (o *Op) Relayed(m *wire.Message) *wire.Message {
	if o == nil {
		return m
	}
	var buf [traceparentLen]byte
	o.mu.Lock()
	r := o.r
	if r == nil || !r.held {
		o.mu.Unlock()
		return m
	}
	meta := r.meta
	r.meta, r.held = MetaTrace{}, false
	parent, state := r.propagate(&buf)
	o.mu.Unlock()
	return relay(m, parent, state, &meta)
}

// RelayRoom is the room RelayEdits' values usually need: a caller's stack
// array of it keeps them off the heap.
const RelayRoom = addRoom + 1

// RelayEdits returns, in e[:n], the edits of m.Raw that put the context
// Hold's request should pass on into params._meta — values replaced, or
// members added to the _meta object — for the caller to splice together
// with its own edits of m: one copy of the message for both. Their values
// are written to room (appended to: given a stack array of RelayRoom
// bytes, nothing is allocated). When the context cannot go in as such
// edits (no _meta object, or one key replaced and the other added), m
// itself is edited as Relay does and n is 0: the caller must take m's
// spans after this call. Unlike Relayed it may run again for the same
// request (a resend carries the context again).
func (o *Op) RelayEdits(m *wire.Message, room []byte) (e [2]wire.Edit, n int) {
	if o == nil {
		return e, 0
	}
	var buf [traceparentLen]byte
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.r
	if r == nil || !r.held {
		return e, 0
	}
	mt := &r.meta
	parent, state := r.propagate(&buf)
	if mt.carries(parent, state) {
		return e, 0
	}
	me, add, ok := traceEdits(m, parent, state, room, mt)
	switch {
	case !ok:
		return e, 0
	case len(add) == 0:
		return me.e, me.n
	case me.n == 0 && m.Meta.Present() && m.Raw[m.Meta.Start] == '{':
		e[0] = wire.InsertEdit(m.Raw, m.Meta, add)
		return e, 1
	}
	withTrace(m, parent, state, mt)
	return e, 0
}

// WithTrace is WithTraceContext for a relay: it edits *m in place (m then
// holds a new Raw; the bytes it held before are left as they were) and
// returns m, also when it cannot be edited (it then travels as sent). The
// common edits — members added to an existing _meta object, or the values
// of the keys it has replaced — move m's spans instead of reading the
// message again (wire.Message.Shifted; FuzzWithTraceContext checks the
// result against Parse): on every traced request, the second parse cost as
// much as the rest of the span.
func WithTrace(m *wire.Message, parent, state string) *wire.Message {
	return withTrace(m, parent, state, nil)
}

// withTrace is WithTrace with what ReadMeta read of m's _meta, if it did
// (nil: nothing known).
func withTrace(m *wire.Message, parent, state string, mt *MetaTrace) *wire.Message {
	var room [addRoom]byte
	me, add, ok := traceEdits(m, parent, state, room[:0], mt)
	edits := me.e[:me.n]
	switch {
	case !ok:
		return m
	case len(edits) == 0 && m.Meta.Present() && m.Raw[m.Meta.Start] == '{':
		raw := wire.InsertFields(m.Raw, m.Meta, add)
		*m = m.Shifted(raw, m.Meta.Start+1, len(raw)-len(m.Raw))
		return m
	case len(add) == 0:
		// Each value is one token between others: the spans after it
		// move, those around it grow, by the change in its length. From
		// the last edit back, so that each offset is still the original.
		raw := wire.Splice(m.Raw, edits...) // sorts edits
		out := *m
		for i := len(edits) - 1; i >= 0; i-- {
			e := edits[i]
			out = out.Shifted(raw, e.Span.End, len(e.Value)-(e.Span.End-e.Span.Start))
		}
		*m = out
		return m
	}
	var out wire.Message
	if wire.Parse(applyTrace(m, edits, add), &out) != nil {
		return m
	}
	*m = out
	return m
}

// addRoom is the stack room WithTrace gives the members it adds, or the
// values it replaces: both as they usually are (a 55-byte traceparent, a
// short tracestate, no escapes).
const addRoom = 2*len(`"tracestate":"",`) + traceparentLen + 64

// WithTraceContext returns m with params._meta.traceparent (and tracestate,
// when given) set: replaced where present, added where not. It returns nil
// when _meta holds the keys in a form it cannot edit unambiguously
// (duplicated, escaped): the message then travels as the client sent it.
func WithTraceContext(m *wire.Message, parent, state string) []byte {
	me, add, ok := traceEdits(m, parent, state, nil, nil)
	if !ok {
		return nil
	}
	return applyTrace(m, me.e[:me.n], add)
}

// metaEdits are the values of _meta keys to replace: at most the two of
// the trace context, held by value so that they can live on the stack.
type metaEdits struct {
	n int
	e [2]wire.Edit
}

// traceEdits returns how to put the trace context into m's _meta: edits
// of the keys it has, and the members to add for those it lacks; ok is
// false when there is nothing to do or the edit would be ambiguous. The new
// values and the members are appended to room (which may be nil), so that a
// caller can give them stack space. mt, if not nil, is what ReadMeta read
// of m: that _meta holds neither key in any spelling (both are added), or
// where the keys' values are (no walk of _meta here).
func traceEdits(m *wire.Message, parent, state string, room []byte, mt *MetaTrace) (me metaEdits, add []byte, ok bool) {
	if m.Meta.Present() && m.Raw[m.Meta.Start] != '{' {
		return metaEdits{}, nil, false // a _meta that is not an object: not ours to fix
	}
	// One pass tells the usual _meta, which has neither key, from one
	// that needs the look at each.
	known := mt.of(m)
	look := !(known && mt.absent) && m.Meta.Present() && mayTrace(m.Bytes(m.Meta))
	walked := look && known && mt.walked
	found := [...]struct {
		sp wire.Span
		ok bool
	}{{}, {}}
	if walked {
		found[0].sp, found[0].ok, found[1].sp, found[1].ok = mt.pSpan, mt.pOK, mt.sSpan, mt.sOK
	}
	fields := [...]struct{ key, quoted, val string }{
		{"traceparent", `"traceparent":`, parent}, {"tracestate", `"tracestate":`, state}}
	var missing [len(fields)]bool
	// The replaced values first, then the added members after them in
	// room: add grows at room's end, and nothing may be appended to room
	// after it (the two would share bytes; FuzzWithTraceContext found a
	// tracestate value written over an added traceparent).
	for i, f := range fields {
		if f.val == "" {
			continue
		}
		// Not ambiguous means not there in any spelling (see ambiguous),
		// without walking _meta.
		sp, ok := found[i].sp, found[i].ok
		if !ok && (!look || !ambiguous(m.Bytes(m.Meta), f.key)) {
			missing[i] = true
			continue
		}
		if !ok && !walked {
			sp, ok = wire.Field(m.Raw, m.Meta, f.key)
		}
		if !ok {
			return metaEdits{}, nil, false // there, but not in one plain spelling
		}
		at := len(room)
		room = wire.AppendString(room, f.val)
		me.e[me.n] = wire.Edit{Span: sp, Value: room[at:len(room):len(room)]}
		me.n++
	}
	adding := false
	for i, f := range fields {
		if !missing[i] {
			continue
		}
		if !adding {
			adding = true
			add = room[len(room):]
		} else {
			add = append(add, ',')
		}
		add = wire.AppendString(append(add, f.quoted...), f.val)
	}
	return me, add, me.n > 0 || adding
}

// applyTrace makes the edited message.
func applyTrace(m *wire.Message, edits []wire.Edit, add []byte) []byte {
	if len(edits) > 0 && len(add) > 0 {
		// Replace first, then add to the edited message.
		var mid wire.Message
		if wire.Parse(wire.Splice(m.Raw, edits...), &mid) != nil {
			return nil
		}
		return wire.WithMetaFields(&mid, add)
	}
	if len(add) > 0 {
		return wire.WithMetaFields(m, add)
	}
	if len(edits) > 0 {
		return wire.Splice(m.Raw, edits...)
	}
	return nil
}

// ambiguous reports whether the _meta object meta may hold key in a
// spelling a decoder takes for it — encoding/json matches keys by case
// folding, Unicode's included — so that adding the plain key would make two
// of it: key (without its first letter, which an escape may stand for) in
// any ASCII case, any escape, or the two non-ASCII letters that fold to
// ASCII ones ('ſ' to s, the Kelvin sign to k). Refusing is safe: the message
// then travels as the client sent it.
func ambiguous(meta []byte, key string) bool {
	return containsFold(meta, key[1:]) || bytes.Contains(meta, []byte(`\u`)) ||
		bytes.Contains(meta, []byte("\u017f")) || bytes.Contains(meta, []byte("\u212a"))
}

// containsFold reports whether b contains s (lower-case ASCII letters) in
// any ASCII case. It jumps between the places s's first letter occurs, in
// either case, rather than comparing at every byte: _meta objects of the
// 2026-07-28 envelope are a few hundred bytes, on every traced request.
func containsFold(b []byte, s string) bool {
	lo, up := s[0], s[0]-'a'+'A'
	nextLo, nextUp := bytes.IndexByte(b, lo), bytes.IndexByte(b, up)
	for nextLo >= 0 || nextUp >= 0 {
		i := nextLo
		if i < 0 || (nextUp >= 0 && nextUp < i) {
			i = nextUp
		}
		if len(b)-i < len(s) {
			return false
		}
		if bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
		// Advance past i whichever of the two it was.
		if i == nextLo {
			if j := bytes.IndexByte(b[i+1:], lo); j >= 0 {
				nextLo = i + 1 + j
			} else {
				nextLo = -1
			}
		} else {
			if j := bytes.IndexByte(b[i+1:], up); j >= 0 {
				nextUp = i + 1 + j
			} else {
				nextUp = -1
			}
		}
	}
	return false
}
