package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/gateway"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// runServeConfig is `serve --config FILE`: every enabled server of the
// file behind one listener (bridge/gateway). The flags give every server's
// defaults; the file's mcpBridge section sets the limits (a flag given on
// the command line wins over the file) and, per server, the session
// handling, and its listen applies unless --listen was given. SIGHUP
// re-reads the file.
func runServeConfig(ctx context.Context, fs *pflag.FlagSet, f *serveFlags, stderr io.Writer) error {
	if len(fs.Args()) > 0 {
		return usagef("serve: --config and -- COMMAND are exclusive: put %q in the file's mcpServers, or drop --config", fs.Args()[0])
	}
	for _, name := range []string{"path"} {
		if fs.Changed(name) {
			return usagef("serve: --%s does not apply with --config: each server is at /servers/<name>/mcp", name)
		}
	}
	if f.ssePath != "" && fs.Changed("sse-path") {
		return usagef("serve: with --config each server's HTTP+SSE stream is at /servers/<name>/sse (the aggregate's at /sse): --sse-path can only be \"\" (off)")
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	load := func() (*teamconfig.Config, error) { return loadConfig(f.config, fs) }
	file, err := load()
	if err != nil {
		return fmt.Errorf("serve: --config %s: %w", f.config, err)
	}
	listen := f.listen
	if !fs.Changed("listen") && file.Bridge.Listen != "" {
		listen = file.Bridge.Listen
	}
	if listen, err = bindAddr("listen", listen); err != nil {
		return err
	}
	base, err := f.baseConfig(listen, log)
	if err != nil {
		return err
	}
	tel, stopTelemetry, err := f.telemetry.start(telemetry.Server, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	base.Telemetry = tel
	tr, err := f.ca.transport()
	if err != nil {
		return err
	}
	defer f.auth.close()
	authFor, err := f.auth.forGateway(&base, file, client(tr, authFetchTimeout), log)
	if err != nil {
		return err
	}
	remotes := newRemoteAuths(tr, log, stderr) // after g.Close: its connects use them
	defer remotes.close()
	g, err := gateway.New(gateway.Config{
		Base:          base,
		Auth:          authFor,
		HTTPClient:    client(tr, 0), // connect's own per-request timeouts apply
		RemoteClient:  remotes.client,
		RetireTimeout: f.shutdown,
		Logger:        log,
	}, file)
	if err != nil {
		return err
	}
	ln, certs, err := f.tls.listen(listen, log)
	if err != nil {
		g.Close()
		return err
	}
	srv := httpServer(g, log)
	orphans := adopt(log)
	g.Start()
	log.Info().Str("url", baseURL(ln, certs)+"/servers/<name>/mcp").Strs("servers", g.Servers()).Str("config", f.config).
		Int("auth_tokens", base.TokenCount()).Msg("mcp-bridge serving")

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var runErr error
loop:
	for {
		select {
		case err := <-served:
			runErr = fmt.Errorf("serve: %w", err)
			break loop
		case sig := <-sigs:
			log.Info().Str("signal", sig.String()).Int64("drain_delay_ms", f.drainDelay.Milliseconds()).
				Int64("shutdown_timeout_ms", f.shutdown.Milliseconds()).Msg("shutting down")
			break loop
		case <-hups:
			file = reloadConfig(g, f.config, load, file, log)
			if f.auth.tokenFile != "" {
				if tokens, err := readTokenFile(f.auth.tokenFile, log); err != nil {
					log.Error().Err(err).Msg("SIGHUP: token file not re-read; the tokens stay as they were")
				} else {
					g.SetTokens(tokens)
					log.Info().Str("file", f.auth.tokenFile).Int("tokens", len(tokens)).Msg("SIGHUP: token file re-read")
				}
			}
			if certs != nil {
				if err := certs.Reload(); err != nil {
					log.Error().Err(err).Msg("SIGHUP: TLS certificate not reloaded; the current one stays")
				}
			}
		case <-ctx.Done():
			break loop
		}
	}
	stopServing(g, srv, f, runErr == nil, sigs, log)
	g.Close()
	if orphans != nil {
		orphans.Close()
	}
	srv.Close()
	log.Info().Msg("mcp-bridge stopped")
	return runErr
}

// reloadConfig re-reads the file on SIGHUP. A file that does not parse, or
// a server that cannot be built, leaves everything as it was: the error is
// logged and the running configuration stays.
func reloadConfig(g *gateway.Gateway, name string, load func() (*teamconfig.Config, error), cur *teamconfig.Config, log zerolog.Logger) *teamconfig.Config {
	next, err := load()
	if err != nil {
		log.Error().Err(err).Str("config", name).Msg("SIGHUP: configuration not reloaded; the running one stays")
		return cur
	}
	ch, err := g.Reload(next)
	if err != nil {
		log.Error().Err(err).Str("config", name).Msg("SIGHUP: configuration not reloaded; the running one stays")
		return cur
	}
	if next.Bridge.Listen != cur.Bridge.Listen {
		log.Warn().Msg("SIGHUP: mcpBridge.listen changed; the listener changes only with a restart")
	}
	if !reflect.DeepEqual(next.OAuthIssuers, cur.OAuthIssuers) {
		log.Warn().Msg("SIGHUP: mcpBridge.oauthIssuers changed; key lifetimes change only with a restart")
	}
	log.Info().Str("added", strings.Join(ch.Added, ",")).Str("removed", strings.Join(ch.Removed, ",")).
		Str("changed", strings.Join(ch.Changed, ",")).Msg("SIGHUP: configuration reloaded")
	return next
}

// limitFlags are the serve flags the mcpBridge section also sets: the one
// given on the command line wins, at start and at every SIGHUP (an
// operator's explicit flag must not be undone by a file edit).
var limitFlags = map[string]func(*teamconfig.Bridge){
	"max-body":         func(b *teamconfig.Bridge) { b.MaxBody = 0 },
	"max-message-size": func(b *teamconfig.Bridge) { b.MaxMessageSize = 0 },
	"max-inflight":     func(b *teamconfig.Bridge) { b.MaxInflight = 0 },
	"max-sessions":     func(b *teamconfig.Bridge) { b.MaxSessions = 0 },
}

// loadConfig reads the file and drops the limits that flags override.
func loadConfig(name string, fs *pflag.FlagSet) (*teamconfig.Config, error) {
	file, err := teamconfig.Load(name)
	if err != nil {
		return nil, err
	}
	for flag, clear := range limitFlags {
		if fs.Changed(flag) {
			clear(&file.Bridge)
		}
	}
	return file, nil
}
