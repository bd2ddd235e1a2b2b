package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
	"github.com/mcp-bridge/mcp-bridge/httpclient/oauth"
)

type connectFlags struct {
	headers    []string
	bearer     string
	protocol   string
	transport  string
	timeout    time.Duration
	maxMessage byteSize
	retries    int
	retryWait  time.Duration
	shutdown   time.Duration
	log        logFlags
	oauth      oauthFlags
	ca         caFlag
	telemetry  telemetryFlags
	tools      teamconfig.ToolFilter
	config     string
}

func runConnect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f connectFlags
	fs := connectFlagSet(&f, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.config != "" {
		// Before applyEnv: MCP_BRIDGE_BEARER_TOKEN is one server's
		// credential; the file's entries carry their own headers.
		return runConnectConfig(ctx, fs, &f, stdin, stdout, stderr)
	}
	if err := applyEnv(fs, "bearer-token"); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageHint("connect", "want exactly one URL, got %d arguments", fs.NArg())
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("connect: %q is not an http(s) URL", fs.Arg(0))
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	proto, err := oneOf("--protocol", connect.Protocol(f.protocol), connect.ProtocolAuto, connect.ProtocolModern, connect.ProtocolLegacy)
	if err != nil {
		return err
	}
	transport, err := oneOf("--transport", httpclient.Transport(f.transport), httpclient.TransportAuto, httpclient.TransportStreamableHTTP, httpclient.TransportSSE)
	if err != nil {
		return err
	}
	toolFilter, err := f.toolFilter()
	if err != nil {
		return err
	}
	hdr, err := parseHeaders(f.headers, os.LookupEnv)
	if err != nil {
		return err
	}
	if f.bearer != "" {
		hdr.Set("Authorization", "Bearer "+f.bearer)
	}
	tr, err := f.ca.transport()
	if err != nil {
		return err
	}
	// A static Authorization header turns OAuth off for this server.
	var hc *http.Client
	var notice hostNotice
	useOAuth := hdr.Get("Authorization") == ""
	if useOAuth {
		ocfg, err := f.oauth.config(fs, u.String(), log, stderr)
		if err != nil {
			return err
		}
		ocfg.HTTPClient = oauthClient(tr)
		ocfg.DeviceNotice = notice.device
		az, err := oauth.New(ocfg)
		if err != nil {
			return usagef("connect: %v", err)
		}
		defer az.Close()
		hc = oauthHTTPClient(az, tr)
		defer hc.CloseIdleConnections()
	} else if tr != nil {
		hc = &http.Client{Transport: tr}
		defer hc.CloseIdleConnections()
	}
	tel, stopTelemetry, err := f.telemetry.start(telemetry.Client, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	b, err := connect.New(connect.Config{
		URL:             u.String(),
		HTTPClient:      hc,
		Header:          hdr,
		Protocol:        proto,
		Transport:       transport,
		RequestTimeout:  f.timeout,
		MaxMessageSize:  int(f.maxMessage),
		MaxRetries:      offIfZero(f.retries),
		MaxRetryWait:    f.retryWait,
		ShutdownTimeout: f.shutdown,
		Logger:          log,
		Telemetry:       tel,
		ToolFilter:      toolFilter,
	})
	if err != nil {
		return err
	}
	notice.b.Store(b)
	// Header values may carry secrets: log their names only.
	names := make([]string, 0, len(hdr))
	for k := range hdr {
		names = append(names, k)
	}
	ev := log.Info().Str("url", safeURL(u)).Strs("headers", names).Bool("oauth", useOAuth)
	if toolFilter != nil {
		ev = ev.Strs("tools_allow", f.tools.Allow).Strs("tools_deny", f.tools.Deny)
	}
	ev.Msg("mcp-bridge connect")
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = b.Run(ctx, stdin, stdout)
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a normal way for a host to stop us
	}
	return err
}

