package legacysession

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A 2026-07-28 server asks for sampling, elicitation or roots inside a
// result (mrtr §InputRequiredResult); a legacy peer only knows them as
// server-to-client requests. The session mints one real request per
// inputRequests key, the face sends them to the legacy side and hands back
// the answers (which never reach the modern peer), and the round gives the
// retry's params fields: the input responses and the request state, echoed
// byte for byte ("the client MUST echo back the exact value of that
// field"). The retry is the original request with a new id (mrtr §Client
// Requirements: "The JSON-RPC id MUST be different").

// Errors of an input round the call fails with.
var (
	ErrTooManyRounds = errors.New("legacysession: too many input rounds")
	ErrTooManyInputs = errors.New("legacysession: the server asked for too many inputs at once")
	ErrAnswersTooBig = errors.New("legacysession: the answers to the input requests are too large")
	ErrNoInput       = errors.New("legacysession: the server needs input the client did not give")
)

// Round is one InputRequiredResult being answered by the legacy side.
type Round struct {
	// Data is the face's: what it needs to retry the call.
	Data any
	// N counts the rounds of the call before this one.
	N int

	owner   string
	state   []byte            // the request state, verbatim (raw JSON string), or nil
	keys    map[string]string // minted request id -> inputRequests key, while unanswered
	methods []string          // the methods asked, for the error of a round nobody answered
	answers map[string][]byte // key -> result
	bytes   int               // size of answers
	err     error
	done    chan struct{} // closed when the round is complete or dropped
}

// Done is closed once every request of the round was answered, or the
// round was dropped.
func (r *Round) Done() <-chan struct{} { return r.done }

// Err is why the round failed (after Done): the call fails with it.
func (r *Round) Err() error { return r.err }

// Fields returns the params fields of the retry: the input responses
// (when the server asked for input) and the request state.
func (r *Round) Fields() []byte { return translate.RetryFields(r.answers, r.state) }

// finish closes done once; s.mu held (or r unreachable).
func (r *Round) finish() {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
}

// Begin starts the input round of resp (an InputRequiredResult) for the
// call the face knows as owner (data is the face's, Round.Data), its n-th
// round: it returns the round and
// the requests to send to the legacy side, under ids the session minted.
// A request the legacy side did not declare the capability for is not
// sent (the server "MUST NOT send an inputRequests that the client has not
// declared support for"); its method is in undeclared. A round without
// requests (only a request state) is done at once. An error fails the call.
func (s *Session) Begin(owner string, data any, resp *wire.Message, n int) (r *Round, requests [][]byte, undeclared []string, err error) {
	if n >= MaxInputRounds {
		return nil, nil, nil, fmt.Errorf("%w: the server asked for input %d times in a row; giving up", ErrTooManyRounds, n+1)
	}
	ir, err := translate.ReadRound(resp)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the server sent an input round the bridge cannot read: %w", err)
	}
	r = &Round{Data: data, N: n, owner: owner, state: clone(ir.State), keys: map[string]string{},
		answers: map[string][]byte{}, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ir.Requests) > MaxRoundInputs || len(s.inputs)+len(ir.Requests) > MaxOpenInputs {
		return nil, nil, nil, ErrTooManyInputs
	}
	var caps wire.Capabilities
	if len(s.caps) > 0 {
		json.Unmarshal(s.caps, &caps)
	}
	for _, k := range slices.Sorted(maps.Keys(ir.Requests)) {
		q := ir.Requests[k]
		r.methods = append(r.methods, q.Method)
		if !translate.Covers(caps, q.Method, q.Params) {
			undeclared = append(undeclared, q.Method)
			continue
		}
		s.next++
		id := strconv.AppendQuote(nil, translate.InternalIDPrefix+"input-"+strconv.Itoa(s.next))
		r.keys[string(id)] = k
		var params []byte
		if len(q.Params) > 0 && string(q.Params) != "null" {
			params = q.Params
		}
		requests = append(requests, wire.Request(id, q.Method, translate.LegacyInputParams(q.Method, params)))
	}
	if len(ir.Requests) > 0 && len(requests) == 0 {
		// A retry without any of the input would only be asked again.
		return nil, nil, undeclared, r.noInput()
	}
	if s.inputs == nil {
		s.inputs = map[string]*Round{}
	}
	for id := range r.keys {
		s.inputs[id] = r
	}
	if len(r.keys) == 0 {
		r.finish()
	}
	return r, requests, undeclared, nil
}

