package teamconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// OAuth grants an entry's "oauth" may name; they mirror connect's
// --oauth-grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantDeviceCode        = "device_code"
	GrantClientCredentials = "client_credentials"
)

// OAuth is a remote entry's OAuth client settings: its "oauth" object, or
// "mcpBridge.servers.<name>.oauth" (one or the other). They mirror single
// connect's --oauth-* flags; a field left out takes the flag's default.
// An entry without "oauth" sends no OAuth token (its "headers" may carry
// a static one): a server or host entry must opt in, since a login opens
// a browser or waits for a person.
type OAuth struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"` // write "${VAR}": the file is no place for a secret
	// ClientMetadataURL: this client's Client ID Metadata Document.
	ClientMetadataURL string       `json:"clientMetadataUrl"`
	Resource          string       `json:"resource"`
	NoResource        bool         `json:"noResource"`
	Scopes            []string     `json:"scopes"`
	Grant             string       `json:"grant"`
	CallbackPort      int          `json:"callbackPort"`
	Timeout           OAuthTimeout `json:"timeout"`
}

// Interactive reports whether a login needs a person (a browser or a
// device code), as opposed to client_credentials.
func (o *OAuth) Interactive() bool { return o.Grant != GrantClientCredentials }

// An OAuthTimeout bounds one interactive login ("5m"), as --oauth-timeout.
type OAuthTimeout time.Duration

// MaxOAuthTimeout bounds an entry's oauth.timeout.
const MaxOAuthTimeout = time.Hour

func (d *OAuthTimeout) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("oauth.timeout must be a string such as \"5m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 || v > MaxOAuthTimeout {
		return fmt.Errorf("oauth.timeout %q: want a positive duration up to %v, such as \"5m\"", s, MaxOAuthTimeout)
	}
	*d = OAuthTimeout(v)
	return nil
}

// oauth parses the "oauth" object at off for server s (what names it in
// errors), expanding ${VAR} in the client id and secret, and refuses what
// cannot work: a stdio entry, a static Authorization header beside it,
// contradicting or incomplete settings.
func (p *parser) oauth(raw json.RawMessage, off int64, what string, s *Server) (*OAuth, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	o := &OAuth{}
	if err := p.strictDecode(raw, off, what, o); err != nil {
		return nil, err
	}
	if !s.Remote() {
		return nil, p.errorf(off, "%s: OAuth is for a \"url\" entry; a stdio command logs in by itself", what)
	}
	if s.Disabled {
		return o, nil // unexpanded, as the rest of a disabled entry
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"clientId", &o.ClientID}, {"clientSecret", &o.ClientSecret}} {
		v, err := expand(*f.v, p.lookup)
		if err != nil {
			return nil, p.errorf(off, "%s.%s: %v", what, f.name, err)
		}
		*f.v = v
	}
	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantDeviceCode, GrantClientCredentials:
	default:
		return nil, p.errorf(off, "%s.grant %q: want one of %s, %s, %s", what, o.Grant, GrantAuthorizationCode, GrantDeviceCode, GrantClientCredentials)
	}
	for _, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") {
			return nil, p.errorf(off, "%s.scopes: %q is not one scope (list each scope as its own string)", what, sc)
		}
	}
	switch {
	case o.CallbackPort < 0 || o.CallbackPort > 65535:
		return nil, p.errorf(off, "%s.callbackPort %d: want 1-65535 (or leave it out)", what, o.CallbackPort)
	case o.NoResource && o.Resource != "":
		return nil, p.errorf(off, "%s: resource and noResource contradict each other", what)
	case o.Resource != "" && !strings.HasPrefix(o.Resource, "https://") && !strings.HasPrefix(o.Resource, "http://"):
		return nil, p.errorf(off, "%s.resource: want an http(s) URL", what)
	case o.ClientMetadataURL != "" && !strings.HasPrefix(o.ClientMetadataURL, "https://"):
		return nil, p.errorf(off, "%s.clientMetadataUrl: want an https URL", what)
	case o.ClientSecret != "" && o.ClientID == "":
		return nil, p.errorf(off, "%s: clientSecret needs clientId", what)
	case o.Grant == GrantClientCredentials && (o.ClientID == "" || o.ClientSecret == ""):
		return nil, p.errorf(off, "%s: grant client_credentials needs clientId and clientSecret", what)
	case o.Grant == GrantClientCredentials && o.CallbackPort != 0:
		return nil, p.errorf(off, "%s: callbackPort is for the authorization_code grant", what)
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, p.errorf(off, "%s: the entry's headers carry a static Authorization; drop one of them", what)
		}
	}
	return o, nil
}
