package teamconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"time"
)

// ErrConfig is wrapped by every error about the file's content.
var ErrConfig = errors.New("teamconfig: invalid configuration")

// A Config is one parsed configuration file.
type Config struct {
	// Servers holds every entry by name, disabled ones included (a
	// disabled server's route answers 404).
	Servers map[string]*Server
	Bridge  Bridge

	// OAuthIssuers are "mcpBridge.oauthIssuers": settings per trusted
	// authorization server (by issuer URL, which --oauth-issuer must
	// name). Read at start; a reload does not change them.
	OAuthIssuers map[string]IssuerOptions
}

// IssuerOptions are one "mcpBridge.oauthIssuers.<issuer>" entry.
type IssuerOptions struct {
	// KeyTTL is how long the issuer's signing keys are used before they
	// are fetched again (--oauth-key-ttl for this issuer); a shorter
	// Cache-Control max-age of its key set still wins. 0: the flag's.
	KeyTTL KeyTTL `json:"keyTTL"`
}

// A KeyTTL is a duration written as Go writes one ("15m", "1h"), from a
// second to MaxKeyTTL.
type KeyTTL time.Duration

// MaxKeyTTL bounds a key lifetime: keys an issuer has withdrawn stop
// working within it.
const MaxKeyTTL = 7 * 24 * time.Hour

func (d *KeyTTL) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("keyTTL must be a string such as \"15m\" or \"1h\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < time.Second || v > MaxKeyTTL {
		return fmt.Errorf("keyTTL %q: want a duration from 1s to %v, such as \"15m\"", s, MaxKeyTTL)
	}
	*d = KeyTTL(v)
	return nil
}

// Bridge is the "mcpBridge" section's global part. Zero values mean "not
// set": the command line's or the library's defaults apply.
type Bridge struct {
	Listen         string `json:"listen"`
	Aggregate      bool   `json:"aggregate"`
	Separator      string `json:"separator"`
	MaxBody        int64  `json:"maxBody"`
	MaxMessageSize int    `json:"maxMessageSize"`
	MaxInflight    int    `json:"maxInflight"`
	MaxSessions    int    `json:"maxSessions"`
	// JoinTimeout: how long the aggregated endpoint's initialize waits
	// for servers still starting ("5s"); 0: the aggregate's default.
	JoinTimeout Duration `json:"joinTimeout"`
}

// A Duration is written as Go writes one: "5s", "1m30s", "250ms". Only
// joinTimeout is one, and its errors say so.
type Duration time.Duration

// MaxJoinTimeout bounds mcpBridge.joinTimeout: a client's initialize is
// not held longer than this for a server that does not start.
const MaxJoinTimeout = 10 * time.Minute

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("joinTimeout must be a string such as \"5s\" or \"500ms\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 || v > MaxJoinTimeout {
		return fmt.Errorf("joinTimeout %q: want a positive duration up to %v, such as \"5s\"", s, MaxJoinTimeout)
	}
	*d = Duration(v)
	return nil
}

// A Server is one "mcpServers" entry, with its "${VAR}" references
// expanded (for enabled entries only), and its "mcpBridge.servers" options.
type Server struct {
	Name     string
	Disabled bool

	// A stdio server: Command is set.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// A remote server: URL is set. SSE marks one of "type": "sse", which
	// speaks the legacy HTTP+SSE transport (2024-11-05) at URL, its SSE
	// URL; otherwise the remote speaks Streamable HTTP.
	URL     string
	Headers map[string]string
	SSE     bool

	// OAuth, for a remote entry, makes the bridge an OAuth client of it;
	// nil: no OAuth (the headers, if any, authenticate).
	OAuth *OAuth

	Options Options
}

// Prefixed reports whether the aggregated endpoint prefixes the server's
// tools and prompts with its name (mcpBridge.servers.<name>.prefix).
func (o Options) Prefixed() bool { return o.Prefix == nil || *o.Prefix }

// Remote reports whether the entry is a remote server (url) rather than a
// stdio command.
func (s *Server) Remote() bool { return s.URL != "" }

// Options are a server's "mcpBridge.servers.<name>" settings. Empty
// strings select serve's defaults.
type Options struct {
	SessionMode   string      `json:"sessionMode"`   // auto|per-session|shared
	ChildProtocol string      `json:"childProtocol"` // auto|modern|legacy
	ChildPer      string      `json:"childPer"`      // shared|principal
	Tools         *ToolFilter `json:"tools"`
	// Prefix false exposes the server's tools and prompts on the
	// aggregated endpoint under their own names, not <server><sep><name>:
	// for MCP App HTML that calls tools by the names its server gave them.
	// A name another server also exposes is refused at load when the
	// allow lists show it (see checkPrefixes), and is exposed prefixed at
	// run time otherwise. nil: true.
	Prefix *bool    `json:"prefix"`
	Scopes []string `json:"scopes"`
	// ChildStartTimeout: how long this server's child may take to answer
	// its first request ("2m" for a docker image pulled on first use); 0:
	// --child-start-timeout.
	ChildStartTimeout StartTimeout `json:"childStartTimeout"`
}

// A StartTimeout is a server's childStartTimeout, written as Go writes a
// duration ("90s", "2m").
type StartTimeout time.Duration

// MaxStartTimeout bounds childStartTimeout.
const MaxStartTimeout = time.Hour

func (d *StartTimeout) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("childStartTimeout must be a string such as \"90s\" or \"2m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 || v > MaxStartTimeout {
		return fmt.Errorf("childStartTimeout %q: want a positive duration up to %v, such as \"90s\"", s, MaxStartTimeout)
	}
	*d = StartTimeout(v)
	return nil
}

// A ToolFilter hides tools by name: a tool is available when it matches
// an Allow glob (or Allow is empty) and no Deny glob. Globs are path.Match
// patterns ('*', '?', '[...]').
type ToolFilter struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// Allowed reports whether the filter lets the tool called name through;
// a nil filter lets everything through. Deny wins over Allow.
func (f *ToolFilter) Allowed(name string) bool {
	if f == nil {
		return true
	}
	for _, g := range f.Deny {
		if ok, _ := path.Match(g, name); ok {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, g := range f.Allow {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Check reports the first glob that is not a valid path.Match pattern.
func (f *ToolFilter) Check() error {
	for _, g := range append(slices.Clone(f.Allow), f.Deny...) {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("glob %q: %w", g, err)
		}
	}
	return nil
}

// validName: server names are URL path segments (/servers/<name>/mcp) and
// tool-name prefixes of the aggregated endpoint.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name may name a server: 1-64 letters, digits,
// '-' or '_'.
func ValidName(name string) bool { return validName.MatchString(name) }

// Enabled returns the names of the servers that are not disabled, sorted.
func (c *Config) Enabled() []string {
	var out []string
	for _, name := range sortedKeys(c.Servers) {
		if !c.Servers[name].Disabled {
			out = append(out, name)
		}
	}
	return out
}
