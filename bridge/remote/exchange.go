package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/httpclient"
	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

// idempotent methods may be re-sent after a legacy session was re-created;
// anything else (tools/call above all) may have had effects and is not.
var idempotent = map[string]bool{
	"ping": true, "tools/list": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"completion/complete": true, "server/discover": true,
}

// maxResumes bounds reconnects of one broken response stream.
const maxResumes = 5

// A Call is one host request as the remote side sends it (connect's
// pending): the id and era the remote knows it by, the host's
// cancellation, and where the messages of its response stream go. Its
// methods are called on the goroutine that runs Forward.
type Call interface {
	// Wire returns the id and era the request goes to the remote in.
	Wire() (id []byte, modern bool)
	// Cancelled reports whether the host cancelled the request.
	Cancelled() bool
	// Emit takes one message of the request's response stream (JSON, a
	// batch split: deliver) and reports whether it carried the request's
	// final response.
	Emit(msg []byte) (final bool)
	// HeaderRetry is the request's flag that a HeaderMismatch was
	// already retried once.
	HeaderRetry() *bool
}

// sessionError is a request lost to an expired legacy session.
type sessionError struct {
	msg string
	se  *httpclient.StatusError
	err error
}

func (e *sessionError) Error() string { return e.msg }
func (e *sessionError) Unwrap() []error {
	if e.err != nil {
		return []error{e.se, e.err}
	}
	return []error{e.se}
}

// Forward sends m (c's request as the remote sees it) and relays the
// answer. It returns nil once c got its final response or was cancelled,
// and otherwise the error that kept the answer from coming; the caller
// reports it (connect's answerError).
func (r *Remote) Forward(ctx context.Context, c Call, m *wire.Message) error {
	retried := false
	for {
		sid := r.client.SessionID()
		got, err := r.exchange(ctx, c, m)
		if got {
			return nil
		}
		var se *httpclient.StatusError
		if _, modern := c.Wire(); errors.As(err, &se) && se.StatusCode == http.StatusNotFound && sid != "" && !modern && m.Method != "initialize" {
			// 2025-11-25 transports §Session management: a 404 for a request
			// carrying a session id means the session is gone, and the client
			// "MUST start a new session". The host cannot be asked to, so the
			// bridge replays the host's own handshake.
			if rerr := r.sess.reinitialize(ctx, sid); rerr != nil {
				return &sessionError{msg: "the remote session expired and could not be re-established: " + rerr.Error(), se: se, err: rerr}
			}
			if idempotent[m.Method] && !retried {
				retried = true
				continue
			}
			return &sessionError{msg: "the remote session expired; mcp-bridge started a new one, but did not resend this " + m.Method + " because it may not be idempotent — retry it if that is safe", se: se}
		}
		if err == nil {
			err = errors.New("the remote closed the response stream before answering")
		}
		return err
	}
}

// exchange POSTs m and relays the answer. got reports whether the final
// response reached the host.
func (r *Remote) exchange(ctx context.Context, c Call, m *wire.Message) (got bool, err error) {
	hdr := r.HeadersFor(m)
	resp, err := r.client.Post(ctx, m.Raw, hdr)
	if err != nil {
		var se *httpclient.StatusError
		wid, modern := c.Wire()
		if retried := c.HeaderRetry(); errors.As(err, &se) && modern && !*retried && se.StatusCode == http.StatusBadRequest && m.Method == "tools/call" {
			if body := ForwardableError(se, wid); body != nil && strings.Contains(string(body), "-32020") && r.tools.refresh(ctx, r, m) {
				*retried = true
				// streamable-http §Custom headers: on HeaderMismatch the
				// client "SHOULD call tools/list to check for changes to
				// the tool's inputSchema, then retry".
				return r.exchange(ctx, c, m)
			}
		}
		return false, err
	}
	for attempt := 0; ; attempt++ {
		got, err = r.consume(c, resp, m)
		resp.Close()
		if got || c.Cancelled() {
			return true, nil
		}
		last, delay := resp.LastEventID(), resp.RetryDelay()
		// An oversized message is no broken stream: resuming would replay
		// it, and the host would wait out every resumption for an error.
		if last == "" || attempt >= maxResumes || ctx.Err() != nil || errors.Is(err, httpclient.ErrEventTooLarge) {
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			return false, err
		}
		// The stream broke (or the server closed it to have us poll,
		// 2025-11-25 SEP-1699): resume with Last-Event-ID, honouring retry.
		r.log.Debug().Str("last_event_id", last).Int64("delay_ms", delay.Milliseconds()).Msg("resuming response stream")
		resp, err = r.client.Resume(ctx, last, delay, hdr)
		if err != nil {
			return false, err
		}
	}
}

// consume writes the messages of one response to the host.
func (r *Remote) consume(c Call, resp *httpclient.Response, req *wire.Message) (got bool, err error) {
	to := sink(c) // converted once per response, not per message
	for {
		msg, err := resp.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, err
		}
		if r.deliver(msg, to) {
			// The response ends the exchange ("the server SHOULD
			// terminate the SSE stream" after it). Some servers keep the
			// stream open and would go on parking session-wide messages on
			// it; closing it sends them to the GET stream instead.
			return true, nil
		}
	}
}