// noInput is the error of a round whose input nobody gave.
func (r *Round) noInput() error {
	m := slices.Clone(r.methods)
	slices.Sort(m)
	return fmt.Errorf("%w (%s: capability not declared, or the client answered with an error)", ErrNoInput, strings.Join(slices.Compact(m), ", "))
}

// Answered takes the legacy side's response m to a request the session
// minted. It returns the round it belongs to (nil if it answers none of
// them: the face handles it otherwise) and whether this answer completed
// the round (then Err tells whether the call fails). A request answered
// with an error is left out of the retry: the server sees the key missing
// and "SHOULD respond with a new InputRequiredResult" or fail the call.
func (s *Session) Answered(m *wire.Message) (r *Round, complete bool) {
	id := string(m.IDBytes())
	s.mu.Lock()
	defer s.mu.Unlock()
	r = s.inputs[id]
	if r == nil {
		return nil, false
	}
	delete(s.inputs, id)
	key := r.keys[id]
	delete(r.keys, id)
	if m.Result.Present() {
		res := m.Bytes(m.Result)
		r.answers[key] = clone(res)
		r.bytes += len(res)
		if s.maxAnswerBytes > 0 && r.bytes > s.maxAnswerBytes {
			// The retry carries every answer in one message to the peer.
			r.err = ErrAnswersTooBig
			s.dropLocked(r)
			return r, true
		}
	}
	if len(r.keys) > 0 {
		return r, false
	}
	if len(r.answers) == 0 {
		r.err = r.noInput()
	}
	r.finish()
	return r, true
}

// Drop forgets round r, so that late answers to its requests are dropped,
// and returns the ids of its requests still unanswered (the legacy side
// may stop working on them).
func (s *Session) Drop(r *Round) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropLocked(r)
}

func (s *Session) dropLocked(r *Round) [][]byte {
	var open [][]byte
	for _, id := range slices.Sorted(maps.Keys(r.keys)) {
		if s.inputs[id] == r {
			delete(s.inputs, id)
			open = append(open, []byte(id))
		}
	}
	clear(r.keys)
	r.finish()
	return open
}

// DropOwner forgets the rounds of the call the face knows as owner and
// reports whether there was one.
func (s *Session) DropOwner(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, r := range s.inputs {
		if r.owner == owner {
			s.dropLocked(r)
			found = true
		}
	}
	return found
}

// Asking reports whether an input round waits for the legacy side's
// answers.
func (s *Session) Asking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inputs) > 0
}

// OpenInputs is the number of input requests awaiting answers.
func (s *Session) OpenInputs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inputs)
}

// RetryPause is how long to wait before retrying after round r when it
// asked for no input: the server sheds load or just wants the state back.
// The client "MAY retry the original request immediately"; a growing pause
// keeps a busy server from being hammered.
func RetryPause(r *Round) time.Duration {
	if len(r.methods) > 0 {
		return 0
	}
	return min(time.Duration(r.N+1)*200*time.Millisecond, 2*time.Second)
}

// Retry returns request (the forwarded request, without any round's
// answers) with the fields of round r in its params, under id (nil: the
// request's own, for a face that re-ids what it sends).
func Retry(request []byte, r *Round, id []byte) ([]byte, error) {
	var orig, rm wire.Message
	if err := wire.Parse(request, &orig); err != nil {
		return nil, err
	}
	retry := wire.WithParamsFields(&orig, r.Fields())
	if id == nil {
		return retry, nil
	}
	if err := wire.Parse(retry, &rm); err != nil {
		return nil, err
	}
	return wire.Splice(retry, wire.Edit{Span: rm.ID, Value: id}), nil
}
