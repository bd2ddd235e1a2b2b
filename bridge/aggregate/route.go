package aggregate

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// codeResourceNotFound is MCP's error for an unknown resource URI
// (2025-11-25 resources §Error Handling: "Resource not found: -32002").
const codeResourceNotFound = -32002

type handler = func(s *session, ctx context.Context, m *wire.Message) []byte

// listHandler answers a list request with the merged list of every
// server, all pages in one: the aggregate hands out no cursor of its own.
func listHandler(k kind) handler {
	return func(s *session, ctx context.Context, m *wire.Message) []byte {
		if _, ok := wire.Field(m.Raw, m.Params, "cursor"); ok {
			// "Invalid cursors SHOULD result in an error with code -32602"
			// (2025-11-25 pagination); we never issue one.
			return errorFor(m, wire.CodeInvalidParams, "aggregate: invalid cursor")
		}
		return wire.ResultResponse(m.IDBytes(), s.list(ctx, k))
	}
}

// namedHandler routes tools/call and prompts/get to the server that owns
// the name, under the server's own name.
func namedHandler(k kind) handler {
	return func(s *session, ctx context.Context, m *wire.Message) []byte {
		at, ok := wire.Field(m.Raw, m.Params, "name")
		if !ok || m.Name == "" {
			return errorFor(m, wire.CodeInvalidParams, "aggregate: params.name is missing")
		}
		e, ok := s.lookup(ctx, k, m.Name)
		if !ok {
			return errorFor(m, wire.CodeInvalidParams, "aggregate: unknown "+kinds[k].what+": "+m.Name)
		}
		resp, _ := s.forward(ctx, e.d, m, wire.Edit{Span: at, Value: wire.AppendString(nil, e.orig)})
		return resp
	}
}

// lookup finds the owner of an exposed name, listing k again when the name
// is not known: a client may call a tool it has not listed in this
// session, or one a server added since.
func (s *session) lookup(ctx context.Context, k kind, name string) (entry, bool) {
	s.mu.Lock()
	e, ok := s.cat.byName[k][name]
	s.mu.Unlock()
	if ok {
		return e, true
	}
	s.list(ctx, k)
	s.mu.Lock()
	e, ok = s.cat.byName[k][name]
	s.mu.Unlock()
	return e, ok
}

// forward sends the client's request m to d with the given edits, a fresh
// id and, if m has one, a fresh progress token, and returns the answer
// under the client's id. ok reports a result (not an error). A request
// the client cancelled returns nil.
func (s *session) forward(ctx context.Context, d *downstream, m *wire.Message, edits ...wire.Edit) (resp []byte, ok bool) {
	var token []byte
	if m.ProgressToken.Present() {
		token = bytes.Clone(m.Bytes(m.ProgressToken))
	}
	r, err := d.call(ctx, m.Method, token, func(id, tok []byte) []byte {
		es := append([]wire.Edit{{Span: m.ID, Value: id}}, edits...)
		if tok != nil {
			es = append(es, wire.Edit{Span: m.ProgressToken, Value: tok})
		}
		return wire.Splice(m.Raw, es...)
	})
	switch {
	case ctx.Err() != nil:
		return nil, false
	case err != nil:
		return errorFor(m, wire.CodeConnectionClosed, err.Error()), false
	}
	return wire.Splice(r.Raw, wire.Edit{Span: r.ID, Value: m.IDBytes()}), r.Result.Present()
}

