package serve

import "strings"

// Content negotiation for the MCP endpoint: one reading of Accept for POST
// and GET, so that a header one of them admits the other does not refuse.
//
// RFC 9110 §12.5.1: "The asterisk "*" character is used to group media
// types into ranges, with "*/*" indicating all media types and "type/*"
// indicating all subtypes of that type"; "Media ranges can be overridden
// by more specific media ranges or specific media types. If more than one
// media range applies to a given type, the most specific reference has
// precedence"; and a weight of 0 means "not acceptable" (§12.4.2). Accept
// is a list field, so it may come as several header lines (§5.3).
// Parameters other than the weight are ignored: the bridge sends its two
// types without any.

// acceptsBoth reports whether Accept admits both JSON and SSE, as a POST
// must (2025-03-26+: clients MUST list "application/json,
// text/event-stream"; curl's */* admits both).
func acceptsBoth(accept []string) bool {
	return accepts(accept, "application", "json") && accepts(accept, "text", "event-stream")
}

// acceptsSSE reports whether Accept admits an event stream, as a GET must.
func acceptsSSE(accept []string) bool { return accepts(accept, "text", "event-stream") }

// accepts reports whether the Accept field values admit typ/sub: the most
// specific media range that matches it decides, by its weight. Without any
// Accept there is nothing to match: the MCP transports require the header,
// so its absence is refused (406) like a header that lists other types.
// It does not allocate: it runs for every request.
func accepts(accept []string, typ, sub string) bool {
	best, ok := -1, false // specificity of the best match so far: 0 */*, 1 type/*, 2 type/sub
	for _, v := range accept {
		for rest := v; rest != ""; {
			var elem string
			elem, rest, _ = strings.Cut(rest, ",")
			rt, rs, q := mediaRange(elem)
			spec := -1
			switch {
			case rt == "*" && rs == "*":
				spec = 0
			case strings.EqualFold(rt, typ) && rs == "*":
				spec = 1
			case strings.EqualFold(rt, typ) && strings.EqualFold(rs, sub):
				spec = 2
			}
			if spec > best {
				best, ok = spec, q
			}
		}
	}
	return ok
}

// mediaRange splits one element of Accept into its type, its subtype and
// whether its weight is above zero (a missing or unreadable weight counts
// as 1: "q=0" and its spellings "0.0", "0.000" are what refuse).
func mediaRange(elem string) (typ, sub string, weighted bool) {
	mr, params, _ := strings.Cut(elem, ";")
	typ, sub, _ = strings.Cut(strings.TrimSpace(mr), "/")
	weighted = true
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(name), "q") {
			weighted = !zeroWeight(strings.TrimSpace(value))
		}
	}
	return typ, sub, weighted
}

// zeroWeight reports whether a qvalue ("0" [ "." 0*3DIGIT ]) is zero.
func zeroWeight(v string) bool {
	if v == "" || v[0] != '0' {
		return false
	}
	return strings.Trim(v[1:], ".0") == "" && strings.Count(v, ".") <= 1
}
