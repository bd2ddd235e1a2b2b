package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// adoptOrphans is set by main: only the real binary reaps inherited
// descendants.
var adoptOrphans bool

type serveFlags struct {
	listen, path, sessionMode, childProto, childPer string
	replicaID, config                               string
	ssePath                                         string
	drainDelay                                      time.Duration
	allowUnauth                                     bool
	origins, authTokens                             []string
	maxBody, maxMessage, maxBuffered, replay        byteSize
	keepalive, shutdown, idle                       time.Duration
	readTimeout, childWriteTimeout                  time.Duration
	childStart, childIdle                           time.Duration
	maxSessions, maxInflight, warmChildren          int
	log                                             logFlags
	tls                                             tlsFlags
	auth                                            serveAuthFlags
	telemetry                                       telemetryFlags
	ca                                              caFlag
}

const serveHelp = `Usage: mcp-bridge serve [flags] -- COMMAND [ARG...]
       mcp-bridge serve [flags] --config FILE

Runs COMMAND as a stdio MCP server and serves it over Streamable HTTP.
2026-07-28 clients share one child; each 2025 session gets its own (see --session-mode).
`

// serveFlagSet registers serve's flags into f; help goes to out.
func serveFlagSet(f *serveFlags, out io.Writer) *pflag.FlagSet {
	fs := newFlagSet("serve", out, serveHelp)
	// Everything from the child command on is the child's, flags included.
	fs.SetInterspersed(false)
	f.maxBody, f.maxMessage, f.maxBuffered, f.replay = 32<<20, 32<<20, 256<<20, 4<<20
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "listen `address` (host:port; \":8080\" binds loopback, 0.0.0.0:8080 every interface); off loopback a token is required")
	fs.StringVar(&f.path, "path", "/mcp", "MCP endpoint `path`")
	fs.StringVar(&f.ssePath, "sse-path", "/sse", "legacy HTTP+SSE (2024-11-05) stream `path`; its POSTs go to \"message\" in the same directory (/sse: /message); \"\" turns the transport off")
	fs.StringVar(&f.config, "config", "", "serve every server of an mcpServers JSON `file` at /servers/<name>/mcp instead of one COMMAND (SIGHUP re-reads it; docs/teams.md)")
	fs.StringArrayVar(&f.authTokens, "auth-token", nil, "bearer `token` clients must send; repeatable, each token is its own principal (env MCP_BRIDGE_AUTH_TOKEN, comma-separated; prefer it: argv is visible to other local users)")
	fs.BoolVar(&f.allowUnauth, "allow-unauthenticated", false, "allow a non-loopback --listen without --auth-token")
	fs.StringArrayVar(&f.origins, "allowed-origin", nil, "browser `origin` to accept, e.g. https://app.example.com (repeatable; loopback origins are always accepted)")
	fs.StringVar(&f.sessionMode, "session-mode", "auto", "legacy (2025) sessions: auto|per-session (a child per session) or shared (one child for all)")
	fs.StringVar(&f.childPer, "child-per", "shared", "whom a child serves modern (2026-07-28) clients for: shared (one child for all; a legacy-only child is told of no client capability)|principal (one child per bearer token, told of roots/sampling/elicitation)")
	fs.StringVar(&f.childProto, "child-protocol", "auto", "the child's era: auto (probe a throwaway sibling)|modern (2026-07-28 only)|legacy (2025 handshake only)")
	fs.Var(&f.maxBody, "max-body", "largest request body in `bytes` (413 above it)")
	fs.Var(&f.maxMessage, "max-message-size", "largest message from the child in `bytes`")
	fs.Var(&f.replay, "replay-buffer", "per legacy session, the `bytes` of SSE events kept for resumption with Last-Event-ID (also at most 1024 events; 0 disables)")
	fs.DurationVar(&f.keepalive, "keepalive", 15*time.Second, "SSE keepalive comment `interval` on quiet streams (0 disables)")
	fs.DurationVar(&f.shutdown, "shutdown-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long in-flight requests (and, with --drain-delay, 2025 sessions) may finish")
	fs.DurationVar(&f.drainDelay, "drain-delay", 0, "on SIGTERM, answer /readyz with 503 but keep serving for this `duration` before refusing new work, so a load balancer moves away first (docs/deploy.md)")
	fs.StringVar(&f.replicaID, "replica-id", "", "name this replica in the session ids it mints (`ID`.…) and in an Mcp-Bridge-Replica header, for load balancers that route 2025 sessions by that prefix")
	fs.DurationVar(&f.idle, "session-idle-timeout", 30*time.Minute, "end a legacy session after this long with no client attached, calls pending or not (0 disables)")
	fs.IntVar(&f.maxSessions, "max-sessions", 100, "most concurrent legacy sessions; at the cap the least recently active idle one (no open stream, nothing pending) is ended for a new one")
	fs.DurationVar(&f.childStart, "child-start-timeout", 60*time.Second, "how long a child may take to answer its first request (era probe, handshake); requests wait for a starting child as long, then get 503 with Retry-After; a child that misses it is restarted with backoff")
	fs.DurationVar(&f.childIdle, "child-idle-timeout", 5*time.Minute, "stop the own child of a legacy session with no request and no open stream for this long, ending the session (404; the client initializes again; 0 disables)")
	fs.IntVar(&f.warmChildren, "warm-children", 0, "keep this many children started ahead of time for new legacy sessions with a child of their own")
	fs.DurationVar(&f.readTimeout, "read-timeout", 30*time.Second, "drop a request whose body stalls this long (0 disables; headers have 10s)")
	fs.Var(&f.maxBuffered, "max-buffered", "most `bytes` held for clients across all streams; past it the stream holding the most is cut and new requests get 503 (the 2025 sessions' replay logs together keep at most as much again, dropping their oldest events first)")
	fs.IntVar(&f.maxInflight, "max-inflight", 1024, "most requests in flight toward children (503 above it)")
	fs.DurationVar(&f.childWriteTimeout, "child-write-timeout", 30*time.Second, "a write to a child's stdin that takes longer marks the child hung: killed, its requests answered, restarted (0 disables)")
	f.tls.register(fs)
	f.log.register(fs)
	f.auth.register(fs)
	f.telemetry.register(fs)
	f.ca.register(fs, "with --config, its remote servers; with --oauth-issuer, the issuers' metadata, keys and introspection")
	return fs
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fs := serveFlagSet(&f, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, "auth-token"); err != nil {
		return err
	}
	child := fs.Args()
	if f.config != "" {
		return runServeConfig(ctx, fs, &f, stderr)
	}
	if len(child) == 0 {
		return usageHint("serve", "missing the MCP server command (mcp-bridge serve [flags] -- COMMAND [ARG...], or --config FILE)")
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(f.path, "/") {
		return usagef("--path %q must start with /", f.path)
	}
	if f.listen, err = bindAddr("--listen", f.listen); err != nil {
		return err
	}
	cfg, err := f.baseConfig(f.listen, log)
	if err != nil {
		return err
	}
	if f.ca.file != "" && len(f.auth.issuers) == 0 {
		return usagef("serve: --ca-file is for what the bridge reaches over https: --config's remote servers or --oauth-issuer")
	}
	tr, err := f.ca.transport()
	if err != nil {
		return err
	}
	// Usage errors first: they do not depend on what is installed.
	path, err := exec.LookPath(child[0])
	if err != nil {
		return fmt.Errorf("serve: MCP server command: %w", err)
	}
	tel, stopTelemetry, err := f.telemetry.start(telemetry.Server, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	cfg.Telemetry = tel
	cfg.Path = f.path
	cfg.SSEPath = f.ssePath
	cfg.Command = func() *exec.Cmd {
		cmd := exec.Command(path, child[1:]...)
		cmd.Args[0] = child[0]
		return cmd
	}
	defer f.auth.close()
	if err := f.auth.apply(&cfg, client(tr, authFetchTimeout), log); err != nil {
		return err
	}
	h, err := serve.New(cfg)
	if err != nil {
		return err
	}
	ln, certs, err := f.tls.listen(f.listen, log)
	if err != nil {
		return err
	}
	srv := httpServer(h, log)
	orphans := adopt(log)
	h.Start()
	defer f.auth.watch(h, log)()
	sseURL := ""
	if p, _ := h.SSEPaths(); p != "" {
		sseURL = baseURL(ln, certs) + p
	}
	log.Info().Str("url", baseURL(ln, certs)+f.path).Str("sse_url", sseURL).Strs("command", child).
		Int("auth_tokens", cfg.TokenCount()).Str("child_per", f.childPer).Msg("mcp-bridge serving")

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var runErr error
	select {
	case err := <-served:
		runErr = fmt.Errorf("serve: %w", err)
	case sig := <-sigs:
		log.Info().Str("signal", sig.String()).Int64("drain_delay_ms", f.drainDelay.Milliseconds()).
			Int64("shutdown_timeout_ms", f.shutdown.Milliseconds()).Msg("shutting down")
	case <-ctx.Done():
	}
	stopServing(h, srv, &f, runErr == nil, sigs, log)
	// Every child: close stdin, SIGTERM, SIGKILL, whole process groups
	// (Windows: jobs); then whatever escaped a group.
	h.Close()
	if orphans != nil {
		orphans.Close()
	}
	srv.Close()
	log.Info().Msg("mcp-bridge stopped")
	return runErr
}

// splitTokens accepts comma-separated tokens in each value (the form the
// environment variable can carry); RFC 6750 tokens contain no comma.
func splitTokens(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// bindAddr is the address a listen flag binds: a host-less ":P" means
// loopback (127.0.0.1:P), for --listen and --metrics-listen alike, so
// that no flag opens a port to the network unless a host says so
// (0.0.0.0:P, [::]:P or an interface's address).
func bindAddr(flag, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usagef("%s %q: %v", flag, addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// isLoopbackAddr reports whether a listen address binds only loopback
// interfaces (after bindAddr: a host-less address is loopback).
func isLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	return outbound.LoopbackHost(host), nil
}