// byURI routes resources/read, subscribe and unsubscribe by the URI.
func (s *session) byURI(ctx context.Context, m *wire.Message) []byte {
	at, ok := wire.Field(m.Raw, m.Params, "uri")
	if !ok || m.URI == "" {
		return errorFor(m, wire.CodeInvalidParams, "aggregate: params.uri is missing")
	}
	e, ok := s.route(ctx, m.URI)
	if !ok {
		return errorFor(m, codeResourceNotFound, "Resource not found")
	}
	if m.Method != "resources/read" && e.d.late && !s.offered.subscribe {
		return errorFor(m, wire.CodeMethodNotFound, "aggregate: "+m.Method+" was not offered in this session")
	}
	resp, ok := s.forward(ctx, e.d, m, wire.Edit{Span: at, Value: wire.AppendString(nil, e.orig)})
	if !ok {
		return resp
	}
	if m.Method == "resources/read" && e.orig != m.URI {
		resp = renameContents(resp, e.orig, m.URI, uiContent(e.d))
	}
	key := subKey{e.d, e.orig}
	s.mu.Lock()
	switch {
	case m.Method == "resources/subscribe" && len(s.subs) < maxSubscriptions:
		s.subs[key] = m.URI
	case m.Method == "resources/unsubscribe":
		delete(s.subs, key)
	}
	s.mu.Unlock()
	return resp
}

// renameContents gives the contents of a resources/read answer that name
// the server's URI the URI the client asked for, so that the client can
// match them to what it read; other renames the other URIs it names.
func renameContents(resp []byte, orig, uri string, other func(string) (string, bool)) []byte {
	var r wire.Message
	if wire.Parse(resp, &r) != nil {
		return resp
	}
	arr, ok := wire.Field(resp, r.Result, "contents")
	if !ok {
		return resp
	}
	elems, err := wire.Elements(resp, arr)
	if err != nil {
		return resp
	}
	var edits []wire.Edit
	for _, e := range elems {
		u, ok := wire.StringField(resp, e, "uri")
		if !ok {
			continue
		}
		at, _ := wire.Field(resp, e, "uri")
		if u == orig {
			edits = append(edits, wire.Edit{Span: at, Value: wire.AppendString(nil, uri)})
		} else if n, ok := other(u); ok {
			edits = append(edits, wire.Edit{Span: at, Value: wire.AppendString(nil, n)})
		}
	}
	if len(edits) == 0 {
		return resp
	}
	return wire.Splice(resp, edits...)
}

// route finds the server of a URI the client names, and the URI that
// server knows it by:
//   - a URI in the last resources/list;
//   - a URI in the mcp-bridge:// form (a colliding resource, or one
//     expanded from a colliding template), or a ui:// URI whose authority
//     names a server (see apps.go);
//   - a URI that one of the last templates matches: the template with the
//     longest literal prefix wins, ties going to the server ranked first
//     (see downstreams);
//   - else the only server with resources, if there is one.
//
// When none matches it lists resources and templates again and retries.
func (s *session) route(ctx context.Context, uri string) (entry, bool) {
	if e, ok := s.routeKnown(uri); ok {
		return e, true
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.list(ctx, kindResources) })
	wg.Go(func() { s.list(ctx, kindTemplates) })
	wg.Wait()
	return s.routeKnown(uri)
}

func (s *session) routeKnown(uri string) (entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.cat.byName[kindResources][uri]; ok {
		return e, true
	}
	ds := s.downstreams()
	if e, ok := routeUI(ds, uri); ok {
		return e, true
	}
	if server, orig, ok := splitPrefixed(uri); ok {
		if i := slices.IndexFunc(ds, func(d *downstream) bool { return d.name == server }); i >= 0 {
			d := ds[i]
			return entry{d: d, orig: orig}, true
		}
	}
	var best entry
	bestLen := -1
	for t, e := range s.cat.byName[kindTemplates] {
		if t != e.orig {
			continue // rewritten: its URIs carry the prefix
		}
		n := templateMatch(t, uri)
		if n > bestLen || (n == bestLen && n >= 0 && e.d.rank < best.d.rank) {
			best, bestLen = entry{d: e.d, orig: uri}, n
		}
	}
	if bestLen >= 0 {
		return best, true
	}
	var only *downstream
	for _, d := range ds {
		if d.caps.resources {
			if only != nil {
				return entry{}, false
			}
			only = d
		}
	}
	return entry{d: only, orig: uri}, only != nil
}

