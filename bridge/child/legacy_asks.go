package child

import (
	"strconv"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// maxAsks bounds the server-to-client requests of the shared legacy child
// that wait for a client's answer.
const maxAsks = 1024

// legacyAsks gives every server-to-client request of the shared legacy
// child a bridge-minted id before a session sees it, and takes a client's
// response back only from the session the request was delivered to. With
// the child's own ids on the wire, any session could answer another's
// sampling, elicitation or roots request: the ids are guessable and the
// child cannot tell who answered.
type legacyAsks struct {
	mu   sync.Mutex
	next int64
	byID map[string]legacyAsk // minted id (JSON text) -> the request
}

type legacyAsk struct {
	s       Session
	childID []byte // the child's id, verbatim
}

// mint records a request of the child delivered to s and returns the id
// s sees it under; ok is false when too many requests are unanswered.
func (a *legacyAsks) mint(s Session, m *wire.Message) (id []byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.byID) >= maxAsks {
		return nil, false
	}
	if a.byID == nil {
		a.byID = map[string]legacyAsk{}
	}
	a.next++
	id = wire.AppendString(nil, translate.InternalIDPrefix+strconv.FormatInt(a.next, 10))
	a.byID[string(id)] = legacyAsk{s: s, childID: clone(m.IDBytes())}
	return id, true
}

// answer maps a response of s back to the child's id; ok is false when it
// answers no request delivered to s.
func (a *legacyAsks) answer(s Session, m *wire.Message) (msg []byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ask, found := a.byID[string(m.IDBytes())]
	if !found || ask.s != s {
		return nil, false
	}
	delete(a.byID, string(m.IDBytes()))
	return wire.Splice(m.Raw, wire.Edit{Span: m.ID, Value: ask.childID}), true
}

// drop forgets an ended session's requests and returns the child's ids,
// which the caller answers with an error so that the child stops waiting.
func (a *legacyAsks) drop(s Session) [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids [][]byte
	for k, ask := range a.byID {
		if ask.s == s {
			ids = append(ids, ask.childID)
			delete(a.byID, k)
		}
	}
	return ids
}
