package aggregate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A kind is one of the four lists a server has.
type kind int

const (
	kindTools kind = iota
	kindPrompts
	kindResources
	kindTemplates
	numKinds
)

var kinds = [numKinds]struct {
	list    string // the list method
	field   string // the result's array
	key     string // the member of an entry the aggregate renames
	changed string // the list_changed notification
	what    string // for messages
}{
	{"tools/list", "tools", "name", "notifications/tools/list_changed", "tool"},
	{"prompts/list", "prompts", "name", "notifications/prompts/list_changed", "prompt"},
	{"resources/list", "resources", "uri", "notifications/resources/list_changed", "resource"},
	{"resources/templates/list", "resourceTemplates", "uriTemplate", "notifications/resources/list_changed", "resource template"},
}

// prefixed reports whether a kind's exposed names carry the server's name.
// Resource URIs do not: they are kept as they are unless two servers list
// the same one.
func (k kind) prefixed() bool { return k == kindTools || k == kindPrompts }

// An entry is what an exposed name stands for.
type entry struct {
	d    *downstream
	orig string // the server's own name or URI
}

type subKey struct {
	d   *downstream
	uri string
}

// A catalog maps exposed names back to their servers, as of the last list
// of each kind.
type catalog struct {
	byName [numKinds]map[string]entry
	// exposed maps a server's URI to the one the client sees, for
	// resources/updated.
	exposed map[subKey]string
}

func (c *catalog) init() {
	for k := range c.byName {
		c.byName[k] = map[string]entry{}
	}
	c.exposed = map[subKey]string{}
}

// An item is one entry of a server's list.
type item struct {
	raw []byte    // the entry, copied
	key string    // its name or URI
	at  wire.Span // where key sits in raw
}

// uriScheme marks a URI rewritten because two servers list the same one:
// mcp-bridge://<server>/<the server's URI>. A URI template is rewritten
// the same way, so a URI the client expands from it routes by its prefix.
const uriScheme = "mcp-bridge://"

func prefixedURI(server, uri string) string {
	return uriScheme + url.PathEscape(server) + "/" + uri
}

// splitPrefixed undoes prefixedURI.
func splitPrefixed(uri string) (server, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, uriScheme)
	if !ok {
		return "", "", false
	}
	esc, orig, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	server, err := url.PathUnescape(esc)
	return server, orig, err == nil
}

// fetch reads all pages of one server's list of k.
func (s *session) fetch(ctx context.Context, d *downstream, k kind) ([]item, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ListTimeout)
	defer cancel()
	var items []item
	var cursor []byte
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("aggregate: %s: more than %d pages", kinds[k].list, maxPages)
		}
		var params []byte
		if cursor != nil {
			params = append(append([]byte(`{"cursor":`), cursor...), '}')
		}
		resp, err := d.call(ctx, kinds[k].list, nil, func(id, _ []byte) []byte {
			return wire.Request(id, kinds[k].list, params)
		})
		if err != nil {
			return nil, err
		}
		if resp.Error.Present() {
			return nil, fmt.Errorf("aggregate: %s: %s", kinds[k].list, resp.Bytes(resp.Error))
		}
		arr, ok := wire.Field(resp.Raw, resp.Result, kinds[k].field)
		if !ok {
			return nil, fmt.Errorf("aggregate: %s: no %q in the result", kinds[k].list, kinds[k].field)
		}
		elems, err := wire.Elements(resp.Raw, arr)
		if err != nil {
			return nil, fmt.Errorf("aggregate: %s: %w", kinds[k].list, err)
		}
		for _, e := range elems {
			key, ok := wire.StringField(resp.Raw, e, kinds[k].key)
			at, _ := wire.Field(resp.Raw, e, kinds[k].key)
			if !ok || key == "" {
				s.warn.Warn(d.log, "server-bad-entry").Str("list", kinds[k].list).
					Msgf("aggregate: dropped a %s without a %s", kinds[k].what, kinds[k].key)
				continue
			}
			if k == kindTools && s.cfg.AllowTool != nil && !s.cfg.AllowTool(d.name, key) {
				continue
			}
			items = append(items, item{
				raw: bytes.Clone(resp.Bytes(e)),
				key: key,
				at:  wire.Span{Start: at.Start - e.Start, End: at.End - e.Start},
			})
		}
		if len(items) > maxItems {
			return nil, fmt.Errorf("aggregate: %s: more than %d entries", kinds[k].list, maxItems)
		}
		next, ok := wire.Field(resp.Raw, resp.Result, "nextCursor")
		if !ok || resp.Raw[next.Start] != '"' {
			return items, nil
		}
		cursor = bytes.Clone(resp.Bytes(next))
	}
}

// list asks every server that has k for its whole list, merges the lists
// and renews the catalog of k. It returns the merged result object.
func (s *session) list(ctx context.Context, k kind) []byte {
	ds := s.downstreams()
	got := make([][]item, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		if !d.caps.has(k) || d.isGone() {
			continue
		}
		wg.Go(func() {
			items, err := s.fetch(ctx, d, k)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, ErrServerGone) {
					d.log.Warn().Err(err).Int64("list_timeout_ms", s.cfg.ListTimeout.Milliseconds()).
						Msgf("aggregate: leaving the server's %ss out of the list; it is asked again at the next one", kinds[k].what)
					s.cfg.OnAbsent(d.name, kinds[k].list)
				}
				return
			}
			got[i] = items
		})
	}
	wg.Wait()
	return s.merge(k, ds, got)
}

