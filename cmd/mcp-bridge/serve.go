package main

import (
	"context"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
)

type serveFlags struct {
	listen, path, sessionMode, childProto, childPer string
	allowUnauth                                     bool
	origins, authTokens                             []string
	maxBody, maxMessage, replay                     byteSize
	keepalive, shutdown, idle                       time.Duration
	maxSessions                                     int
	log                                             logFlags
}

func serveFlagSet(f *serveFlags, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	// Everything from the child command on is the child's, flags included.
	fs.SetInterspersed(false)
	f.maxBody, f.maxMessage, f.replay = 32<<20, 32<<20, 4<<20
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "listen `address` (host:port); off loopback an --auth-token is required")
	fs.StringVar(&f.path, "path", "/mcp", "MCP endpoint `path`")
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
	fs.DurationVar(&f.shutdown, "shutdown-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may finish")
	fs.DurationVar(&f.idle, "session-idle-timeout", 30*time.Minute, "end a legacy session after this long without requests (0 disables)")
	fs.IntVar(&f.maxSessions, "max-sessions", 100, "most concurrent legacy sessions")
	f.log.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcp-bridge serve [flags] -- COMMAND [ARG...]\n\n"+
			"Runs COMMAND as a stdio MCP server and serves it over Streamable HTTP.\n"+
			"2026-07-28 clients share one child; each 2025 session gets its own (see --session-mode).\n\nFlags:\n%s", fs.FlagUsagesWrapped(100))
	}
	return fs
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	var f serveFlags
	fs := serveFlagSet(&f, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, "auth-token"); err != nil {
		return err
	}
	child := fs.Args()
	if len(child) == 0 {
		fs.Usage()
		return usagef("serve: missing the MCP server command (mcp-bridge serve [flags] -- COMMAND [ARG...])")
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	mode, err := oneOf("--session-mode", serve.SessionMode(f.sessionMode), serve.SessionAuto, serve.SessionPerSession, serve.SessionShared)
	if err != nil {
		return err
	}
	childPer, err := oneOf("--child-per", serve.ChildPer(f.childPer), serve.ChildShared, serve.ChildPerPrincipal)
	if err != nil {
		return err
	}
	tokens := splitTokens(f.authTokens)
	childProto, err := oneOf("--child-protocol", serve.ChildProtocol(f.childProto), serve.ChildAuto, serve.ChildModern, serve.ChildLegacy)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(f.path, "/") {
		return usagef("--path %q must start with /", f.path)
	}
	path, err := exec.LookPath(child[0])
	if err != nil {
		return fmt.Errorf("serve: MCP server command: %w", err)
	}
	loopback, err := isLoopbackAddr(f.listen)
	if err != nil {
		return usagef("--listen %q: %v", f.listen, err)
	}
	if !loopback && len(tokens) == 0 && !f.allowUnauth {
		return usagef("--listen %s is reachable from other machines: set --auth-token (or MCP_BRIDGE_AUTH_TOKEN), or pass --allow-unauthenticated if a proxy in front authenticates", f.listen)
	}
	h, err := serve.New(serve.Config{
		Command: func() *exec.Cmd {
			cmd := exec.Command(path, child[1:]...)
			cmd.Args[0] = child[0]
			return cmd
		},
		Path:               f.path,
		AuthTokens:         tokens,
		ChildPer:           childPer,
		AllowedOrigins:     f.origins,
		CheckHost:          loopback,
		SessionMode:        mode,
		ChildProtocol:      childProto,
		MaxBody:            int64(f.maxBody),
		MaxMessageSize:     int(f.maxMessage),
		ReplayBuffer:       offIfZero(int(f.replay)),
		Keepalive:          offIfZero(f.keepalive),
		SessionIdleTimeout: offIfZero(f.idle),
		MaxSessions:        f.maxSessions,
		Logger:             log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          stdlog.New(log.With().Str("src", "net/http").Logger(), "", 0),
	}
	h.Start()
	log.Info().Str("url", "http://"+ln.Addr().String()+f.path).Strs("command", child).
		Int("auth_tokens", len(tokens)).Str("child_per", f.childPer).Msg("mcp-bridge serving")

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
		log.Info().Str("signal", sig.String()).Dur("timeout", f.shutdown).Msg("shutting down: finishing in-flight requests")
	case <-ctx.Done():
	}
	// Stop accepting, end long-lived streams, and let requests in flight
	// finish within the timeout; a second signal cuts the wait short.
	h.BeginShutdown()
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdown)
	go func() {
		select {
		case <-sigs:
			log.Warn().Msg("second signal: stopping now")
			cancel()
		case <-sctx.Done():
		}
	}()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn().Int("in_flight", h.InFlight()).Msg("shutdown timeout: abandoning in-flight requests")
	}
	cancel()
	// Every child: close stdin, SIGTERM, SIGKILL, whole process groups.
	h.Close()
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

// isLoopbackAddr reports whether a listen address binds only loopback
// interfaces. An empty host (":8080") means every interface.
func isLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
