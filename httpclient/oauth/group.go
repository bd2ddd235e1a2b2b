package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
)

// A Group lets the Authorizers of several MCP servers (the remote entries
// of one configuration file) log in together. When one of them needs a
// browser login, the members that use the same authorization server and
// the same configured client, and hold no login yet, join it: one
// authorization request carries every member's resource (RFC 8707 §2:
// "Multiple resource parameters may be used to indicate that the requested
// token is intended to be used at multiple resources"), the code is
// exchanged for the first resource's token, and the refresh token then
// gives each other member its own audience-restricted token (RFC 8707
// §2.2: the resource parameter on a refresh request). One browser run
// instead of one per server.
//
// Those members then share one refresh token. Providers that rotate
// refresh tokens revoke the whole grant when a used one comes back
// (node-oidc-provider does), so renewals of the members are serialized
// by the group, and a rotated refresh token is written to every member's
// record that held the old one.
//
// Each member keeps its own record in the Store, keyed by its server as
// without a group, so a single connect to one of the servers finds its
// login.
type Group struct {
	turn chan struct{} // one renewal at a time among the members

	mu      sync.Mutex
	members []*Authorizer
}

// NewGroup makes an empty Group; Authorizers join it through
// [Config.Group].
func NewGroup() *Group { return &Group{turn: make(chan struct{}, 1)} }

func (gr *Group) join(a *Authorizer) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	gr.members = append(gr.members, a)
	gr.mu.Unlock()
}

func (gr *Group) leave(a *Authorizer) {
	if gr == nil {
		return
	}
	gr.mu.Lock()
	gr.members = slices.DeleteFunc(gr.members, func(m *Authorizer) bool { return m == a })
	gr.mu.Unlock()
}

