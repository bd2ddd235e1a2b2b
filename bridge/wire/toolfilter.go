package wire

import "strconv"

// A tool filter (serve's per-server tools: {allow, deny}, connect's
// --tools-allow/--tools-deny) makes a tool neither listed nor callable.
// That rule lives here once; serve and connect only decide where to apply
// it. allowed reports whether a tool may be seen; nil allows every tool.

// HiddenCall reports whether m is a tools/call of a tool allowed refuses.
func HiddenCall(m *Message, allowed func(name string) bool) bool {
	return allowed != nil && m.Kind == KindRequest && m.Method == "tools/call" && !allowed(m.Name)
}

// HiddenCallError is the answer to a HiddenCall, with id: the same error
// a server gives for a tool it does not have, so a host cannot tell a
// hidden tool from an absent one.
func HiddenCallError(id []byte, name string) []byte {
	return ErrorResponse(id, CodeInvalidParams, "tool "+strconv.Quote(name)+" is not available", nil)
}

// FilterTools drops the tools allowed refuses from a tools/list result
// page. Only a page that hides something is re-encoded, and only its
// tools array changes; every other byte passes as the server wrote it. A
// message that is no tools/list result page is returned as it is.
func FilterTools(m *Message, allowed func(name string) bool) *Message {
	if allowed == nil || !m.Result.Present() {
		return m
	}
	tools, ok := Field(m.Raw, m.Result, "tools")
	if !ok {
		return m
	}
	elems, err := Elements(m.Raw, tools)
	if err != nil {
		return m
	}
	kept := make([]byte, 0, tools.End-tools.Start)
	kept = append(kept, '[')
	dropped := 0
	for _, e := range elems {
		if name, _ := StringField(m.Raw, e, "name"); !allowed(name) {
			dropped++
			continue
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, m.Raw[e.Start:e.End]...)
	}
	if dropped == 0 {
		return m
	}
	kept = append(kept, ']')
	var out Message
	if err := Parse(Splice(m.Raw, Edit{Span: tools, Value: kept}), &out); err != nil {
		return m
	}
	return &out
}
