package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
)

// legacySession is the state of a handshake-era (2025-xx) remote session:
// the negotiated version, the host's handshake (for replay after a 404),
// and the standalone GET stream.
type legacySession struct {
	r *Remote

	mu          sync.Mutex
	version     string // negotiated protocolVersion
	initMsg     []byte // the host's initialize request
	initialized []byte // the host's notifications/initialized
	getCancel   context.CancelFunc
	getDone     chan struct{}

	reinitMu sync.Mutex
}

// handshake returns the host's initialize request, nil before one.
func (s *legacySession) handshake() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initMsg
}

func (s *legacySession) negotiated() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// header returns the headers a request in the session carries after
// initialize: MCP-Protocol-Version with the negotiated version (2025-06-18+
// transports), once there is one.
func (s *legacySession) header() http.Header {
	h := http.Header{}
	if v := s.negotiated(); v != "" {
		h.Set(wire.HeaderProtocolVersion, v)
	}
	return h
}

func (s *legacySession) beforeInitialize(m *wire.Message) {
	s.mu.Lock()
	s.initMsg = clone(m.Raw)
	s.initialized = nil
	s.mu.Unlock()
	// A new handshake starts a new session.
	s.stopGet()
	s.r.client.SetSessionID("")
}

func (s *legacySession) initializeResult(m *wire.Message) {
	if v, ok := wire.StringField(m.Raw, m.Result, "protocolVersion"); ok {
		s.mu.Lock()
		s.version = v
		s.mu.Unlock()
		s.r.log.Info().Str("protocol", v).Bool("session", s.r.client.SessionID() != "").Msg("remote session initialized")
	}
}

// onInitialized runs after the host's notifications/initialized reached the
// remote: the session is live, so the standalone GET stream may open
// (2025-11-25 transports §Listening for messages from the server).
func (s *legacySession) onInitialized(raw []byte) {
	s.mu.Lock()
	s.initialized = raw
	s.mu.Unlock()
	// The host's next requests wait for this (they are ordered after the
	// notification): a server that answers on the GET stream, or asks
	// something mid-call, must find the stream open, and a GET that opens
	// while a call is running can be mistaken for that call's resumption.
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-s.startGet():
	case <-t.C:
	}
}

// startGet opens the standalone GET stream; the returned channel is closed
// once the first connection attempt is over (open, refused or failed).
func (s *legacySession) startGet() <-chan struct{} {
	r := s.r
	ready := make(chan struct{})
	s.mu.Lock()
	if s.getCancel != nil || r.streamCtx.Err() != nil {
		s.mu.Unlock()
		close(ready)
		return ready
	}
	ctx, cancel := context.WithCancel(r.streamCtx)
	done := make(chan struct{})
	s.getCancel, s.getDone = cancel, done
	s.mu.Unlock()
	hdr := s.header()
	if !r.streams.Go(func() { s.runGet(ctx, hdr, ready, done) }) {
		// Close has joined the streams: none starts now.
		cancel()
		close(done)
		close(ready)
	}
	return ready
}

// runGet is the standalone GET stream's goroutine: ready is closed after
// the first connection attempt, done when the stream has ended.
func (s *legacySession) runGet(ctx context.Context, hdr http.Header, ready, done chan struct{}) {
	r := s.r
	defer close(done)
	sid := r.client.SessionID()
	err := r.client.ListenReady(ctx, hdr, r.unsolicited, func(error) { close(ready) })
	select {
	case <-ready:
	default:
		close(ready) // ended before the first attempt (ctx)
	}
	var se *httpclient.StatusError
	switch {
	case errors.Is(err, httpclient.ErrNoStream):
		r.log.Debug().Msg("remote offers no GET stream (405)")
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound && ctx.Err() == nil && r.sseStreamLost(sid):
		// HTTP+SSE: the stream was the session (transport.go).
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound:
		r.log.Info().Msg("GET stream: session gone (404); the next request re-initializes")
	case err != nil && ctx.Err() == nil:
		r.log.Warn().Err(err).Msg("GET stream ended")
	}
}