// templateMatch reports how well uri fits an RFC 6570 template: the length
// of the literal text before the first expression, or -1 when uri does not
// begin with it or does not end with the literal text after the last one.
// It is a routing heuristic, not an expansion: the server decides whether
// the URI is one of its own.
func templateMatch(t, uri string) int {
	open := strings.IndexByte(t, '{')
	if open < 0 {
		if t == uri {
			return len(t)
		}
		return -1
	}
	if !strings.HasPrefix(uri, t[:open]) {
		return -1
	}
	if end := strings.LastIndexByte(t, '}'); end >= 0 && !strings.HasSuffix(uri[open:], t[end+1:]) {
		return -1
	}
	return open
}

// resourceUpdated passes a server's resources/updated on with the URI the
// client knows: the one it subscribed to, else the one it was listed as.
func (s *session) resourceUpdated(d *downstream, m *wire.Message) {
	at, ok := wire.Field(m.Raw, m.Params, "uri")
	if !ok || m.URI == "" {
		return
	}
	key := subKey{d, m.URI}
	s.mu.Lock()
	uri, ok := s.subs[key]
	if !ok {
		uri, ok = s.cat.exposed[key]
	}
	s.mu.Unlock()
	if !ok && isUI(m.URI) { // a UI resource the server did not list
		uri, ok = uiExposed(d.name, m.URI), true
	}
	if !ok || uri == m.URI {
		s.writeUp(m.Raw)
		return
	}
	s.writeUp(wire.Splice(m.Raw, wire.Edit{Span: at, Value: wire.AppendString(nil, uri)}))
}

// complete routes completion/complete by its reference: a prompt by its
// exposed name, a resource template by URI.
func (s *session) complete(ctx context.Context, m *wire.Message) []byte {
	ref, _ := wire.Field(m.Raw, m.Params, "ref")
	typ, _ := wire.StringField(m.Raw, ref, "type")
	var (
		e   entry
		at  wire.Span
		ok  bool
		key string
	)
	switch typ {
	case "ref/prompt":
		key = "name"
	case "ref/resource":
		key = "uri"
	default:
		return errorFor(m, wire.CodeInvalidParams, "aggregate: params.ref is not a prompt or resource reference")
	}
	at, okAt := wire.Field(m.Raw, ref, key)
	name, okName := wire.StringField(m.Raw, ref, key)
	if !okAt || !okName {
		return errorFor(m, wire.CodeInvalidParams, "aggregate: params.ref."+key+" is missing")
	}
	if typ == "ref/prompt" {
		e, ok = s.lookup(ctx, kindPrompts, name)
	} else {
		e, ok = s.route(ctx, name)
	}
	if !ok {
		return errorFor(m, wire.CodeInvalidParams, "aggregate: unknown reference: "+name)
	}
	if e.d.late && !s.offered.completions {
		return errorFor(m, wire.CodeMethodNotFound, "aggregate: completion/complete was not offered in this session")
	}
	resp, _ := s.forward(ctx, e.d, m, wire.Edit{Span: at, Value: wire.AppendString(nil, e.orig)})
	return resp
}

// setLevel sets the log level of every server that logs. The client gets
// an empty result unless every server asked refused, and then the first
// refusal.
func (s *session) setLevel(ctx context.Context, m *wire.Message) []byte {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		asked int
		good  bool
		first []byte
		idx   int
	)
	for _, d := range s.downstreams() {
		// A server that joined late is not asked unless the session
		// offered logging: the client has set no level for it to follow.
		if !d.caps.logging || d.isGone() || (d.late && !s.offered.logging) {
			continue
		}
		asked++
		wg.Go(func() {
			resp, ok := s.forward(ctx, d, m)
			mu.Lock()
			defer mu.Unlock()
			good = good || ok
			if !ok && resp != nil && (first == nil || d.idx < idx) {
				first, idx = resp, d.idx
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	if asked > 0 && !good && first != nil {
		return first
	}
	return wire.ResultResponse(m.IDBytes(), []byte("{}"))
}
