package legacysession

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

func parse(t testing.TB, s string) *wire.Message {
	t.Helper()
	var m wire.Message
	if err := wire.Parse([]byte(s), &m); err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return &m
}

func obj(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// listens records the filters of the listen streams a session opens and
// which are still open.
type listens struct {
	opened []string
	open   int
}

func (l *listens) OpenListen(filter []byte) func() {
	l.opened = append(l.opened, string(filter))
	l.open++
	return func() { l.open-- }
}

const discover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"instructions":"hi","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}}`

func newSession(t *testing.T, l Listener, caps string) *Session {
	t.Helper()
	s := New(l, 1000)
	s.Handshake(parse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"clientInfo":{"name":"c","version":"2"}}}`))
	s.Discovered(translate.Modern, []byte(discover))
	return s
}

// initialize is answered from the DiscoverResult in the legacy side's
// version; ping and logging/setLevel are answered by the session, the level
// then travels in every request's envelope, which wins over one the
// legacy side sent.
func TestSessionHandshakeAndRemovedMethods(t *testing.T) {
	s := newSession(t, nil, `{"elicitation":{}}`)
	init := obj(t, s.InitializeResult())
	if init["protocolVersion"] != "2025-06-18" || init["instructions"] != "hi" || init["serverInfo"].(map[string]any)["name"] != "m" {
		t.Errorf("initialize result %v", init)
	}
	if s.Version() != "2025-06-18" || !s.Known() {
		t.Errorf("version %q known %v", s.Version(), s.Known())
	}
	for req, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                               `{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{}}`:                       `"code":-32602`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{}}`:                    `"code":-32602`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`:        `{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"file:///x"}}`: `{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		resp, ok := s.Answer([]byte("1"), parse(t, req))
		if !ok || !strings.Contains(string(resp), want) {
			t.Errorf("%s: %s (%v), want %s", req, resp, ok, want)
		}
	}
	if _, ok := s.Answer([]byte("1"), parse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); ok {
		t.Error("tools/list answered by the session")
	}
	out, err := s.Forward(parse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","progressToken":3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	meta := obj(t, out)["params"].(map[string]any)["_meta"].(map[string]any)
	if meta[wire.MetaProtocolVersion] != translate.Modern || meta[wire.MetaLogLevel] != "debug" || meta["progressToken"] != 3.0 ||
		meta[wire.MetaClientInfo].(map[string]any)["name"] != "c" || meta[wire.MetaClientCapabilities].(map[string]any)["elicitation"] == nil {
		t.Errorf("forwarded _meta %v", meta)
	}
	if strings.Count(string(out), wire.MetaProtocolVersion) != 1 {
		t.Errorf("two versions in %s", out)
	}
	if !s.Notify("notifications/roots/list_changed") || s.Notify("notifications/progress") {
		t.Error("notifications the session plays")
	}
}

