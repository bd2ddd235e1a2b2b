package translate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// URL-mode elicitation (SEP-1036) exists in both eras with different
// plumbing. A 2025-11-25 server may fail a request with a
// URLElicitationRequiredError (-32042) naming URL elicitations, each with an
// elicitationId, and later sends notifications/elicitation/complete for it;
// the client retries the failed request by itself. 2026-07-28 has neither
// the error ("-32042 (URL elicitation required, 2025-11-25 only)", schema)
// nor the notification: the server answers with an InputRequiredResult
// holding elicitation/create (mode "url") and, on the retry, "determines
// from the echoed requestState ... whether the out-of-band interaction has
// completed, and either returns the final result or responds with another
// InputRequiredResult" (client/elicitation §URL Mode Elicitation Requests).
//
// So toward a 2026-07-28 peer the error becomes an input round whose
// request state names the elicitations, and the peer's retry becomes the
// legacy client's own retry of the failed request, sent once the
// elicitations are complete (or a bound passes: the legacy server then
// answers -32042 again, which becomes the next round). Toward a legacy peer
// a URL-mode input request gets the elicitationId 2025-11-25 requires.

// CodeURLElicitationRequired is 2025-11-25's URLElicitationRequiredError.
const CodeURLElicitationRequired = -32042

// MethodElicitationComplete is 2025-11-25's completion notification.
const MethodElicitationComplete = "notifications/elicitation/complete"

// urlStatePrefix marks the request states of URL rounds. No token the
// faces mint for a suspended call starts with it ("mcp-bridge:" differs at
// its tenth byte; "mcp-bridge-" is followed by base64url, which has no
// ':'), so a URL retry is never taken for the resumption of a call.
const urlStatePrefix = "mcp-bridge-url:"

// urlKeyPrefix names a URL round's inputRequests keys: url-0, url-1, ...
const urlKeyPrefix = "url-"

// URLElicitation is one elicitation of a URLElicitationRequiredError.
type URLElicitation struct {
	ID     string // its elicitationId
	Params []byte // the elicitation/create params a 2026-07-28 peer takes: without elicitationId
}

