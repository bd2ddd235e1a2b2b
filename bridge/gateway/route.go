package gateway

import (
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// A route is one enabled server: its Handler and the requests inside it.
type route struct {
	name string
	srv  *teamconfig.Server
	h    *serve.Handler

	mu      sync.Mutex
	active  int
	retired bool
	idleCh  chan struct{} // closed once retired with nothing active
}

// enter and leave bracket every request the route's Handler serves, so
// that a retired Handler is closed only after them (or RetireTimeout).
func (rt *route) enter() {
	rt.mu.Lock()
	rt.active++
	rt.mu.Unlock()
}

func (rt *route) leave() {
	rt.mu.Lock()
	rt.active--
	if rt.active == 0 && rt.retired {
		closeOnce(rt.idleCh)
	}
	rt.mu.Unlock()
}

// idle marks the route retired and returns a channel closed once no
// request is inside it.
func (rt *route) idle() <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.retired = true
	if rt.active == 0 {
		closeOnce(rt.idleCh)
	}
	return rt.idleCh
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Path returns the MCP endpoint of a server.
func Path(name string) string { return "/servers/" + name + "/mcp" }

// newRoute builds the Handler of one enabled server.
func (g *Gateway) newRoute(file *teamconfig.Config, s *teamconfig.Server) (*route, error) {
	cfg := g.serverConfig(file, s)
	if s.Remote() && s.OAuth != nil {
		if g.cfg.RemoteClient == nil {
			return nil, errorf("server %s: has \"oauth\" settings, and this bridge has no OAuth client for remote servers", s.Name)
		}
		hc, err := g.cfg.RemoteClient(s)
		if err != nil {
			return nil, errorf("server %s: oauth: %w", s.Name, err)
		}
		cfg.Run = g.remoteRun(s, cfg, hc)
	}
	if err := g.authFor(&cfg, s.Options.Scopes); err != nil {
		return nil, errorf("server %s: %w", s.Name, err)
	}
	g.checkCallers(&cfg, s)
	h, err := serve.New(cfg)
	if err != nil {
		return nil, errorf("server %s: %w", s.Name, err)
	}
	return &route{name: s.Name, srv: s, h: h, idleCh: make(chan struct{})}, nil
}

// serverConfig is the serve.Config of one server: the Base, the file's
// limits and the server's own options.
func (g *Gateway) serverConfig(file *teamconfig.Config, s *teamconfig.Server) serve.Config {
	cfg := g.cfg.Base
	cfg.Path = Path(s.Name)
	cfg.ServerName = s.Name
	cfg.Logger = g.cfg.Base.Logger.With().Str("server", s.Name).Logger()
	cfg.Command, cfg.Run = nil, nil
	if s.Remote() {
		cfg.Run = g.remoteRun(s, cfg, g.cfg.HTTPClient)
	} else {
		cfg.Command = stdioCommand(s)
	}
	applyLimits(&cfg, file.Bridge)
	o := s.Options
	if o.SessionMode != "" {
		cfg.SessionMode = serve.SessionMode(o.SessionMode)
	}
	if o.ChildProtocol != "" {
		cfg.ChildProtocol = serve.ChildProtocol(o.ChildProtocol)
	}
	if o.ChildPer != "" {
		cfg.ChildPer = serve.ChildPer(o.ChildPer)
	}
	if o.Tools != nil {
		cfg.ToolFilter = o.Tools.Allowed
	}
	if o.ChildStartTimeout > 0 {
		cfg.ChildStartTimeout = time.Duration(o.ChildStartTimeout)
	}
	return cfg
}

// authFor sets cfg.Auth to the endpoint's own resource server, when OAuth
// is on: each endpoint is its own protected resource (its own audience and
// RFC 9728 metadata).
func (g *Gateway) authFor(cfg *serve.Config, scopes []string) error {
	if g.cfg.Auth == nil {
		return nil
	}
	a, err := g.cfg.Auth(cfg.Path, scopes)
	if err != nil {
		return err
	}
	cfg.Auth = a
	return nil
}

// applyLimits sets the limits the file's mcpBridge section gives.
func applyLimits(cfg *serve.Config, b teamconfig.Bridge) {
	if b.MaxBody > 0 {
		cfg.MaxBody = b.MaxBody
	}
	if b.MaxMessageSize > 0 {
		cfg.MaxMessageSize = b.MaxMessageSize
	}
	if b.MaxInflight > 0 {
		cfg.MaxInflight = b.MaxInflight
	}
	if b.MaxSessions > 0 {
		cfg.MaxSessions = b.MaxSessions
	}
}

// stdioCommand runs a stdio entry: its command (looked up in PATH at each
// start, so a server installed later is found on the next restart), its
// args, its env over the bridge's environment, and its cwd. serve scrubs
// the bridge's own credentials from the environment.
func stdioCommand(s *teamconfig.Server) func() *exec.Cmd {
	env := slices.Clone(os.Environ())
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return func() *exec.Cmd {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Env = slices.Clone(env)
		cmd.Dir = s.Cwd
		return cmd
	}
}

// remoteRun is a remote entry's "child": a connect.Bridge for its url and
// headers, run in-process. The headers (tokens, typically) stay in memory:
// no argv, no environment, and connect logs no header values. Its HTTP
// client follows the outbound policy (httpclient builds it on package
// outbound): no redirect to another origin or off https, so neither the
// headers nor a client's message go anywhere but the configured origin.
// The gateway's clients are not who configured the entry: their errors
// carry the remote's status, not its body (HideRemoteDetail), and never
// the URL's user info, query or a header value. hc is the HTTP client:
// Config.HTTPClient, or for an entry with "oauth" its OAuth client.
func (g *Gateway) remoteRun(s *teamconfig.Server, cfg serve.Config, hc *http.Client) func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	hdr := http.Header{}
	for k, v := range s.Headers {
		hdr.Set(k, v)
	}
	ccfg := connect.Config{
		URL:            s.URL,
		Header:         hdr,
		HTTPClient:     hc,
		MaxMessageSize: cfg.MaxMessageSize,
		Logger:         cfg.Logger.With().Str("remote", "connect").Logger(),

		HideRemoteDetail: true,
	}
	if s.SSE {
		ccfg.Transport = httpclient.TransportSSE
	}
	return func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		c := ccfg
		c.Header = hdr.Clone()
		b, err := connect.New(c)
		if err != nil {
			return err
		}
		return b.Run(ctx, stdin, stdout)
	}
}

func sortedRoutes(m map[string]*route) []string { return slices.Sorted(maps.Keys(m)) }