// The listen stream opens once the legacy side is initialized, follows the
// subscribed set (only a change reopens it), and ends with the session.
func TestSessionListenFollowsSubscriptions(t *testing.T) {
	l := &listens{}
	s := newSession(t, l, `{}`)
	sub := func(method, uri string) {
		t.Helper()
		if resp, _ := s.Answer([]byte("1"), parse(t, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"uri":"`+uri+`"}}`)); !strings.Contains(string(resp), `"result"`) {
			t.Fatalf("%s: %s", method, resp)
		}
	}
	sub("resources/subscribe", "file:///b")
	if len(l.opened) != 0 {
		t.Fatalf("listen opened before notifications/initialized: %v", l.opened)
	}
	s.Notify("notifications/initialized")
	sub("resources/subscribe", "file:///a")
	sub("resources/subscribe", "file:///a") // no change: no new stream
	sub("resources/unsubscribe", "file:///b")
	want := []string{
		`{"toolsListChanged":true,"resourceSubscriptions":["file:///b"]}`,
		`{"toolsListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}`,
		`{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}`,
	}
	if fmt.Sprint(l.opened) != fmt.Sprint(want) || l.open != 1 {
		t.Errorf("listen streams %v (%d open), want %v (1 open)", l.opened, l.open, want)
	}
	p := obj(t, s.ListenParams([]byte(want[2])))
	if p["_meta"].(map[string]any)[wire.MetaProtocolVersion] != translate.Modern || p["notifications"] == nil {
		t.Errorf("listen params %v", p)
	}
	s.Close()
	if l.open != 0 {
		t.Error("listen stream open after Close")
	}
	// A peer that advertises nothing gets no stream.
	quiet := New(l, 0)
	quiet.Discovered(translate.Modern, []byte(`{"capabilities":{}}`))
	quiet.Notify("notifications/initialized")
	if len(l.opened) != 3 {
		t.Errorf("a stream opened for nothing: %v", l.opened)
	}
}

func TestSessionSubscriptionsBounded(t *testing.T) {
	s := newSession(t, nil, `{}`)
	for i := range MaxSubscriptions {
		if resp, _ := s.Answer([]byte("1"), parse(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"u%d"}}`, i))); strings.Contains(string(resp), "error") {
			t.Fatalf("subscription %d refused: %s", i, resp)
		}
	}
	resp, _ := s.Answer([]byte("1"), parse(t, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"one more"}}`))
	if !strings.Contains(string(resp), "too many resource subscriptions") {
		t.Errorf("subscription past the bound: %s", resp)
	}
}

func TestListenNotification(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}`:                                               ``,
		`{"jsonrpc":"2.0","id":4,"result":{}}`:                                                                                            ``,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}}}`: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`:                                                                   `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	} {
		if got := string(ListenNotification(parse(t, in))); got != want {
			t.Errorf("%s: %s, want %q", in, got, want)
		}
	}
}

const round = `{"jsonrpc":"2.0","id":9,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"?"}},"b":{"method":"sampling/createMessage","params":{"messages":[]}}},"requestState":"s\u00e9"}}`

