package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/gateway"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/teamconfig"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// notWithConfig are connect's flags that describe one remote server: with
// --config every entry says its own (url, type, headers), so a flag
// given would silently apply to nothing, or to the wrong thing.
var notWithConfig = map[string]string{
	"header":                    "put the headers in the entry's \"headers\" (${VAR} is expanded there too)",
	"bearer-token":              "put \"Authorization\": \"Bearer ${VAR}\" in the entry's \"headers\"",
	"protocol":                  "each remote is spoken to in the era it answers in",
	"transport":                 "set the entry's \"type\" (\"http\" or \"sse\")",
	"retries":                   "the host's side is in-process; each remote entry retries as connect does",
	"retry-max-wait":            "the host's side is in-process; each remote entry retries as connect does",
	"oauth-client-id":           "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-client-secret":       "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-client-metadata-url": "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-resource":            "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-no-resource":         "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-scope":               "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-grant":               "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-client-key":          "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-client-key-alg":      "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-browser":             "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-callback-port":       "OAuth settings belong to each entry's \"oauth\" object in the file",
	"oauth-timeout":             "OAuth settings belong to each entry's \"oauth\" object in the file",
}

// runConnectConfig is `connect --config FILE`: every enabled server of the
// file presented to the stdio host as one server. It is serve --config's
// gateway with no listener: each entry gets its route (a remote entry's
// connect.Bridge in the era the remote speaks, a stdio entry's child), the
// aggregate joins them under <server><separator><name>, and one more
// connect.Bridge carries the host's stdin/stdout to the aggregated
// endpoint, served in-process (gateway.AggregateClient). The host is thus served
// by connect exactly as a single remote would be (either era, translated),
// and a remote that is down or slow costs only its own entries: the
// aggregate logs it, leaves it out and starts it again with backoff.
// SIGHUP re-reads the file as serve --config does.
func runConnectConfig(ctx context.Context, fs *pflag.FlagSet, f *connectFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	if fs.NArg() > 0 {
		return usagef("connect: --config and a URL are exclusive: put %q in the file's mcpServers as {\"type\": \"http\", \"url\": ...}, or drop --config", fs.Arg(0))
	}
	var bad error
	fs.Visit(func(fl *pflag.Flag) {
		if why, ok := notWithConfig[fl.Name]; ok && bad == nil {
			bad = usagef("connect: --%s does not apply with --config: %s", fl.Name, why)
		}
	})
	if bad != nil {
		return bad
	}
	log, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	// Over the aggregated names (<server>_<tool>); each entry's own
	// "tools" filter applies to its names before that.
	toolFilter, err := f.toolFilter()
	if err != nil {
		return err
	}
	load := func() (*teamconfig.Config, error) {
		file, err := loadConfig(f.config, fs)
		if err != nil {
			return nil, err
		}
		// The aggregate is what the host sees, whatever the file says of
		// serve's /mcp.
		file.Bridge.Aggregate = true
		return file, nil
	}
	file, err := load()
	if err != nil {
		return fmt.Errorf("connect: --config %s: %w", f.config, err)
	}
	tr, err := f.ca.transport()
	if err != nil {
		return err
	}
	tel, stopTelemetry, err := f.telemetry.start(telemetry.Client, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	// Remote entries with "oauth" log in through one store and one
	// Group (one browser run for the entries behind one authorization
	// server and client); a device login's code also reaches the host as
	// a log notification once the front bridge below exists.
	var notice hostNotice
	remotes := newRemoteAuths(tr, log, stderr)
	remotes.notice = notice.device
	defer remotes.close() // after g.Close: its connects use them
	g, err := gateway.New(gateway.Config{
		Base: serve.Config{
			MaxMessageSize: int(f.maxMessage),
			// One host, attached as long as the process runs: nothing
			// to time out or to serve over HTTP+SSE.
			SessionIdleTimeout: -1,
			ChildIdleTimeout:   -1,
			NoSSE:              true,
			// One host: every route's sessions are its, so one child per
			// stdio entry serves them all (an entry's sessionMode may
			// still say otherwise).
			SessionMode: serve.SessionShared,
			Logger:      log,
		},
		HTTPClient:    client(tr, 0), // connect's own per-request timeouts apply
		RemoteClient:  remotes.client,
		RetireTimeout: f.shutdown,
		Logger:        log,
	}, file)
	if err != nil {
		return err
	}
	defer g.Close()
	g.Start()
	url, hc, err := g.AggregateClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	b, err := connect.New(connect.Config{
		URL:        url,
		HTTPClient: hc,
		// The aggregate speaks the 2025 handshake (serve would translate
		// for a 2026-07-28 client by running a second Aggregator, a
		// second set of sessions at every server): connect translates a
		// 2026-07-28 host itself, and a 2025 host is relayed as is.
		Protocol:        connect.ProtocolLegacy,
		RequestTimeout:  f.timeout,
		MaxMessageSize:  int(f.maxMessage),
		MaxRetries:      -1, // in-process: nothing a retry could fix
		ShutdownTimeout: f.shutdown,
		Logger:          log.With().Str("server", "aggregate").Str("client", "stdio").Logger(),
		Telemetry:       tel,
		ToolFilter:      toolFilter,
	})
	if err != nil {
		return err
	}
	notice.b.Store(b)
	ev := log.Info().Str("config", f.config).Strs("servers", g.Servers())
	if toolFilter != nil {
		ev = ev.Strs("tools_allow", f.tools.Allow).Strs("tools_deny", f.tools.Deny)
	}
	ev.Msg("mcp-bridge connect")

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, stdin, stdout) }()
	for {
		select {
		case err = <-done:
			if errors.Is(err, context.Canceled) {
				return nil // a signal: a normal way for a host to stop us
			}
			return err
		case <-hups:
			file = reloadConfig(g, f.config, load, file, log)
		}
	}
}
