package main

import (
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// baseConfig checks the flags both forms of serve share (one command, or
// --config) and returns the serve.Config they give every endpoint: no
// command, path, OAuth or telemetry yet (checked before anything starts). listen is the address that will be bound
// (--listen, or the file's mcpBridge.listen): off loopback some inbound
// credential is required.
func (f *serveFlags) baseConfig(listen string, log zerolog.Logger) (serve.Config, error) {
	mode, err := oneOf("--session-mode", serve.SessionMode(f.sessionMode), serve.SessionAuto, serve.SessionPerSession, serve.SessionShared)
	if err != nil {
		return serve.Config{}, err
	}
	childPer, err := oneOf("--child-per", serve.ChildPer(f.childPer), serve.ChildShared, serve.ChildPerPrincipal)
	if err != nil {
		return serve.Config{}, err
	}
	childProto, err := oneOf("--child-protocol", serve.ChildProtocol(f.childProto), serve.ChildAuto, serve.ChildModern, serve.ChildLegacy)
	if err != nil {
		return serve.Config{}, err
	}
	if f.replicaID != "" && !serve.ValidReplicaID(f.replicaID) {
		return serve.Config{}, usagef("--replica-id %q: want 1-63 letters, digits, '-' or '_'", f.replicaID)
	}
	if f.childStart <= 0 {
		return serve.Config{}, usagef("--child-start-timeout %v: must be positive", f.childStart)
	}
	if f.warmChildren < 0 {
		return serve.Config{}, usagef("--warm-children %d: must not be negative", f.warmChildren)
	}
	if f.drainDelay < 0 {
		return serve.Config{}, usagef("--drain-delay %v: must not be negative", f.drainDelay)
	}
	if err := f.tls.check(); err != nil {
		return serve.Config{}, err
	}
	tokens := splitTokens(f.authTokens)
	loopback, err := isLoopbackAddr(listen)
	if err != nil {
		return serve.Config{}, usagef("listen address %q: %v", listen, err)
	}
	if !loopback && len(tokens) == 0 && !f.auth.enabled() && !f.allowUnauth {
		return serve.Config{}, usagef("listen address %s is reachable from other machines: set --auth-token (or MCP_BRIDGE_AUTH_TOKEN), --auth-token-file or --oauth-issuer, or pass --allow-unauthenticated if a proxy in front authenticates", listen)
	}
	return serve.Config{
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
		ChildStartTimeout:  f.childStart,
		ChildIdleTimeout:   offIfZero(f.childIdle),
		WarmChildren:       f.warmChildren,
		ReadTimeout:        offIfZero(f.readTimeout),
		MaxBuffered:        int64(f.maxBuffered),
		MaxInflight:        f.maxInflight,
		ChildWriteTimeout:  offIfZero(f.childWriteTimeout),
		ReplicaID:          f.replicaID,
		NoSSE:              f.ssePath == "",
		Logger:             log,
		AccessLog:          true,
	}, nil
}

// httpServer is the http.Server both forms of serve run h with.
func httpServer(h http.Handler, log zerolog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          warnLog(log.With().Str("src", "net/http").Logger()),
	}
}

// adopt makes the real binary, on Linux, inherit descendants that leave
// their child's process group (setsid), so that none outlives it; nil
// when not the real binary (tests run serve in-process).
func adopt(log zerolog.Logger) *stdiohost.Orphans {
	if !adoptOrphans {
		return nil
	}
	orphans, err := stdiohost.AdoptOrphans(log)
	if err != nil {
		log.Debug().Err(err).Msg("descendants that leave their process group are not tracked")
	}
	return orphans
}
