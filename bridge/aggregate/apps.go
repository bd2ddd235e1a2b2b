package aggregate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// MCP Apps (SEP-1865, extension io.modelcontextprotocol/ui) through the
// aggregate.
//
// A UI resource "MUST use the `ui://` URI scheme to distinguish UI
// resources from other MCP resource types", and a tool names the one it
// renders with in _meta.ui.resourceUri, which the host reads with
// resources/read. The aggregate therefore never moves a ui:// URI to
// another scheme: every ui:// URI of a server is exposed as
//
//	ui://<server>/<the URI without "ui://">
//
// ui://dashboard of server weather is ui://weather/dashboard. The server
// goes in the authority because that is where the SEP's own examples put
// the server ("ui://weather-server/dashboard-template"), so the exposed
// URI reads as the specification's; and because it is applied to every
// ui:// URI, not only to colliding ones, the server of a URI is known from
// the URI alone: a UI resource the server leaves out of resources/list
// (the SEP lets it: "Servers MAY omit UI-only resources from
// resources/list") and knows only from a tool's _meta is routed all the
// same, and two servers' ui://dashboard never collide. The same rewrite
// applies wherever a server names a ui:// URI: resources/list,
// resources/templates/list, a tool's _meta.ui.resourceUri (and the
// deprecated _meta["ui/resourceUri"]), the contents of a resources/read
// answer and notifications/resources/updated; requests naming the exposed
// form reach the server under its own URI.

// uiScheme is the scheme of MCP App resources.
const uiScheme = "ui://"

// isUI reports whether uri is a ui:// URI (a scheme is case-insensitive).
func isUI(uri string) bool {
	return len(uri) >= len(uiScheme) && strings.EqualFold(uri[:len(uiScheme)], uiScheme)
}

// uiExposed is the URI the client sees for server's ui:// URI.
func uiExposed(server, uri string) string {
	return uiScheme + escapeAuthority(server) + "/" + uri[len(uiScheme):]
}

// splitUI undoes uiExposed: the server named by the authority, and the
// server's own URI.
func splitUI(uri string) (server, orig string, ok bool) {
	if !isUI(uri) {
		return "", "", false
	}
	auth, rest, ok := strings.Cut(uri[len(uiScheme):], "/")
	if !ok || auth == "" {
		return "", "", false
	}
	server, ok = unescapeAuthority(auth)
	return server, uiScheme + rest, ok
}