func (s *legacySession) stopGet() {
	s.mu.Lock()
	cancel, done := s.getCancel, s.getDone
	s.getCancel, s.getDone = nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// reinitialize replaces a session the remote forgot (404) by replaying the
// host's initialize and initialized. Concurrent callers that saw the same
// stale session id share one replay.
func (s *legacySession) reinitialize(ctx context.Context, staleSID string) error {
	s.reinitMu.Lock()
	defer s.reinitMu.Unlock()
	r := s.r
	if r.client.SessionID() != staleSID {
		return nil // someone else already did it
	}
	s.mu.Lock()
	initMsg, initialized := s.initMsg, s.initialized
	s.mu.Unlock()
	if initMsg == nil {
		return errors.New("no initialize to replay")
	}
	s.stopGet()
	r.client.SetSessionID("")
	r.log.Info().Msg("remote session expired (404): re-initializing with the host's handshake")

	var m wire.Message
	if err := wire.Parse(initMsg, &m); err != nil {
		return err
	}
	id := r.MintID("reinit")
	body := wire.Splice(initMsg, wire.Edit{Span: m.ID, Value: id})
	resp, err := r.client.Post(ctx, body, nil)
	if err != nil {
		return err
	}
	defer resp.Close()
	rm, err := AwaitResponse(resp, id, nil)
	if err != nil {
		return errors.New("no initialize result")
	}
	if rm.Error.Present() {
		return errors.New("initialize failed: " + string(rm.Bytes(rm.Error)))
	}
	s.initializeResult(rm)
	if initialized == nil {
		initialized = wire.Notification("notifications/initialized", nil)
	}
	nresp, err := r.client.Post(ctx, initialized, s.header())
	if err != nil {
		return err
	}
	nresp.Close()
	s.startGet()
	return nil
}

// terminate ends the remote session on the host's exit, bounded in time
// (2025-11-25 transports: a client that no longer needs the session
// "SHOULD send an HTTP DELETE").
func (s *legacySession) terminate() {
	s.stopGet()
	if s.r.client.SessionID() == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.r.client.Terminate(ctx, s.header()); err != nil {
		s.r.log.Debug().Err(err).Msg("DELETE of the remote session")
	}
}

// Open initializes a 2025 session of the bridge's own (not the host's
// handshake): initialize with params, then notifications/initialized
// ("After successful initialization, the client MUST send an initialized
// notification", 2025-11-25 lifecycle), then the GET stream. It returns
// the remote's InitializeResult response; other takes what else comes on
// initialize's stream (RoundTrip).
func (r *Remote) Open(ctx context.Context, params []byte, other func(msg []byte)) (*wire.Message, error) {
	id := r.MintID("init")
	body := wire.Request(id, "initialize", params)
	var im wire.Message
	if err := wire.Parse(body, &im); err != nil {
		return nil, err
	}
	r.BeforeInitialize(&im)
	rm, err := r.RoundTrip(ctx, &im, other)
	if err != nil {
		return nil, fmt.Errorf("initializing a 2025 session with the remote: %w", err)
	}
	if rm.Error.Present() {
		return nil, errors.New("the remote refused initialize: " + string(rm.Bytes(rm.Error)))
	}
	r.InitializeResult(rm)
	notif := wire.Notification("notifications/initialized", nil)
	r.Send(ctx, notif, r.SessionHeader(), "notifications/initialized")
	r.Initialized(notif)
	return rm, nil
}

// The session as the host side drives it.

// BeforeInitialize takes the host's initialize (m) before it is sent: a
// new handshake starts a new session, and is kept for replay.
func (r *Remote) BeforeInitialize(m *wire.Message) { r.sess.beforeInitialize(m) }

// InitializeResult takes the remote's answer to initialize (m): the
// negotiated version.
func (r *Remote) InitializeResult(m *wire.Message) { r.sess.initializeResult(m) }

// Initialized takes the host's notifications/initialized (raw) once the
// remote got it, and opens the GET stream (onInitialized).
func (r *Remote) Initialized(raw []byte) { r.sess.onInitialized(raw) }

// Handshake returns the host's initialize request, nil before one.
func (r *Remote) Handshake() []byte { return r.sess.handshake() }

// Negotiated returns the session's protocol version, "" before one.
func (r *Remote) Negotiated() string { return r.sess.negotiated() }

// SessionHeader returns the headers a request in the session carries.
func (r *Remote) SessionHeader() http.Header { return r.sess.header() }