// hold waits for the group's turn: renew takes it before the store locks,
// so that a member waiting for another's group login then finds its token
// in its record.
func (gr *Group) hold(ctx context.Context) (release func(), err error) {
	if gr == nil {
		return func() {}, nil
	}
	select {
	case gr.turn <- struct{}{}:
		return func() { <-gr.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A companion is a member joining a's login: its resource and scopes.
type companion struct {
	m        *Authorizer
	resource string
	scopes   []string
}

// companions are the members that can share a's login at issuer: the same
// grant and configured client, another server, no login of their own yet,
// and discovery leading to the same issuer.
func (gr *Group) companions(ctx context.Context, a *Authorizer, issuer string) []companion {
	gr.mu.Lock()
	ms := slices.Clone(gr.members)
	gr.mu.Unlock()
	var out []companion
	for _, m := range ms {
		if m == a || m.server == a.server || m.cfg.Grant != GrantAuthorizationCode || m.cfg.NoResource ||
			m.cfg.ClientID != a.cfg.ClientID || m.cfg.ClientSecret != a.cfg.ClientSecret ||
			m.cfg.ClientKey != a.cfg.ClientKey || m.cfg.ClientMetadataURL != a.cfg.ClientMetadataURL {
			continue
		}
		if rec, err := m.record(); err == nil {
			if g := m.pick(rec, issuer); g != nil && (g.Token.RefreshToken != "" || (g.Token.AccessToken != "" && !g.Token.expired(m.now()))) {
				continue // logged in already: its own grant stays
			}
		}
		d, err := m.discovery(ctx, Challenge{})
		if err != nil {
			m.cfg.Logger.Debug().Err(err).Msg("oauth: no discovery; this server logs in on its own")
			continue
		}
		if d.Server.Issuer != issuer {
			continue
		}
		r := m.resource(d)
		if r == "" {
			continue
		}
		out = append(out, companion{m: m, resource: r, scopes: m.scopes(d, Challenge{}, http.StatusUnauthorized)})
	}
	return out
}

type resourcesKey struct{}

// alsoResources are the other resources of a group login, which the
// authorization request carries after its own.
func alsoResources(ctx context.Context) []string {
	r, _ := ctx.Value(resourcesKey{}).([]string)
	return r
}

// withResources adds more resource parameters to the authorization URL
// authURL (x/oauth2 sets one value per parameter).
func withResources(authURL string, more []string) string {
	if len(more) == 0 {
		return authURL
	}
	u, err := url.Parse(authURL)
	if err != nil {
		return authURL
	}
	q := u.Query()
	q["resource"] = append(q["resource"], more...)
	u.RawQuery = q.Encode()
	return u.String()
}

// authorizationCode is a's browser login, shared with its companions when
// a is in a group (see [Group]); without companions it is a's alone.
func (gr *Group) authorizationCode(ctx context.Context, a *Authorizer, d *Discovery, rec *Record, g *Grant, scopes []string, resource string, known bool) (*Token, error) {
	if gr == nil || resource == "" {
		return a.authorizationCode(ctx, d, rec, g, scopes, resource, known)
	}
	issuer := d.Server.Issuer
	comps := gr.companions(ctx, a, issuer)
	if len(comps) == 0 {
		return a.authorizationCode(ctx, d, rec, g, scopes, resource, known)
	}
	var more []string
	all := scopes
	servers := []string{a.server}
	for _, c := range comps {
		if c.resource != resource && !slices.Contains(more, c.resource) {
			more = append(more, c.resource)
		}
		all = unionScopes(all, c.scopes)
		servers = append(servers, c.m.server)
	}
	a.cfg.Logger.Info().Str("issuer", issuer).Strs("servers", servers).Msg("oauth: one login for the servers that share this authorization server and client")
	t, err := a.authorizationCode(context.WithValue(ctx, resourcesKey{}, more), d, rec, g, all, resource, known)
	if err != nil {
		return nil, err
	}
	if t.RefreshToken == "" {
		a.cfg.Logger.Info().Str("issuer", issuer).Msg("oauth: no refresh token; the other servers log in on their own")
		return t, nil
	}
	rt := t.RefreshToken
	type got struct {
		m *Authorizer
		g Grant
	}
	var gots []got
	for _, c := range comps {
		tok, err := a.refresh(ctx, d.Server, &Grant{Client: g.Client, Token: Token{RefreshToken: rt, Scopes: t.Scopes}}, c.resource)
		if err != nil {
			c.m.cfg.Logger.Warn().Err(err).Str("issuer", issuer).Msg("oauth: no token for this server from the shared login; it logs in on its own")
			continue
		}
		if tok.RefreshToken == "" {
			tok.RefreshToken = rt
		}
		rt = tok.RefreshToken
		gots = append(gots, got{c.m, Grant{Issuer: issuer, Resource: c.resource, Client: g.Client, Token: *tok}})
	}
	// Every member holds the newest refresh token: the older ones were
	// used, and a used one would revoke the grant.
	t.RefreshToken = rt
	for _, x := range gots {
		x.g.Token.RefreshToken = rt
		if err := x.m.adopt(ctx, x.g); err != nil {
			x.m.cfg.Logger.Warn().Err(err).Msg("oauth: could not keep the token of the shared login")
		}
	}
	return t, nil
}

// adopt stores g, obtained by another member's login, as m's grant and
// puts it in use.
func (m *Authorizer) adopt(ctx context.Context, g Grant) error {
	if m.cfg.Store != nil {
		unlock, err := m.cfg.Store.Lock(ctx, m.server)
		if err != nil {
			return err
		}
		defer unlock()
	}
	rec, err := m.record()
	if err != nil {
		return err
	}
	if err := m.save(rec, &g); err != nil {
		return err
	}
	m.mu.Lock()
	m.loaded = true
	m.grant = &g
	m.gen++
	m.mu.Unlock()
	m.cfg.Logger.Info().Str("issuer", g.Issuer).Msg("oauth: token from the shared login")
	return nil
}

// rotated writes a's new refresh token over the old one in every other
// member's record that holds it (issuer and client alike).
func (gr *Group) rotated(ctx context.Context, a *Authorizer, issuer, clientID, old, new string) {
	if gr == nil || old == "" || new == "" || old == new {
		return
	}
	gr.mu.Lock()
	ms := slices.Clone(gr.members)
	gr.mu.Unlock()
	for _, m := range ms {
		if m == a || m.server == a.server {
			continue
		}
		if err := m.swapRefresh(ctx, issuer, clientID, old, new); err != nil {
			m.cfg.Logger.Warn().Err(err).Msg("oauth: could not pass on the rotated refresh token of the shared login")
		}
	}
}

func (m *Authorizer) swapRefresh(ctx context.Context, issuer, clientID, old, new string) error {
	if m.cfg.Store != nil {
		unlock, err := m.cfg.Store.Lock(ctx, m.server)
		if err != nil {
			return err
		}
		defer unlock()
	}
	rec, err := m.record()
	if err != nil {
		return err
	}
	changed := false
	for i := range rec.Grants {
		g := &rec.Grants[i]
		if g.Issuer == issuer && g.Client.ID == clientID && g.Token.RefreshToken == old {
			g.Token.RefreshToken = new
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return m.write(rec)
}