// escapeAuthority percent-encodes every byte of a server name that is not
// an RFC 3986 unreserved character, so that the name is one reg-name
// (config names are letters, digits, '-' and '_' and come out unchanged).
func escapeAuthority(name string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func unescapeAuthority(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// routeUI finds the server of a ui:// URI in the exposed form. Called with
// s.mu held.
func routeUI(ds []*downstream, uri string) (entry, bool) {
	server, orig, ok := splitUI(uri)
	if !ok {
		return entry{}, false
	}
	i := slices.IndexFunc(ds, func(d *downstream) bool { return d.name == server })
	if i < 0 {
		return entry{}, false
	}
	return entry{d: ds[i], orig: orig}, true
}

// uiMetaEdits rewrites the ui:// references in a tool entry of server's
// tools/list: _meta.ui.resourceUri, and the flat _meta["ui/resourceUri"]
// the SEP deprecates but servers still send.
func uiMetaEdits(tool []byte, server string) []wire.Edit {
	meta, ok := wire.Field(tool, wire.Span{Start: 0, End: len(tool)}, "_meta")
	if !ok {
		return nil
	}
	var edits []wire.Edit
	rewrite := func(obj wire.Span, key string) {
		at, ok := wire.Field(tool, obj, key)
		if !ok {
			return
		}
		if uri, ok := wire.StringValue(tool, at); ok && isUI(uri) {
			edits = append(edits, wire.Edit{Span: at, Value: wire.AppendString(nil, uiExposed(server, uri))})
		}
	}
	if ui, ok := wire.Field(tool, meta, "ui"); ok {
		rewrite(ui, "resourceUri")
	}
	rewrite(meta, "ui/resourceUri")
	return edits
}

// uiContent gives the ui:// URIs in a resources/read answer of d the form
// the client knows them by (a content may name a URI other than the one
// read).
func uiContent(d *downstream) func(string) (string, bool) {
	return func(uri string) (string, bool) {
		if !isUI(uri) {
			return "", false
		}
		return uiExposed(d.name, uri), true
	}
}

// contested returns the bare names of k (those of NoPrefix servers) that
// entries of more than one server claim, each with the servers claiming
// it in rank order. Such a name is exposed to none of its bare claimants:
// an app calling its tool by its own name gets "unknown tool" rather than
// another server's tool, until one server alone claims the name again.
func (s *session) contested(k kind, ds []*downstream, got [][]item) map[string][]string {
	if !k.prefixed() || !slices.ContainsFunc(ds, func(d *downstream) bool { return d.noPrefix }) {
		return nil
	}
	claims := map[string][]string{}
	bare := map[string]bool{}
	for i, items := range got {
		for _, it := range items {
			n := s.natural(k, ds[i], it.key)
			if c := claims[n]; len(c) == 0 || c[len(c)-1] != ds[i].name {
				claims[n] = append(c, ds[i].name)
			}
			bare[n] = bare[n] || ds[i].noPrefix
		}
	}
	out := map[string][]string{}
	for n := range bare {
		if len(claims[n]) > 1 {
			out[n] = claims[n]
		}
	}
	return out
}

// readExtensions returns the capabilities.extensions of an initialize
// result (SEP-2133: "a map of extension identifiers to per-extension
// settings objects").
func readExtensions(m *wire.Message) map[string]json.RawMessage {
	cs, _ := wire.Field(m.Raw, m.Result, "capabilities")
	ext, ok := wire.Field(m.Raw, cs, "extensions")
	if !ok || m.Raw[ext.Start] != '{' {
		return nil
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(m.Bytes(ext), &out) != nil {
		return nil
	}
	for id, v := range out {
		if len(v) == 0 || v[0] != '{' {
			delete(out, id) // settings are an object; anything else is not honoured
		}
	}
	return out
}

// perEntry are the extensions whose use is marked on each entry, so that
// the aggregate may offer them when any server does: a host renders an
// app only for a tool whose _meta.ui names a resource, and a tool of a
// server without the extension has none and is a plain tool to it — the
// "revert to core protocol behavior" SEP-2133 asks of a party the other
// does not match.
var perEntry = map[string]bool{"io.modelcontextprotocol/ui": true}

// extensions is the capabilities.extensions the aggregate advertises for
// the servers ds (in rank order). SEP-2133: "If one party supports an
// extension but the other does not, the supporting party MUST either
// revert to core protocol behavior or reject the request". The client
// sees one server, so an extension is advertised only when every server
// honours it, with the same settings — a client relying on it would
// otherwise use it with a server that does not — except a perEntry one,
// advertised when any server does, with the first one's settings. What is
// left out is logged.
func (s *session) extensions(ds []*downstream) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	var ids []string
	for _, d := range ds {
		for id := range d.caps.extensions {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		var settings json.RawMessage
		var lacking, differing []string
		for _, d := range ds {
			v, ok := d.caps.extensions[id]
			switch {
			case !ok:
				lacking = append(lacking, d.name)
			case settings == nil:
				settings = v
			case !sameJSON(settings, v):
				differing = append(differing, d.name)
			}
		}
		if perEntry[id] || len(lacking)+len(differing) == 0 {
			out[id] = settings
			continue
		}
		s.log.Info().Str("extension", id).Strs("without", lacking).Strs("other_settings", differing).
			Msg("aggregate: not advertising an extension that not every server honours alike")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// lateExtensions logs the extensions the session advertised that d, a
// server joining late, does not honour alike: the client was told it may
// use them, and with d it cannot. (A late server's own extensions were not
// advertised; nothing needs saying about them.)
func (s *session) lateExtensions(d *downstream) {
	for id, settings := range s.offered.extensions {
		if v, ok := d.caps.extensions[id]; !perEntry[id] && (!ok || !sameJSON(settings, v)) {
			d.log.Warn().Str("extension", id).
				Msg("aggregate: a server joined late without an extension this session advertised; requests using it may fail on its entries")
		}
	}
}

// sameJSON compares two JSON values, ignoring white space and key order.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