// URLElicitations reads the response m as a URLElicitationRequiredError:
// "Any elicitations returned in the error MUST be URL mode elicitations and
// include an elicitationId" (SEP-1036). It reports false for any other
// response, and for an error that breaks that rule (it then travels as the
// error it is).
func URLElicitations(m *wire.Message) ([]URLElicitation, bool) {
	if !m.Error.Present() || m.ErrorCode != CodeURLElicitationRequired {
		return nil, false
	}
	data, ok := wire.Field(m.Raw, m.Error, "data")
	if !ok {
		return nil, false
	}
	var d struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if json.Unmarshal(m.Bytes(data), &d) != nil || len(d.Elicitations) == 0 || len(d.Elicitations) > maxURLElicitations {
		return nil, false
	}
	out := make([]URLElicitation, 0, len(d.Elicitations))
	for _, raw := range d.Elicitations {
		var e struct {
			Mode          string `json:"mode"`
			URL           string `json:"url"`
			ElicitationID string `json:"elicitationId"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Mode != "url" || e.URL == "" || e.ElicitationID == "" {
			return nil, false
		}
		params := wire.WithoutFields(raw, wire.Span{Start: 0, End: len(raw)}, "elicitationId")
		out = append(out, URLElicitation{ID: e.ElicitationID, Params: append([]byte(nil), params...)})
	}
	return out, true
}

// maxURLElicitations bounds the elicitations one error may name (and so
// the request state that carries their ids).
const maxURLElicitations = 16

// URLRound builds the InputRequiredResult (the result object) that stands
// for a URLElicitationRequiredError toward a 2026-07-28 peer. The request
// state carries the elicitation ids, so the bridge keeps nothing per round:
// the retry repeats the request ("same params plus inputResponses", mrtr)
// and the state says what to wait for. A peer that edits the state can only
// change how long the bridge waits before retrying for it.
func URLRound(els []URLElicitation) []byte {
	inputs := make([]Input, len(els))
	ids := make([]string, len(els))
	for i, e := range els {
		inputs[i] = Input{Key: urlKeyPrefix + strconv.Itoa(i), Method: "elicitation/create", Params: e.Params}
		ids[i] = e.ID
	}
	j, _ := json.Marshal(ids)
	return InputRequired(inputs, urlStatePrefix+base64.RawURLEncoding.EncodeToString(j))
}

// URLAnswer returns the response a 2026-07-28 peer that declared caps gets,
// under id, for fm, a legacy peer's response to its request of method,
// when fm is a URLElicitationRequiredError: a URL input round (URLRound),
// or MissingRequiredClientCapability (-32021) when the peer did not declare
// URL-mode elicitation. It returns nil for any other response, and for a
// method that may not be answered with an input round (AllowsInput): that
// error travels as it is.
func URLAnswer(fm *wire.Message, method string, caps wire.Capabilities, id []byte) []byte {
	if !AllowsInput(method) {
		return nil
	}
	els, ok := URLElicitations(fm)
	if !ok {
		return nil
	}
	if !Covers(caps, "elicitation/create", []byte(`{"mode":"url"}`)) {
		return wire.ErrorResponse(id, wire.CodeMissingCapability,
			"mcp-bridge: the server requires a URL-mode elicitation, and the client did not declare elicitation.url", MissingURLCapability)
	}
	return wire.ResultResponse(id, URLRound(els))
}

// MissingURLCapability is the data of the MissingRequiredClientCapability
// error (-32021) a 2026-07-28 peer gets instead of a URL round when it did
// not declare URL-mode elicitation: the server "MUST NOT" put an input
// request the client's clientCapabilities did not declare (mrtr).
var MissingURLCapability = []byte(`{"requiredCapabilities":{"elicitation":{"url":{}}}}`)

// URLRetry is a 2026-07-28 peer's retry of a URL round.
type URLRetry struct {
	IDs      []string // the elicitations the round named
	Declined bool     // the user declined or cancelled one of them
	// Request is the retried request without inputResponses and
	// requestState: the legacy client's own retry of the failed request.
	Request []byte
}

// ReadURLRetry reads request m as the retry of a URL round; it reports
// false when m is not one.
func ReadURLRetry(m *wire.Message) (URLRetry, bool) {
	var r URLRetry
	s := RetryState(m)
	enc, ok := cutPrefix(s, urlStatePrefix)
	if !ok {
		return r, false
	}
	j, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || json.Unmarshal(j, &r.IDs) != nil || len(r.IDs) > maxURLElicitations {
		r.IDs = nil // a mangled state: retry at once, the server decides
	}
	for k, v := range InputResponses(m) {
		if len(k) <= len(urlKeyPrefix) || k[:len(urlKeyPrefix)] != urlKeyPrefix {
			continue
		}
		var a struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(v, &a) == nil && a.Action != "accept" {
			r.Declined = true
		}
	}
	r.Request = wire.WithoutFields(m.Raw, m.Params, "inputResponses", "requestState")
	return r, true
}

// IsURLRetry reports whether request m retries a URL round.
func IsURLRetry(m *wire.Message) bool {
	_, ok := cutPrefix(RetryState(m), urlStatePrefix)
	return ok
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

// URLDeclined is the error message a 2026-07-28 peer gets when the user
// declined a URL elicitation the legacy server required (the -32042 itself
// must not reach it).
const URLDeclined = "mcp-bridge: the server requires a URL-mode elicitation, which was declined"

// LegacyInputParams returns the params of an input request as a legacy peer
// takes them: a URL-mode elicitation/create gets an elicitationId, which
// 2025-11-25 requires ("URL elicitation requests MUST specify mode: "url"
// and include ... elicitationId", SEP-1036) and 2026-07-28 does not have.
// Other params are returned as they are.
func LegacyInputParams(method string, params []byte) []byte {
	if method != "elicitation/create" || len(params) == 0 || params[0] != '{' {
		return params
	}
	var p struct {
		Mode          string          `json:"mode"`
		ElicitationID json.RawMessage `json:"elicitationId"`
	}
	if json.Unmarshal(params, &p) != nil || p.Mode != "url" || p.ElicitationID != nil {
		return params
	}
	id := wire.AppendString([]byte(`"elicitationId":`), NewElicitationID())
	return wire.InsertFields(params, wire.Span{Start: 0, End: len(params)}, id)
}

// CompletedElicitation returns the elicitationId of a
// notifications/elicitation/complete (m), or "".
func CompletedElicitation(m *wire.Message) string {
	if m.Method != MethodElicitationComplete {
		return ""
	}
	id, _ := wire.StringField(m.Raw, m.Params, "elicitationId")
	return id
}

// Record records m when it is a notifications/elicitation/complete, and
// reports whether it was one: 2026-07-28 has no such notification, so the
// face does not pass it on; it ends a Wait.
func (c *Completions) Record(m *wire.Message) bool {
	id := CompletedElicitation(m)
	if id == "" {
		return false
	}
	c.Complete(id)
	return true
}

// URLWait bounds how long the retry of a URL round waits for the legacy
// peer's notifications/elicitation/complete before it goes to the peer
// anyway (which then answers -32042 again, or the result).
const URLWait = time.Minute

// maxCompletions bounds the completed elicitation ids a Completions keeps.
const maxCompletions = 256

// Completions remembers the URL elicitations a legacy server reported
// complete, so that the retry of a URL round goes to the server once the
// out-of-band interaction is over. Each face keeps one per legacy
// connection; the zero value is ready.
type Completions struct {
	mu    sync.Mutex
	done  map[string]bool
	order []string      // oldest first, for the bound
	wake  chan struct{} // closed (and replaced) on every completion
}

// Complete records that elicitation id is complete.
func (c *Completions) Complete(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = map[string]bool{}
	}
	if !c.done[id] {
		if len(c.order) >= maxCompletions {
			delete(c.done, c.order[0])
			c.order = c.order[1:]
		}
		c.done[id] = true
		c.order = append(c.order, id)
	}
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// Wait returns once every one of ids is complete, ctx ends, or max passes;
// it reports whether all were complete. A server that never says (the
// notification is a SHOULD) costs the wait; it then answers the retry
// itself.
func (c *Completions) Wait(ctx context.Context, ids []string, max time.Duration) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		c.mu.Lock()
		all := true
		for _, id := range ids {
			if !c.done[id] {
				all = false
				break
			}
		}
		if all {
			c.mu.Unlock()
			return true
		}
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
	}
}
