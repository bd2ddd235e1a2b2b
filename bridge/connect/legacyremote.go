package connect

import (
	"context"
	"errors"
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
	b *Bridge

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
	s.b.client.SetSessionID("")
}

func (s *legacySession) initializeResult(m *wire.Message) {
	if v, ok := wire.StringField(m.Raw, m.Result, "protocolVersion"); ok {
		s.mu.Lock()
		s.version = v
		s.mu.Unlock()
		s.b.log.Info().Str("protocol", v).Bool("session", s.b.client.SessionID() != "").Msg("remote session initialized")
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
	b := s.b
	ready := make(chan struct{})
	s.mu.Lock()
	if s.getCancel != nil || b.streamCtx.Err() != nil {
		s.mu.Unlock()
		close(ready)
		return ready
	}
	ctx, cancel := context.WithCancel(b.streamCtx)
	done := make(chan struct{})
	s.getCancel, s.getDone = cancel, done
	s.mu.Unlock()
	hdr := s.header()
	if !b.streams.Go(func() { s.runGet(ctx, hdr, ready, done) }) {
		// Run has joined the streams: none starts now.
		cancel()
		close(done)
		close(ready)
	}
	return ready
}

// runGet is the standalone GET stream's goroutine: ready is closed after
// the first connection attempt, done when the stream has ended.
func (s *legacySession) runGet(ctx context.Context, hdr http.Header, ready, done chan struct{}) {
	b := s.b
	defer close(done)
	sid := b.client.SessionID()
	err := b.client.ListenReady(ctx, hdr, b.unsolicited, func(error) { close(ready) })
	select {
	case <-ready:
	default:
		close(ready) // ended before the first attempt (ctx)
	}
	var se *httpclient.StatusError
	switch {
	case errors.Is(err, httpclient.ErrNoStream):
		b.log.Debug().Msg("remote offers no GET stream (405)")
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound && ctx.Err() == nil && b.sseStreamLost(sid):
		// HTTP+SSE: the stream was the session (transport.go).
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound:
		b.log.Info().Msg("GET stream: session gone (404); the next request re-initializes")
	case err != nil && ctx.Err() == nil:
		b.log.Warn().Err(err).Msg("GET stream ended")
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
	b := s.b
	if b.client.SessionID() != staleSID {
		return nil // someone else already did it
	}
	s.mu.Lock()
	initMsg, initialized := s.initMsg, s.initialized
	s.mu.Unlock()
	if initMsg == nil {
		return errors.New("no initialize to replay")
	}
	s.stopGet()
	b.client.SetSessionID("")
	b.log.Info().Msg("remote session expired (404): re-initializing with the host's handshake")

	var m wire.Message
	if err := wire.Parse(initMsg, &m); err != nil {
		return err
	}
	id := b.mintID("reinit")
	body := wire.Splice(initMsg, wire.Edit{Span: m.ID, Value: id})
	resp, err := b.client.Post(ctx, body, nil)
	if err != nil {
		return err
	}
	defer resp.Close()
	r, err := awaitResponse(resp, id, nil)
	if err != nil {
		return errors.New("no initialize result")
	}
	if r.Error.Present() {
		return errors.New("initialize failed: " + string(r.Bytes(r.Error)))
	}
	s.initializeResult(r)
	if initialized == nil {
		initialized = wire.Notification("notifications/initialized", nil)
	}
	nresp, err := b.client.Post(ctx, initialized, s.header())
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
	if s.b.client.SessionID() == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.b.client.Terminate(ctx, s.header()); err != nil {
		s.b.log.Debug().Err(err).Msg("DELETE of the remote session")
	}
}