// parseHeaders turns -H values into headers, expanding ${VAR}.
func parseHeaders(values []string, lookup func(string) (string, bool)) (http.Header, error) {
	h := http.Header{}
	for _, v := range values {
		name, value, ok := strings.Cut(v, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, usagef("-H %q: want \"Name: value\"", v)
		}
		expanded, err := expandVars(strings.TrimSpace(value), lookup)
		if err != nil {
			return nil, usagef("-H %s: %v", name, err)
		}
		if strings.ContainsAny(expanded, "\r\n") {
			return nil, usagef("-H %s: the value contains a line break", name)
		}
		h.Add(name, expanded)
	}
	return h, nil
}

// expandVars replaces ${NAME} with the environment variable's value. Only
// the braced form is expanded, so a literal "$" in a token survives; "$$"
// is a literal "$". An unset variable is an error: sending an empty secret
// is never what was meant.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in %q", s)
			}
			name := s[i+2 : i+end]
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// safeURL renders u for the log: user info, query and fragment may carry
// a credential (httpclient drops them from its errors for the same reason).
func safeURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

const connectHelp = `Usage: mcp-bridge connect [flags] URL
       mcp-bridge connect [flags] --config FILE

Serves the remote Streamable HTTP MCP server at URL on stdin/stdout, for hosts
that launch MCP servers as subprocesses. With --config, serves every server of
an mcpServers file (remote and stdio entries) as one: their tools, prompts and
resources named <server>_<name>. Logs go to stderr.
`

// connectFlagSet registers connect's flags into f; help goes to out.
func connectFlagSet(f *connectFlags, out io.Writer) *pflag.FlagSet {
	fs := newFlagSet("connect", out, connectHelp)
	f.maxMessage = 32 << 20
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header `\"Name: value\"` (repeatable; ${VAR} is expanded from the environment)")
	fs.StringVar(&f.bearer, "bearer-token", "", "send Authorization: Bearer `token` (env MCP_BRIDGE_BEARER_TOKEN)")
	fs.StringVar(&f.protocol, "protocol", "auto", "remote era: auto|modern (2026-07-28)|legacy (2025 sessions)")
	fs.StringVar(&f.transport, "transport", "auto", "HTTP transport: auto (Streamable HTTP, falling back to HTTP+SSE)|streamable-http|sse (the legacy 2024-11-05 HTTP+SSE transport; URL is the SSE URL)")
	fs.DurationVar(&f.timeout, "request-timeout", 0, "give up on a request after this `duration` (0: never; the host's own timeout still applies)")
	fs.Var(&f.maxMessage, "max-message-size", "largest message in `bytes`, either way")
	fs.IntVar(&f.retries, "retries", 4, "retries of a request that cannot have reached the server (dial error) or got 429/503 (0 disables)")
	fs.DurationVar(&f.retryWait, "retry-max-wait", 10*time.Second, "longest single wait between retries, Retry-After included")
	fs.DurationVar(&f.shutdown, "shutdown-timeout", 10*time.Second, "after stdin closes, how long in-flight requests may finish")
	fs.StringArrayVar(&f.tools.Allow, "tools-allow", nil, "offer only the remote's tools whose name matches this `glob` (repeatable; path.Match: * ? [...])")
	fs.StringArrayVar(&f.tools.Deny, "tools-deny", nil, "hide the remote's tools whose name matches this `glob`: not listed, calls refused (repeatable; wins over --tools-allow)")
	fs.StringVar(&f.config, "config", "", "serve every server of an mcpServers JSON `file` (url and command entries) as one, names prefixed <server>_ (SIGHUP re-reads it; docs/connect.md)")
	f.log.register(fs)
	f.oauth.register(fs)
	f.ca.register(fs, caForConnect)
	f.telemetry.register(fs)
	return fs
}

// toolFilter is --tools-allow/--tools-deny as connect.Config.ToolFilter:
// the globs of a --config file's tools: {allow, deny}, checked and
// applied alike; nil when neither flag is given.
func (f *connectFlags) toolFilter() (func(string) bool, error) {
	if err := f.tools.Check(); err != nil {
		return nil, usagef("connect: --tools-allow/--tools-deny: %v", err)
	}
	if len(f.tools.Allow)+len(f.tools.Deny) == 0 {
		return nil, nil
	}
	return f.tools.Allowed, nil
}