// A round asks the legacy side what it declared under minted ids, takes
// the answers (an error left out), and gives the retry the answers and
// the request state byte for byte, under a new id.
func TestSessionRound(t *testing.T) {
	s := newSession(t, nil, `{"elicitation":{}}`)
	r, reqs, undeclared, err := s.Begin("7", "data", parse(t, round), 0)
	if err != nil || len(reqs) != 1 || fmt.Sprint(undeclared) != "[sampling/createMessage]" || r.Data != "data" {
		t.Fatalf("Begin: %v %s %v %v", err, reqs, undeclared, r)
	}
	q := parse(t, string(reqs[0]))
	if q.Method != "elicitation/create" || !strings.HasPrefix(string(q.IDBytes()), `"`+translate.InternalIDPrefix+"input-") || !s.Asking() {
		t.Errorf("request %s", reqs[0])
	}
	if r2, _ := s.Answered(parse(t, `{"jsonrpc":"2.0","id":"other","result":{}}`)); r2 != nil {
		t.Error("an answer to no request of the session was taken")
	}
	got, complete := s.Answered(parse(t, `{"jsonrpc":"2.0","id":`+string(q.IDBytes())+`,"result":{"action":"accept"}}`))
	if got != r || !complete || r.Err() != nil || s.Asking() {
		t.Fatalf("Answered: %v %v %v", got, complete, r.Err())
	}
	<-r.Done()
	retry, err := Retry([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`), r, []byte(`"r1"`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(retry), `"requestState":"s\u00e9"`) || !strings.Contains(string(retry), `"inputResponses":{"a":{"action":"accept"}}`) || !strings.HasPrefix(string(retry), `{"jsonrpc":"2.0","id":"r1"`) {
		t.Errorf("retry %s", retry)
	}

	// Nothing declared: the call fails at once, naming what was missing.
	none := newSession(t, nil, `{}`)
	if _, reqs, _, err := none.Begin("7", nil, parse(t, round), 0); !errors.Is(err, ErrNoInput) || len(reqs) != 0 || !strings.Contains(err.Error(), "elicitation/create, sampling/createMessage: capability not declared") {
		t.Errorf("undeclared round: %v %s", err, reqs)
	}
	// Every answer an error: the same.
	r, reqs, _, _ = s.Begin("7", nil, parse(t, round), 1)
	if _, complete := s.Answered(parse(t, `{"jsonrpc":"2.0","id":`+string(parse(t, string(reqs[0])).IDBytes())+`,"error":{"code":-1,"message":"no"}}`)); !complete || !errors.Is(r.Err(), ErrNoInput) {
		t.Errorf("refused round: %v", r.Err())
	}
	// A state-only round is done at once and pauses before the retry.
	r, reqs, _, err = s.Begin("7", nil, parse(t, `{"jsonrpc":"2.0","id":9,"result":{"resultType":"input_required","requestState":"x"}}`), 2)
	select {
	case <-r.Done():
	default:
		t.Error("state-only round not done")
	}
	if err != nil || len(reqs) != 0 || RetryPause(r) != 600*time.Millisecond {
		t.Errorf("state-only round: %v %s pause %v", err, reqs, RetryPause(r))
	}
	if _, _, _, err := s.Begin("7", nil, parse(t, round), MaxInputRounds); !errors.Is(err, ErrTooManyRounds) {
		t.Errorf("round past the bound: %v", err)
	}
}

// Rounds are bounded in inputs and in the bytes of their answers, and a
// dropped round's late answers are not taken.
func TestSessionRoundBounds(t *testing.T) {
	s := newSession(t, nil, `{"roots":{}}`)
	many := make([]string, MaxRoundInputs+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d":{"method":"roots/list"}`, i)
	}
	if _, _, _, err := s.Begin("1", nil, parse(t, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{`+strings.Join(many, ",")+`}}}`), 0); !errors.Is(err, ErrTooManyInputs) || s.Asking() {
		t.Errorf("too many inputs: %v", err)
	}
	two := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"},"b":{"method":"roots/list"}}}}`
	r, reqs, _, _ := s.Begin("1", nil, parse(t, two), 0)
	big := `{"roots":[{"uri":"` + strings.Repeat("x", 1000) + `"}]}`
	if _, complete := s.Answered(parse(t, `{"jsonrpc":"2.0","id":`+string(parse(t, string(reqs[0])).IDBytes())+`,"result":`+big+`}`)); !complete || !errors.Is(r.Err(), ErrAnswersTooBig) || s.Asking() {
		t.Errorf("answers past the bound: %v, asking %v", r.Err(), s.Asking())
	}
	r, reqs, _, _ = s.Begin("2", nil, parse(t, two), 0)
	if open := s.Drop(r); len(open) != 2 || s.Asking() {
		t.Errorf("Drop: %s", open)
	}
	if got, _ := s.Answered(parse(t, `{"jsonrpc":"2.0","id":`+string(parse(t, string(reqs[0])).IDBytes())+`,"result":{}}`)); got != nil {
		t.Error("a dropped round took an answer")
	}
	s.Begin("3", nil, parse(t, two), 0)
	if !s.DropOwner("3") || s.DropOwner("3") || s.Asking() {
		t.Error("DropOwner")
	}
}

// Close is final: a subscription or a notifications/initialized the
// legacy side sent just before its session ended, handled after Close,
// opens no listen stream that nothing would ever stop.
func TestSessionNoListenAfterClose(t *testing.T) {
	l := &listens{}
	s := newSession(t, l, `{}`)
	s.Notify("notifications/initialized")
	s.Close()
	s.Answer([]byte("1"), parse(t, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///late"}}`))
	s.Notify("notifications/initialized")
	if l.open != 0 {
		t.Errorf("%d listen streams open after Close (opened %v)", l.open, l.opened)
	}
}
