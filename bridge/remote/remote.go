package remote

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/lifecycle"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// Config configures a Remote: the endpoint and what the host side hands
// it. Zero values select httpclient's defaults.
type Config struct {
	// URL is the remote MCP endpoint (for HTTP+SSE, its SSE URL).
	URL string
	// Header is sent with every request (Authorization, -H headers).
	Header http.Header
	// HTTPClient, if set, sends the requests (tests, custom TLS).
	HTTPClient *http.Client
	// Transport is the HTTP transport toward the remote (transport.go).
	Transport httpclient.Transport
	// MaxRetries and MaxRetryWait configure httpclient's retries.
	MaxRetries   int
	MaxRetryWait time.Duration
	// MaxMessageSize bounds one message from the remote.
	MaxMessageSize int
	// RequestTimeout is the bound the host side puts on one request; the
	// error of a request that ran out of it names it (Describe).
	RequestTimeout time.Duration
	// HideRemoteDetail keeps the remote's body and WWW-Authenticate out
	// of the errors Describe makes (connect.Config.HideRemoteDetail).
	HideRemoteDetail bool
	// Logger receives logs.
	Logger zerolog.Logger

	// The host side, for what the remote sends outside the response
	// stream of a request the host waits on. Both run on the goroutine
	// that reads the stream, one message at a time (JSON, a batch split:
	// deliver).
	//
	// Unsolicited takes each message of the standalone GET stream.
	Unsolicited func(msg []byte)
	// Stray takes each message on the response stream of a POSTed
	// notification or response (Send), which answers nothing.
	Stray func(msg []byte)
}

// A Remote is the MCP server as a peer over Streamable HTTP (or the
// legacy HTTP+SSE transport), with or without a 2025 session: the HTTP
// exchange of a request, the headers a message needs, the session and its
// GET stream, the era probe and its cache.
type Remote struct {
	cfg    Config
	log    zerolog.Logger
	client *httpclient.Client

	sess   legacySession
	tools  toolCache
	sseRec sseRecovery // HTTP+SSE stream re-establishment (transport.go)
	warns  warnings

	// streams owns the remote's long-lived streams (the GET stream,
	// HTTP+SSE re-establishment); Close joins it, after which a stream
	// asked for is refused (the callers then close what its goroutine
	// would). streamCtx (Start) ends them.
	streams   lifecycle.Group
	streamCtx context.Context

	nextInternal atomic.Int64
}

// warnings are the log lines a remote can provoke once per message.
type warnings struct {
	badMessage  ratelog.Limiter // not JSON, a malformed batch (batch.go)
	badTool     ratelog.Limiter // a tools/list entry with invalid x-mcp-header annotations
	notAccepted ratelog.Limiter // a POSTed notification or response refused
	listenBroke ratelog.Limiter // a subscriptions/listen stream the remote keeps closing
}

// New returns a Remote for cfg. It does not contact the remote.
func New(cfg Config) (*Remote, error) {
	if err := checkTransport(cfg.Transport); err != nil {
		return nil, err
	}
	r := &Remote{
		cfg: cfg,
		log: cfg.Logger,
		client: &httpclient.Client{
			Endpoint:     cfg.URL,
			HTTPClient:   cfg.HTTPClient,
			Header:       cfg.Header,
			MaxRetries:   cfg.MaxRetries,
			MaxRetryWait: cfg.MaxRetryWait,
			MaxEventSize: cfg.MaxMessageSize,
			Logger:       cfg.Logger,
			Transport:    cfg.Transport,
		},
	}
	if r.cfg.Unsolicited == nil {
		r.cfg.Unsolicited = func([]byte) {}
	}
	if r.cfg.Stray == nil {
		r.cfg.Stray = func([]byte) {}
	}
	r.sess.r = r
	return r, nil
}

// Start binds the remote's long-lived streams to ctx (the host side's:
// cancelled when the host leaves). It is called once, before any traffic.
func (r *Remote) Start(ctx context.Context) { r.streamCtx = ctx }

// Wait joins the remote's streams, once the ctx given to Start has ended;
// none starts after it.
func (r *Remote) Wait() { r.streams.Wait() }

// Close joins the remote's streams (Wait), ends the session (terminate)
// and closes the client.
func (r *Remote) Close() {
	r.streams.Wait()
	r.sess.terminate()
	r.client.Close()
	r.client.CloseIdleConnections()
}

// Send sends a message that expects no answer (202); what names it in the
// log line of a refusal.
func (r *Remote) Send(ctx context.Context, raw []byte, hdr http.Header, what string) error {
	resp, err := r.client.Post(ctx, raw, hdr)
	if err != nil {
		// Also reached once per server request the bridge answers (a ping
		// flood on the GET stream), hence limited.
		r.warns.notAccepted.Event(&r.log, zerolog.WarnLevel).Err(err).Str("message", what).Msg("remote did not accept a notification/response")
		return err
	}
	// A server may still answer with a stream (some do for notifications):
	// relay whatever comes.
	for {
		msg, err := resp.Next()
		if err != nil {
			break
		}
		r.deliver(msg, sinkFunc(r.cfg.Stray))
	}
	resp.Close()
	return nil
}

// Tell sends body, a message of the bridge's own that expects no answer
// (a notification, the response to a server request), with the headers it
// needs (HeadersFor), as Send does.
func (r *Remote) Tell(ctx context.Context, body []byte, what string) error {
	var m wire.Message
	if err := wire.Parse(body, &m); err != nil {
		return err
	}
	return r.Send(ctx, body, r.HeadersFor(&m), what)
}

// SessionID returns the remote's 2025 session id, "" without one.
func (r *Remote) SessionID() string { return r.client.SessionID() }

// DropSession forgets the session id (a 2026-07-28 remote has none).
func (r *Remote) DropSession() { r.client.SetSessionID("") }

// MintID returns a fresh JSON string id for a request of the bridge's own
// ("mcp-bridge-<kind>-<n>"): never reused by this bridge, so it never
// collides with a legacy session's earlier ids, and easy to spot in logs.
func (r *Remote) MintID(kind string) []byte {
	return strconv.AppendQuote(nil, translate.InternalIDPrefix+kind+"-"+strconv.FormatInt(r.nextInternal.Add(1), 10))
}

// ListenBackoff paces the re-establishment of a broken
// subscriptions/listen stream: quick at first, never giving up.
func ListenBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0))
}

// SleepCtx waits d, or until ctx ends (false).
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