// merge names the entries of the servers' lists and renews the catalog.
//
// Names are given in two passes so that the result depends only on the
// lists: first every entry whose exposed name no earlier entry has (the
// servers in Config order, each list in its own order) keeps it; then each
// entry that lost its name to an earlier one gets a new one that no entry
// has: <name><sep>2, <sep>3, ... for tools and prompts, the mcp-bridge://
// form for a URI. A bare name (Server.NoPrefix) is not first come, first
// served: it is kept only while one server alone claims it (see
// contested), so that an app calling a tool by its own name never reaches
// another server's tool. Each collision is logged once per session. A
// tool's _meta.ui.resourceUri is rewritten as its resource is (apps.go).
func (s *session) merge(k kind, ds []*downstream, got [][]item) []byte {
	names := make([][]string, len(ds))
	contested := s.contested(k, ds, got)
	taken := map[string]*downstream{}
	for i, items := range got {
		names[i] = make([]string, len(items))
		for j, it := range items {
			n := s.natural(k, ds[i], it.key)
			if taken[n] == nil && (!s.bare(k, ds[i]) || contested[n] == nil) {
				taken[n] = ds[i]
				names[i][j] = n
			}
		}
	}
	byName := map[string]entry{}
	out := append([]byte(`{"`), kinds[k].field...)
	out = append(out, `":[`...)
	first := true
	for i, items := range got {
		d := ds[i]
		for j, it := range items {
			n := names[i][j]
			if n == "" {
				n = s.rename(k, d, it.key, taken, contested)
			}
			byName[n] = entry{d: d, orig: it.key}
			if !first {
				out = append(out, ',')
			}
			first = false
			var edits []wire.Edit
			if n != it.key {
				edits = append(edits, wire.Edit{Span: it.at, Value: wire.AppendString(nil, n)})
			}
			if k == kindTools {
				edits = append(edits, uiMetaEdits(it.raw, d.name)...)
			}
			if len(edits) == 0 {
				out = append(out, it.raw...)
			} else {
				out = append(out, wire.Splice(it.raw, edits...)...)
			}
		}
	}
	out = append(out, "]}"...)
	s.mu.Lock()
	s.cat.byName[k] = byName
	if k == kindResources {
		exposed := map[subKey]string{}
		for n, e := range byName {
			if n != e.orig {
				exposed[subKey{e.d, e.orig}] = n
			}
		}
		s.cat.exposed = exposed
	}
	s.mu.Unlock()
	return out
}

// natural is the name an entry of d is exposed as when nothing collides:
// <server><sep><name> for tools and prompts (the name alone for a
// NoPrefix server), the URI itself for resources and templates, but for
// ui:// ones, which carry the server as their authority (see uiExposed).
func (s *session) natural(k kind, d *downstream, key string) string {
	switch {
	case k.prefixed() && !d.noPrefix:
		return d.name + s.cfg.Separator + key
	case !k.prefixed() && isUI(key):
		return uiExposed(d.name, key)
	}
	return key
}

// bare reports whether d's entries of k are exposed under their own names.
func (s *session) bare(k kind, d *downstream) bool { return k.prefixed() && d.noPrefix }

// rename finds a free name for an entry of d whose natural name an
// earlier entry has (or, for a bare name, another server claims), records
// it as taken and logs the collision.
func (s *session) rename(k kind, d *downstream, key string, taken map[string]*downstream, contested map[string][]string) string {
	natural := s.natural(k, d, key)
	owner := taken[natural]
	base := natural
	switch {
	case s.bare(k, d):
		base = d.name + s.cfg.Separator + key
	case !k.prefixed() && !isUI(key):
		base = prefixedURI(d.name, key)
	}
	n := base
	for i := 2; taken[n] != nil; i++ {
		n = base + s.cfg.Separator + strconv.Itoa(i)
	}
	taken[n] = d
	s.reportCollision(k, natural, d, owner, contested[natural], n)
	return n
}

// maxReported bounds the collisions remembered as logged.
const maxReported = 10000

func (s *session) reportCollision(k kind, natural string, d, owner *downstream, claimants []string, renamed string) {
	key := strconv.Itoa(int(k)) + "\x00" + natural + "\x00" + d.name
	s.mu.Lock()
	seen := s.reported[key]
	if !seen && len(s.reported) < maxReported {
		s.reported[key] = true
	}
	s.mu.Unlock()
	if seen {
		return
	}
	ev := s.log.Warn().Str("kind", kinds[k].what).Str("name", natural).
		Str("server", d.name).Str("renamed_to", renamed)
	if owner == nil {
		ev.Strs("claimed_by", claimants).
			Msgf("aggregate: %s name collision: the unprefixed %q is listed by more than one server, so no server keeps it; this one's is exposed as %q", kinds[k].what, natural, renamed)
		return
	}
	ev.Str("kept_by", owner.name).
		Msgf("aggregate: %s name collision: %q is exposed as %q", kinds[k].what, natural, renamed)
}