// AwaitResponse reads resp up to the response to the request with id, the
// bridge's own request, and returns it, valid until resp is read on or
// closed. Every other message goes to other; nil drops them (log lines
// and the like around a handshake).
func AwaitResponse(resp *httpclient.Response, id []byte, other func(msg []byte)) (*wire.Message, error) {
	for {
		msg, err := resp.Next()
		if err != nil {
			return nil, err
		}
		var r wire.Message
		if wire.Parse(msg, &r) == nil && r.Kind == wire.KindResponse && string(r.IDBytes()) == string(id) {
			return &r, nil
		}
		if other != nil {
			other(msg)
		}
	}
}

// RoundTrip sends m, a request of the bridge's own, with the headers it
// needs, and returns the response to it. Anything else on the stream goes
// to other (nil: dropped), one message at a time (deliver).
func (r *Remote) RoundTrip(ctx context.Context, m *wire.Message, other func(msg []byte)) (*wire.Message, error) {
	resp, err := r.client.Post(ctx, m.Raw, r.HeadersFor(m))
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	var each func(msg []byte)
	if other != nil {
		each = func(msg []byte) { r.deliver(msg, sinkFunc(other)) }
	}
	rm, err := AwaitResponse(resp, m.IDBytes(), each)
	if err != nil {
		return nil, fmt.Errorf("no answer to %s: %w", m.Method, err)
	}
	// The spans stay valid on a copy that outlives resp.
	out := *rm
	out.Raw = clone(rm.Raw)
	return &out, nil
}

// Request sends method with params, a request of the bridge's own under
// an id minted for kind (MintID), and returns the response to it
// (RoundTrip, other as there).
func (r *Remote) Request(ctx context.Context, kind, method string, params []byte, other func(msg []byte)) (*wire.Message, error) {
	var m wire.Message
	if err := wire.Parse(wire.Request(r.MintID(kind), method, params), &m); err != nil {
		return nil, err
	}
	return r.RoundTrip(ctx, &m, other)
}

// ForwardableError returns an HTTP error body that is itself the
// JSON-RPC error response to request id.
func ForwardableError(se *httpclient.StatusError, id []byte) []byte {
	var m wire.Message
	if wire.Parse(se.Body, &m) != nil || m.Kind != wire.KindResponse || !m.Error.Present() {
		return nil
	}
	if string(m.IDBytes()) != string(id) {
		return nil
	}
	return se.Body
}

// Describe turns a failure into the error the host sees: what happened,
// the HTTP status and a short body excerpt, and what to do about it. No
// configured secret gets into it (the URL's user info and query, header
// values: a remote may echo them in its error body), and with
// Config.HideRemoteDetail no part of the remote's answer but its status.
func (r *Remote) Describe(err error, se *httpclient.StatusError) (code int, msg string, data []byte) {
	code, msg, data = describeRaw(err, se, r.cfg)
	secrets := outbound.SecretsOf(r.cfg.URL, r.cfg.Header)
	msg = secrets.Scrub(msg)
	if data != nil {
		data = []byte(secrets.Scrub(string(data)))
	}
	return code, msg, data
}

func describeRaw(err error, se *httpclient.StatusError, cfg Config) (code int, msg string, data []byte) {
	if se == nil {
		errors.As(err, &se)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return wire.CodeRequestTimeout, fmt.Sprintf("mcp-bridge: request timed out after %v (--request-timeout)", cfg.RequestTimeout), nil
	case errors.Is(err, context.Canceled):
		return wire.CodeConnectionClosed, "mcp-bridge: request abandoned: the bridge is shutting down", nil
	case errors.Is(err, httpclient.ErrEventTooLarge):
		return wire.CodeInternalError, fmt.Sprintf("mcp-bridge: the remote's answer exceeds the %d-byte limit (raise --max-message-size)", cfg.MaxMessageSize), nil
	case se != nil:
		d := fmt.Appendf(nil, `{"httpStatus":%d`, se.StatusCode)
		if !cfg.HideRemoteDetail {
			d = wire.AppendString(append(d, `,"body":`...), excerpt(se.Body, 500))
			if wa := se.Header.Get("WWW-Authenticate"); wa != "" {
				d = wire.AppendString(append(d, `,"wwwAuthenticate":`...), wa)
			}
		}
		d = append(d, '}')
		m := fmt.Sprintf("mcp-bridge: the remote MCP server answered HTTP %d %s", se.StatusCode, http.StatusText(se.StatusCode))
		switch {
		case cfg.HideRemoteDetail && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden):
			m += ": it refused the credentials configured for it"
		case se.StatusCode == http.StatusUnauthorized:
			// With neither --bearer-token nor -H Authorization, connect logs
			// in by OAuth and a 401 only gets here once that login has
			// given what it could; with one, OAuth is off and the static
			// credential is what the server refused.
			m += ": it refused the credentials (a static --bearer-token or -H 'Authorization: ...' turns connect's own OAuth login off; see docs/auth.md and `mcp-bridge auth status`)"
		case se.StatusCode == http.StatusForbidden:
			m += ": the credentials were refused or lack a scope"
		}
		if se.Hint != "" {
			m += ": " + se.Hint
		}
		if strings.HasPrefix(err.Error(), "the remote session") {
			m = "mcp-bridge: " + err.Error()
		}
		return wire.CodeConnectionClosed, m, d
	}
	d := wire.AppendString([]byte(`{"url":`), outbound.RedactString(cfg.URL))
	d = wire.AppendString(append(d, `,"error":`...), err.Error())
	d = append(d, '}')
	return wire.CodeConnectionClosed, "mcp-bridge: " + err.Error(), d
}

func excerpt(b []byte, n int) string {
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.Join(strings.Fields(s), " ")
}
