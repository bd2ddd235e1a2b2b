package wire

import (
	"bytes"
	"encoding/json"
)

// InsertFields returns raw with fields — one or more `"key":value` pairs
// separated by commas — added at the start of the object at obj. The caller
// makes sure the keys are not already there.
func InsertFields(raw []byte, obj Span, fields []byte) []byte {
	inner := bytes.TrimSpace(raw[obj.Start+1 : obj.End-1])
	v := make([]byte, 0, len(fields)+2)
	v = append(append(v, '{'), fields...)
	if len(inner) > 0 {
		v = append(v, ',')
	}
	return Splice(raw, Edit{Span: Span{obj.Start, obj.Start + 1}, Value: v})
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

// WithResultFields returns a response with fields added at the start of its
// result object (e.g. `"resultType":"complete"` for a 2026-07-28 client).
func WithResultFields(m *Message, fields []byte) []byte {
	if !m.Result.Present() || m.Raw[m.Result.Start] != '{' {
		return m.Raw
	}
	return InsertFields(m.Raw, m.Result, fields)
}

// WithoutFields returns the object at obj without the listed top-level keys
// (a legacy peer does not know 2026-07-28's resultType, ttlMs, ...). It
// returns raw itself when none of them is present.
func WithoutFields(raw []byte, obj Span, keys ...string) []byte {
	if !obj.Present() || raw[obj.Start] != '{' {
		return raw
	}
	type member struct{ keyStart, valEnd int }
	var drop []Edit
	var members []member
	objectFields(raw, obj.Start, func(key []byte, s, e int) error {
		// The key starts at the quote before it: search back from the value.
		k := bytes.LastIndex(raw[:s], append(append([]byte{'"'}, key...), '"'))
		members = append(members, member{k, e})
		for _, want := range keys {
			if string(key) == want {
				drop = append(drop, Edit{Span: Span{k, e}})
			}
		}
		return nil
	})
	if len(drop) == 0 {
		return raw
	}
	// Rebuild the object from the members that stay: simpler than fixing up
	// commas around the holes.
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, mb := range members {
		skip := false
		for _, d := range drop {
			if d.Span.Start == mb.keyStart {
				skip = true
			}
		}
		if skip {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(raw[mb.keyStart:mb.valEnd])
	}
	b.WriteByte('}')
	return Splice(raw, Edit{Span: obj, Value: b.Bytes()})
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
