package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// This file is one HTTP+SSE stream (legacysse.go): its reader, which hands
// each message to the Post waiting for it or to ListenReady, and the
// POSTs to its endpoint.

// An sseConn is one SSE stream: one session of the transport.
type sseConn struct {
	c           *Client
	id          string // the session id the Client reports for it
	endpoint    string
	stream      *Response
	ctx         context.Context // the stream's: ends with close
	cancel      context.CancelFunc
	done        chan struct{} // closed when the reader ends
	err         error         // why it ended; written before done closes
	unsolicited chan []byte

	mu          sync.Mutex
	waiters     map[string]*sseWaiter // by the request id (compact JSON)
	tokens      map[string]*sseWaiter // by the progress token (compact JSON)
	initialized bool                  // an initialize went out on it
}

func (cn *sseConn) alive() bool {
	select {
	case <-cn.done:
		return false
	default:
		return true
	}
}

func (cn *sseConn) wasInitialized() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.initialized
}

// close ends the stream and waits for its reader.
func (cn *sseConn) close() {
	cn.cancel()
	<-cn.done
}

// lost is the error of a request the stream's end left unanswered.
func (cn *sseConn) lost() error {
	if cn.err == io.EOF {
		return fmt.Errorf("%w: the server closed it", ErrSSEStreamLost)
	}
	return fmt.Errorf("%w: %w", ErrSSEStreamLost, cn.err)
}

// read is the stream's one reader: it hands each message to the Post
// waiting for it, or to ListenReady.
func (cn *sseConn) read() {
	defer close(cn.done)
	for {
		msg, err := cn.stream.Next()
		if err != nil {
			cn.err = err
			cn.stream.Close()
			if cn.ctx.Err() == nil {
				cn.c.Logger.Warn().Err(err).Msg("httpclient: the HTTP+SSE stream ended; requests in flight on it are lost")
			}
			return
		}
		// "Server messages are sent as SSE message events"; an event
		// without a name is a message event too (WHATWG).
		if n := cn.stream.evName; n != "message" && n != "" {
			cn.c.Logger.Debug().Str("event", excerpt([]byte(n), 40)).Msg("httpclient: ignoring an SSE event that is not a message")
			continue
		}
		cn.dispatch(clone(msg))
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func (cn *sseConn) dispatch(msg []byte) {
	id, method, token := peekMessage(msg)
	var (
		w     *sseWaiter
		final bool
	)
	cn.mu.Lock()
	switch {
	case id != "" && method == "":
		if w = cn.waiters[id]; w != nil {
			delete(cn.waiters, id)
			final = true
		}
	case method == "notifications/progress" && token != "":
		w = cn.tokens[token]
	}
	cn.mu.Unlock()
	if w != nil {
		select {
		case w.ch <- sseMsg{msg: msg, final: final}:
		case <-w.closed: // the caller gave up on the POST
		case <-cn.ctx.Done():
		}
		return
	}
	select {
	case cn.unsolicited <- msg:
	default:
		cn.c.Logger.Warn().Int("queued", unsolicitedQueue).Msg("httpclient: dropping a server message: nothing reads the HTTP+SSE stream's unsolicited messages")
	}
}

// post sends body to the endpoint. The answers come on the stream.
func (cn *sseConn) post(ctx context.Context, body []byte, h http.Header) (*Response, error) {
	c := cn.c
	w := cn.register(ctx, body)
	base := http.Header{"Content-Type": {mediaJSON}}
	hresp, err := c.do(ctx, http.MethodPost, func() (*http.Request, error) {
		return c.sseRequest(ctx, http.MethodPost, cn.endpoint, body, base, h)
	}, c.maxRetries())
	if err != nil {
		if w != nil {
			w.release()
		}
		return nil, err
	}
	// "Accepted" (202) is the usual answer; whatever body comes with it
	// carries nothing.
	discard(hresp.Body)
	r := &Response{StatusCode: hresp.StatusCode, Header: hresp.Header, method: http.MethodPost, ctx: ctx, maxEvent: c.maxEventSize()}
	if w == nil {
		r.Kind, r.err = KindAccepted, io.EOF
		return r, nil
	}
	r.Kind, r.cancel, r.feed = KindSSE, w.release, w.next
	return r, nil
}

// register prepares the waiter for the requests in body, before it is
// sent: the answer may come on the stream before the POST's own answer.
func (cn *sseConn) register(ctx context.Context, body []byte) *sseWaiter {
	var elems []json.RawMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &elems) != nil {
			return nil
		}
	} else {
		elems = []json.RawMessage{body}
	}
	w := &sseWaiter{conn: cn, ctx: ctx, ch: make(chan sseMsg, waiterQueue), closed: make(chan struct{})}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	for _, e := range elems {
		id, method, token := peekMessage(e)
		if method == "initialize" {
			cn.initialized = true
		}
		if id == "" || method == "" {
			continue // a notification or a response: nothing comes back
		}
		cn.waiters[id] = w
		w.ids = append(w.ids, id)
		if token != "" {
			cn.tokens[token] = w
			w.toks = append(w.toks, token)
		}
	}
	if len(w.ids) == 0 {
		return nil
	}
	w.left = len(w.ids)
	return w
}

// sseMsg is a message for one Post's Response; final marks the answer to
// one of its requests.
type sseMsg struct {
	msg   []byte
	final bool
}

// An sseWaiter receives the messages for one Post.
type sseWaiter struct {
	conn   *sseConn
	ctx    context.Context
	ch     chan sseMsg
	closed chan struct{}
	once   sync.Once
	ids    []string
	toks   []string
	left   int // answers still to come; read by the Response's reader only
}

// next is the Response's feed: the messages for the Post, then io.EOF
// once every request in it is answered.
func (w *sseWaiter) next() ([]byte, error) {
	if w.left == 0 {
		return nil, io.EOF
	}
	var m sseMsg
	select {
	case m = <-w.ch:
	default:
		select {
		case m = <-w.ch:
		case <-w.conn.done:
			select {
			case m = <-w.ch: // delivered before the end
			default:
				return nil, w.conn.lost()
			}
		case <-w.ctx.Done():
			return nil, w.ctx.Err()
		}
	}
	if m.final {
		w.left--
	}
	return m.msg, nil
}

// release unregisters the waiter: answers that come later go to
// ListenReady (which drops what answers nothing).
func (w *sseWaiter) release() {
	w.once.Do(func() {
		cn := w.conn
		cn.mu.Lock()
		for _, id := range w.ids {
			if cn.waiters[id] == w {
				delete(cn.waiters, id)
			}
		}
		for _, t := range w.toks {
			if cn.tokens[t] == w {
				delete(cn.tokens, t)
			}
		}
		cn.mu.Unlock()
		close(w.closed)
	})
}

// peekMessage returns the id (compact JSON, "" if none or null), method
// and progress token of a JSON-RPC message: a request's
// params._meta.progressToken, a progress notification's
// params.progressToken.
func peekMessage(msg []byte) (id, method, token string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return "", "", ""
	}
	id, method = compactJSON(m.ID), m.Method
	if p := bytes.TrimSpace(m.Params); len(p) > 0 && p[0] == '{' && method != "" {
		var q struct {
			Token json.RawMessage `json:"progressToken"`
			Meta  struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(p, &q) == nil {
			if method == "notifications/progress" {
				token = compactJSON(q.Token)
			} else {
				token = compactJSON(q.Meta.Token)
			}
		}
	}
	return id, method, token
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}
