package wire

import (
	"bytes"
	"encoding/json"
)

// InsertFields returns raw with fields — one or more `"key":value` pairs
// separated by commas — added at the start of the object at obj. The caller
// makes sure the keys are not already there.
func InsertFields(raw []byte, obj Span, fields []byte) []byte {
	// InsertEdit spliced, in one allocation: this runs on every traced
	// request.
	at := obj.Start + 1
	out := make([]byte, 0, len(raw)+len(fields)+1)
	out = append(append(out, raw[:at]...), fields...)
	if len(bytes.TrimSpace(raw[at:obj.End-1])) > 0 {
		out = append(out, ',')
	}
	return append(out, raw[at:]...)
}

// InsertEdit is the Edit of InsertFields, for callers that splice it
// together with other edits (one copy of the message): an insertion right
// after the object's '{'. The comma that separates fields from the
// object's members, when it has any, is appended to fields — in its spare
// capacity if it has some, so that a caller's stack buffer can hold it.
func InsertEdit(raw []byte, obj Span, fields []byte) Edit {
	at := obj.Start + 1
	if len(bytes.TrimSpace(raw[at:obj.End-1])) > 0 {
		fields = append(fields, ',')
	}
	return Edit{Span: Span{at, at}, Value: fields}
}

// cacheable lists the methods whose complete results carry caching hints
// (2026-07-28 caching: "Servers MUST include caching hints").
var cacheable = map[string]bool{
	"server/discover": true, "tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true,
}

// CompleteResultEdit returns the Edit that gives a handshake-era response
// to method what a 2026-07-28 result must carry: resultType "complete"
// ("result MUST include resultType") and, for cacheable methods, the
// caching hints, ttlMs 0 and cacheScope "private" (a legacy server says
// nothing about freshness, and its answer may depend on who asked). Each
// field is added only where absent; ok is false when none is missing or
// the response has no result object. Callers splice it together with
// their own edits (the id), so a large result is copied once.
func CompleteResultEdit(m *Message, method string) (e Edit, ok bool) {
	if !m.Result.Present() || m.Raw[m.Result.Start] != '{' {
		return Edit{}, false
	}
	want := [...]struct{ key, field string }{
		{"resultType", `"resultType":"complete"`},
		{"ttlMs", `"ttlMs":0`},
		{"cacheScope", `"cacheScope":"private"`},
	}
	n := 1
	if cacheable[method] {
		n = len(want)
	}
	var has [len(want)]bool
	if _, err := objectFields(m.Raw, m.Result.Start, func(key []byte, _, _ int) error {
		for i := range n {
			if string(key) == want[i].key {
				has[i] = true
			}
		}
		return nil
	}); err != nil {
		return Edit{}, false
	}
	var fields []byte
	for i := range n {
		if !has[i] {
			if len(fields) > 0 {
				fields = append(fields, ',')
			}
			fields = append(fields, want[i].field...)
		}
	}
	if fields == nil {
		return Edit{}, false
	}
	return InsertEdit(m.Raw, m.Result, fields), true
}

// WithParamsFields returns m's message with fields added to params,
// creating params when the message has none.
func WithParamsFields(m *Message, fields []byte) []byte {
	if m.Params.Present() && m.Raw[m.Params.Start] == '{' {
		return InsertFields(m.Raw, m.Params, fields)
	}
	obj := append(append([]byte{'{'}, fields...), '}')
	if m.Params.Present() { // params: null or a non-object: replace it
		return Splice(m.Raw, Edit{Span: m.Params, Value: obj})
	}
	// No params at all: add them after the method.
	end := bytes.LastIndexByte(m.Raw, '}')
	v := append(append([]byte(`,"params":`), obj...), '}')
	return Splice(m.Raw, Edit{Span: Span{end, len(m.Raw)}, Value: v})
}

// WithMetaFields returns m's message with fields added to params._meta,
// creating _meta (and params) when needed. It is how a legacy request gets
// the 2026-07-28 per-request envelope.
func WithMetaFields(m *Message, fields []byte) []byte {
	if m.Meta.Present() && m.Raw[m.Meta.Start] == '{' {
		return InsertFields(m.Raw, m.Meta, fields)
	}
	return WithParamsFields(m, append(append([]byte(`"_meta":{`), fields...), '}'))
}

// WithoutFields returns the object at obj without the listed top-level keys
// (a legacy peer does not know 2026-07-28's resultType, ttlMs, ...). It
// returns raw itself when none of them is present (or the object cannot be
// walked). The members that stay are not copied twice: the dropped ones are
// cut out with one Splice, which matters when the object is a result of
// several MiB.
func WithoutFields(raw []byte, obj Span, keys ...string) []byte {
	edits := withoutFields(raw, obj, keys...)
	if len(edits) == 0 {
		return raw
	}
	return Splice(raw, edits...)
}

// withoutFields returns the edits that cut keys out of obj, sorted; none
// when none of them is present or obj cannot be walked.
func withoutFields(raw []byte, obj Span, keys ...string) []Edit {
	if !obj.Present() || raw[obj.Start] != '{' {
		return nil
	}
	// A run of dropped members goes with the separator after it, up to the
	// next kept member; a run at the end goes with the separator before it.
	var edits []Edit
	keptEnd := obj.Start + 1 // just past the last kept member, or past '{'
	runStart, lastEnd := -1, 0
	_, err := objectFields(raw, obj.Start, func(key []byte, s, e int) error {
		drop := false
		for _, k := range keys {
			if string(key) == k {
				drop = true
				break
			}
		}
		start := memberStart(raw, key, s)
		switch {
		case drop && runStart < 0:
			runStart = start
		case !drop && runStart >= 0:
			edits = append(edits, Edit{Span: Span{runStart, start}})
			runStart = -1
		}
		if !drop {
			keptEnd = e
		}
		lastEnd = e
		return nil
	})
	if runStart >= 0 {
		edits = append(edits, Edit{Span: Span{keptEnd, lastEnd}})
	}
	if err != nil {
		return nil
	}
	return edits
}

// ResultType returns result.resultType of a response ("" when absent:
// "absent MUST be treated as complete").
func (m *Message) ResultType() string {
	if !m.Result.Present() {
		return ""
	}
	s, _ := StringField(m.Raw, m.Result, "resultType")
	return s
}

// Capabilities is the part of a client's capabilities a bridge acts on.
type Capabilities struct {
	Sampling    json.RawMessage `json:"sampling,omitempty"`
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	Roots       json.RawMessage `json:"roots,omitempty"`
}

// Allows reports whether capabilities declared cover a server-to-client
// request method.
func (c Capabilities) Allows(method string) bool {
	switch method {
	case "sampling/createMessage":
		return c.Sampling != nil
	case "elicitation/create":
		return c.Elicitation != nil
	case "roots/list":
		return c.Roots != nil
	case "ping":
		return true
	}
	return false
}

// ClientCapabilities decodes _meta's clientCapabilities of a modern request.
func (m *Message) ClientCapabilities() Capabilities {
	var c Capabilities
	if sp, ok := Field(m.Raw, m.Meta, MetaClientCapabilities); ok {
		json.Unmarshal(m.Bytes(sp), &c)
	}
	return c
}
