package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A 2026-07-28 server asks for sampling, elicitation or roots inside a
// result, an InputRequiredResult (basic/patterns/mrtr); the client answers
// by retrying the request under a new id with the answers and the request
// state echoed. A 2025 peer asks with server-to-client requests and takes
// JSON-RPC responses. Both directions of the bridge translate one into the
// other; this file holds the round's format and bookkeeping.

// resultTypeInput is the resultType of an InputRequiredResult.
const resultTypeInput = "input_required"

// AllowsInput reports whether a request of method may be answered with an
// input round: "Servers MUST NOT send InputRequiredResult responses on any
// other client requests" (mrtr §Supported Requests).
func AllowsInput(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// Input is one server-to-client request carried in an input round.
type Input struct {
	Key    string // its key in inputRequests and inputResponses
	Method string
	Params []byte // nil when absent
}

// InputRequired builds an InputRequiredResult (the result object) asking
// for inputs, with state as its request state.
func InputRequired(inputs []Input, state string) []byte {
	b := wire.AppendString([]byte(`{"resultType":`), resultTypeInput)
	b = append(b, `,"inputRequests":{`...)
	for i, in := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendString(b, in.Key)
		b = wire.AppendString(append(b, `:{"method":`...), in.Method)
		// Always a params object: clients decode it even for roots/list,
		// which has none (the Go SDK fails on a missing one).
		params := in.Params
		if params == nil {
			params = []byte("{}")
		}
		b = append(append(append(b, `,"params":`...), params...), '}')
	}
	b = wire.AppendString(append(b, `},"requestState":`...), state)
	return append(b, '}')
}

// NewState mints a request state: an unguessable token after StatePrefix,
// which only maps to one suspended call and never leaves the bridge and
// the peer that retries.
func NewState() string { return StatePrefix + randomToken() }

// NewElicitationID mints the elicitationId 2025-11-25 requires of a
// URL-mode elicitation that arrived without one: unguessable, since the
// completion notification names it, and marked as the bridge's own.
func NewElicitationID() string { return InternalIDPrefix + randomToken() }

func randomToken() string {
	var raw [18]byte
	rand.Read(raw[:])
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// IsRetry reports whether request m carries a request state, as the retry
// of an input round does.
func IsRetry(m *wire.Message) bool {
	_, ok := wire.Field(m.Raw, m.Params, "requestState")
	return ok
}

// RetryState returns the request state a retry echoes ("" if none, or not
// a string).
func RetryState(m *wire.Message) string {
	s, _ := wire.StringField(m.Raw, m.Params, "requestState")
	return s
}

// InputResponses returns a retry's answers by key (nil if it has none).
func InputResponses(m *wire.Message) map[string]json.RawMessage {
	var responses map[string]json.RawMessage
	if sp, ok := wire.Field(m.Raw, m.Params, "inputResponses"); ok {
		json.Unmarshal(m.Bytes(sp), &responses)
	}
	return responses
}

// ExpiredState is the error message for a retry whose request state the
// bridge does not know (expired, answered, or never minted here).
const ExpiredState = "mcp-bridge: requestState is unknown or expired; call again without inputResponses and requestState"

// IsInputRequired reports whether response m is an InputRequiredResult.
func IsInputRequired(m *wire.Message) bool {
	return m.Result.Present() && m.ResultType() == resultTypeInput
}

// InputRequest is one entry of inputRequests.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Round is an InputRequiredResult read from a modern peer.
type Round struct {
	Requests map[string]InputRequest // nil when it asks for none
	// State is the request state as sent, to be echoed byte for byte
	// ("the client MUST echo back the exact value of that field"); nil
	// when absent.
	State []byte
}

// ErrEmptyRound is an InputRequiredResult with neither member: "at least
// one of the two MUST be present".
var ErrEmptyRound = errors.New("translate: the input round has neither inputRequests nor requestState")

// ReadRound reads the InputRequiredResult response m.
func ReadRound(m *wire.Message) (Round, error) {
	var r Round
	irSpan, hasIR := wire.Field(m.Raw, m.Result, "inputRequests")
	rsSpan, hasRS := wire.Field(m.Raw, m.Result, "requestState")
	if !hasIR && !hasRS {
		return r, ErrEmptyRound
	}
	if hasIR {
		if err := json.Unmarshal(m.Bytes(irSpan), &r.Requests); err != nil {
			return r, errors.New("translate: malformed inputRequests: " + err.Error())
		}
		for k, q := range r.Requests {
			if err := checkInputRequest(q); err != nil {
				return Round{}, fmt.Errorf("translate: inputRequests[%q]: %w", k, err)
			}
		}
	}
	if hasRS {
		// Echoed as is, so checked here: the envelope reader only walks
		// the keys it routes on (FuzzReadRound found {"requestState":{[]}}).
		if !wire.Valid(m.Bytes(rsSpan)) {
			return r, errors.New("translate: malformed requestState")
		}
		r.State = m.Bytes(rsSpan)
	}
	return r, nil
}

// ErrBadInputRequest is an inputRequests value the bridge will not put to
// the other side: not one of the three request kinds the spec allows, or
// params that are not an object.
var ErrBadInputRequest = errors.New("translate: not an input request")

// checkInputRequest holds a value of inputRequests to what mrtr
// §Server requirements allows: "inputRequests values are request objects
// that MUST be one of ElicitRequest, CreateMessageRequest, or
// ListRootsRequest". Each becomes a real request to a 2025 client, so
// anything else (another method, or params that are an array, a string or
// a number, which no MCP request has) would be the bridge sending what
// the server was not allowed to ask for.
func checkInputRequest(q InputRequest) error {
	switch q.Method {
	case "elicitation/create", "sampling/createMessage", "roots/list":
	default:
		return fmt.Errorf("%w: method %q", ErrBadInputRequest, q.Method)
	}
	p := bytes.TrimLeft(q.Params, " \t\r\n")
	if len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return fmt.Errorf("%w: %s params are not an object", ErrBadInputRequest, q.Method)
	}
	return nil
}

// RetryFields builds the params members a retry adds to the original
// request: inputResponses with answers by key (when there are any) and
// state, the request state as the server sent it, echoed byte for byte
// (when not nil).
func RetryFields(answers map[string][]byte, state []byte) []byte {
	var f []byte
	if len(answers) > 0 {
		f = append(f, `"inputResponses":{`...)
		for i, k := range slices.Sorted(maps.Keys(answers)) {
			if i > 0 {
				f = append(f, ',')
			}
			f = append(append(wire.AppendString(f, k), ':'), answers[k]...)
		}
		f = append(f, '}')
	}
	if state != nil {
		if len(f) > 0 {
			f = append(f, ',')
		}
		f = append(append(f, `"requestState":`...), state...)
	}
	return f
}

// RetargetProgress returns the notifications/progress msg (parsed as m)
// under token: a 2025 peer goes on reporting under the token of the request
// it got, while the 2026-07-28 peer's retry carries a token of its own and
// the first round's is forgotten ("Progress notifications MUST only
// reference tokens that were provided in an active request",
// basic/patterns/progress).
func RetargetProgress(msg []byte, m *wire.Message, token []byte) []byte {
	if !m.ProgressToken.Present() || string(m.Bytes(m.ProgressToken)) == string(token) {
		return msg
	}
	return wire.Splice(msg, wire.Edit{Span: m.ProgressToken, Value: token})
}
