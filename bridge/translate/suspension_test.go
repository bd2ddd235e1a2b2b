package translate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// roundFace records what the machine asks of a face. A front request is a
// name.
type roundFace struct {
	mu       sync.Mutex
	answers  map[string]string   // back request id -> result or "error <code> <message>"
	rounds   map[string][]string // front -> the InputRequiredResults it got
	attached []string            // "front resumes|round"
	expired  chan error
	refused  []Refusal
}

func newRoundFace() *roundFace {
	return &roundFace{answers: map[string]string{}, rounds: map[string][]string{}, expired: make(chan error, 1)}
}

func (f *roundFace) AnswerBack(a Ask, result []byte, code int, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if result != nil {
		f.answers[string(a.ID)] = string(result)
	} else {
		f.answers[string(a.ID)] = "error " + string(wire.AppendInt(nil, int64(code))) + " " + message
	}
}

func (f *roundFace) Suspend(front string, result []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rounds[front] = append(f.rounds[front], string(result))
}

func (f *roundFace) Attach(front string, resumes bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	how := " round"
	if resumes {
		how = " resumes"
	}
	f.attached = append(f.attached, front+how)
}

func (f *roundFace) Expire(why error) { f.expired <- why }

func (f *roundFace) Refused(_ Ask, r Refusal, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = append(f.refused, r)
}

// lastRound returns the last round front got, read.
func (f *roundFace) lastRound(t *testing.T, front string) (keys []string, state string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.rounds[front]
	if len(rs) == 0 {
		t.Fatalf("%s got no round", front)
	}
	var r struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal([]byte(rs[len(rs)-1]), &r); err != nil || r.ResultType != "input_required" {
		t.Fatalf("round %s: %v", rs[len(rs)-1], err)
	}
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	return keys, r.RequestState
}

func (f *roundFace) answer(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answers[id]
}

var allCaps = wire.Capabilities{Sampling: json.RawMessage(`{}`), Elicitation: json.RawMessage(`{}`), Roots: json.RawMessage(`{}`)}

func sampling(id string) Ask {
	return Ask{ID: []byte(id), Method: "sampling/createMessage", Params: []byte(`{"maxTokens":1}`)}
}

func startCall(r *Rounds[string], face *roundFace, front string) *Call[string] {
	c := &Call[string]{}
	r.Start(c, face, front, allCaps)
	return c
}

func retry(answers map[string]string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for k, v := range answers {
		m[k] = json.RawMessage(v)
	}
	return m
}

// Two inputs, the second asked while the first round is open: it joins
// the next round, which the retry gets at once; the second retry resumes
// the call, and its final result goes to that retry.
func TestRoundsTwoInputs(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	c.Ask(sampling("10"))
	keys, state := face.lastRound(t, "f0")
	if len(keys) != 1 || keys[0] != "input-1" || !IsBridgeState(state) {
		t.Fatalf("first round: keys %v, state %q", keys, state)
	}
	c.Ask(sampling("11")) // during the round: waits for the next
	if _, suspended := c.Current(); !suspended || len(face.rounds["f0"]) != 1 {
		t.Fatalf("a request during a round opened another")
	}
	got, resumed := r.Retry(state, "f1", retry(map[string]string{"input-1": `{"a":1}`, "input-2": `{"guessed":1}`}), allCaps)
	if got != c || resumed {
		t.Fatalf("retry: call %v, resumed %v", got, resumed)
	}
	if face.answer("10") != `{"a":1}` || face.answer("11") != "" {
		t.Errorf("the back got %v; want only 10 answered (input-2 was not asked yet)", face.answers)
	}
	keys, state2 := face.lastRound(t, "f1")
	if len(keys) != 1 || keys[0] != "input-2" || state2 == state {
		t.Fatalf("second round: keys %v, state %q (first %q)", keys, state2, state)
	}
	if c, _ := r.Retry(state, "fx", nil, allCaps); c != nil {
		t.Errorf("a spent state was taken again")
	}
	if _, resumed := r.Retry(state2, "f2", retry(map[string]string{"input-2": `{"b":2}`}), allCaps); !resumed {
		t.Fatalf("the retry answering everything did not resume the call")
	}
	if face.answer("11") != `{"b":2}` {
		t.Errorf("the back got %v", face.answers)
	}
	f, ok := c.Finish(context.Background())
	if !ok || f != "f2" {
		t.Errorf("final goes to %q (%v), want f2", f, ok)
	}
	if _, _, ok := c.End(); ok {
		t.Errorf("End after the final was claimed")
	}
	if want := []string{"f1 round", "f2 resumes"}; strings.Join(face.attached, ",") != strings.Join(want, ",") {
		t.Errorf("attached %v, want %v", face.attached, want)
	}
}

// mrtr §Error Handling: an input the retry leaves out is asked for again,
// under its key.
func TestRoundsMissingInputAskedAgain(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	c.Ask(sampling("10"))
	_, state := face.lastRound(t, "f0")
	if _, resumed := r.Retry(state, "f1", retry(map[string]string{"input-1": ``}), allCaps); resumed {
		t.Fatal("resumed without the input")
	}
	if keys, _ := face.lastRound(t, "f1"); len(keys) != 1 || keys[0] != "input-1" {
		t.Errorf("asked again as %v, want input-1", keys)
	}
	if face.answer("10") != "" {
		t.Errorf("the back got %v", face.answers)
	}
}

// The front's capabilities decide: an undeclared elicitation is declined,
// anything else undeclared gets Method not found. A retry declares them
// afresh.
func TestRoundsCapabilities(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	face := newRoundFace()
	c := &Call[string]{}
	r.Start(c, face, "f0", wire.Capabilities{Sampling: json.RawMessage(`{}`)})
	c.Ask(Ask{ID: []byte("1"), Method: "elicitation/create", Params: []byte(`{"message":"m"}`)})
	c.Ask(Ask{ID: []byte("2"), Method: "roots/list"})
	if face.answer("1") != `{"action":"decline"}` || !strings.HasPrefix(face.answer("2"), "error -32601 client does not support roots") {
		t.Errorf("the back got %v", face.answers)
	}
	c.Ask(sampling("3"))
	_, state := face.lastRound(t, "f0")
	r.Retry(state, "f1", retry(map[string]string{"input-1": `{}`}), wire.Capabilities{})
	c.Ask(sampling("4"))
	if !strings.HasPrefix(face.answer("4"), "error -32601") {
		t.Errorf("sampling after a retry without it: %q", face.answer("4"))
	}
}

// A call holds at most MaxInputs requests and MaxBytes of their params;
// the rest are refused to the back.
func TestRoundsBounded(t *testing.T) {
	r := Rounds[string]{MaxInputs: 3, MaxBytes: 100}
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	for _, id := range []string{"1", "2", "3", "4"} {
		c.Ask(sampling(id))
	}
	if c.Open() != 3 || !strings.Contains(face.answer("4"), "too many input requests") {
		t.Errorf("%d open, 4th answered %q", c.Open(), face.answer("4"))
	}
	r2 := Rounds[string]{MaxBytes: 20}
	c2 := startCall(&r2, face, "g0")
	defer r2.Close()
	c2.Ask(sampling("5"))
	c2.Ask(sampling("6")) // 2 × 15 bytes of params > 20
	if c2.Open() != 1 || !strings.Contains(face.answer("6"), "too many input requests") {
		t.Errorf("%d open, 6 answered %q", c2.Open(), face.answer("6"))
	}
}

// A round nobody retries within the TTL: the back's requests get errors,
// the call is cancelled at the back, the state is forgotten, and the
// final result goes nowhere.
func TestRoundsExpire(t *testing.T) {
	r := Rounds[string]{TTL: time.Millisecond}
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	c.Ask(sampling("10"))
	_, state := face.lastRound(t, "f0")
	select {
	case why := <-face.expired:
		if !strings.Contains(why.Error(), "did not retry") {
			t.Errorf("expired: %v", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the round never expired")
	}
	if !strings.Contains(face.answer("10"), "did not answer") {
		t.Errorf("the back's request got %q", face.answer("10"))
	}
	if c, _ := r.Retry(state, "f1", nil, allCaps); c != nil {
		t.Errorf("an expired state was taken")
	}
	if _, ok := c.Finish(context.Background()); ok {
		t.Errorf("the final result of a call given up was claimed")
	}
	c.Ask(sampling("11"))
	if !strings.Contains(face.answer("11"), "has ended") {
		t.Errorf("a request after the call was given up got %q", face.answer("11"))
	}
	if suspended, dead, ok := c.End(); !ok || !suspended || dead == nil {
		t.Errorf("End: suspended %v, dead %v, ok %v", suspended, dead, ok)
	}
}

// Finish waits while a round is open; End while suspended answers the
// back's open requests and says so.
func TestRoundsFinishWaitsAndEnd(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	c.Ask(sampling("10"))
	_, state := face.lastRound(t, "f0")
	got := make(chan string, 1)
	go func() {
		f, _ := c.Finish(context.Background())
		got <- f
	}()
	r.Retry(state, "f1", retry(map[string]string{"input-1": `{}`}), allCaps)
	if f := <-got; f != "f1" {
		t.Errorf("final to %q, want f1", f)
	}

	c2 := startCall(&r, face, "g0")
	c2.Ask(sampling("20"))
	_, state2 := face.lastRound(t, "g0")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := c2.Finish(ctx); ok {
		t.Errorf("Finish claimed the front while a round was open")
	}
	suspended, dead, ok := c2.End()
	if !ok || !suspended || dead != nil || !strings.Contains(face.answer("20"), "has ended") {
		t.Errorf("End: suspended %v dead %v ok %v; the back got %q", suspended, dead, ok, face.answer("20"))
	}
	if c, _ := r.Retry(state2, "g1", nil, allCaps); c != nil {
		t.Errorf("the state of an ended call was taken")
	}
}

// The front leaves while a call waits: Abort gives up on it at once.
func TestRoundsAbort(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	face := newRoundFace()
	c := startCall(&r, face, "f0")
	c.Abort(context.Canceled) // not suspended: nothing to give up
	select {
	case <-face.expired:
		t.Fatal("Abort of a call not suspended expired it")
	default:
	}
	c.Ask(sampling("10"))
	c.Abort(context.Canceled)
	<-face.expired
	if !strings.Contains(face.answer("10"), "did not answer") {
		t.Errorf("the back got %q", face.answer("10"))
	}
}

// A retry and a request of the back at the same moment (wave 3: connect's
// copy released its lock between ending a round and opening the next,
// and a request arriving then opened a round on the retry too — answering
// it twice and closing a closed channel). Whichever comes first, the
// retry gets exactly one round, holding the new request.
func TestRoundsRetryRacesAsk(t *testing.T) {
	var r Rounds[string]
	defer r.Close()
	for i := range 200 {
		face := newRoundFace()
		c := startCall(&r, face, "f0")
		c.Ask(sampling("10"))
		_, state := face.lastRound(t, "f0")
		var wg sync.WaitGroup
		wg.Add(3)
		go func() {
			defer wg.Done()
			r.Retry(state, "f1", retry(map[string]string{"input-1": `{}`}), allCaps)
		}()
		go func() {
			defer wg.Done()
			c.Ask(sampling("11"))
		}()
		go func() {
			defer wg.Done()
			c.Current()
			c.Usable()
		}()
		wg.Wait()
		face.mu.Lock()
		n := len(face.rounds["f1"])
		face.mu.Unlock()
		if n != 1 {
			t.Fatalf("iteration %d: the retry got %d rounds, want 1", i, n)
		}
		keys, state2 := face.lastRound(t, "f1")
		if len(keys) != 1 || keys[0] != "input-2" {
			t.Fatalf("iteration %d: the retry's round asks %v, want input-2", i, keys)
		}
		// A second retry racing the final result: the final waits for it.
		got := make(chan string, 1)
		go func() {
			f, _ := c.Finish(context.Background())
			got <- f
		}()
		retried := make(chan struct{})
		go func() {
			defer close(retried)
			r.Retry(state2, "f2", retry(map[string]string{"input-2": `{}`}), allCaps)
		}()
		if f := <-got; f != "f2" {
			t.Fatalf("iteration %d: final to %q, want f2", i, f)
		}
		<-retried
	}
}

// The suspended calls of one table are bounded: a front that never
// retries cannot make the back hold calls without end (each waits the
// TTL). A call that would open a round past the bound has its request
// answered with an error at once; the rounds already open go on.
func TestRoundsSuspendedBounded(t *testing.T) {
	r := Rounds[string]{MaxSuspended: 1}
	defer r.Close()
	face := newRoundFace()
	a := startCall(&r, face, "a0")
	a.Ask(sampling("1"))
	b := startCall(&r, face, "b0")
	b.Ask(sampling("2"))
	if _, suspended := b.Current(); suspended || !strings.Contains(face.answer("2"), "too many") {
		t.Errorf("second call suspended %v, its request answered %q", suspended, face.answer("2"))
	}
	if _, suspended := a.Current(); !suspended || face.answer("1") != "" {
		t.Errorf("first call suspended %v, its request answered %q", suspended, face.answer("1"))
	}
	// A retry that opens the next round reuses its call's place.
	keys, state := face.lastRound(t, "a0")
	a.Ask(sampling("3"))
	if c, resumed := r.Retry(state, "a1", retry(map[string]string{keys[0]: `{}`}), allCaps); c != a || resumed {
		t.Fatalf("retry: %v resumed %v", c, resumed)
	}
	if _, suspended := a.Current(); !suspended || face.answer("3") != "" {
		t.Errorf("next round: suspended %v, 3 answered %q", suspended, face.answer("3"))
	}
}

// blockingExpire is a face whose Expire signals it runs and waits to be
// let go.
type blockingExpire struct {
	*roundFace
	entered, release chan struct{}
}

func (f blockingExpire) Expire(error) {
	close(f.entered)
	<-f.release
}

// Close returns only once an expiry a timer started has ended: a face
// closing its Rounds gets no call from a timer afterwards (before, Close
// returned at once while giveUp went on calling the face).
func TestRoundsCloseWaitsForExpiry(t *testing.T) {
	r := Rounds[string]{TTL: time.Millisecond}
	face := blockingExpire{newRoundFace(), make(chan struct{}), make(chan struct{})}
	c := &Call[string]{}
	r.Start(c, face, "f0", allCaps)
	c.Ask(sampling("10"))
	<-face.entered // the timer's giveUp is in the face
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while the expiry still ran in the face")
	case <-time.After(100 * time.Millisecond): // an observation window, not a synchronization
	}
	close(face.release)
	<-closed
	if got := face.answer("10"); !strings.HasPrefix(got, "error ") {
		t.Fatalf("the back's request was answered %q, want an error", got)
	}
}

// After Close, a timer firing for a call suspended meanwhile calls no face
// method.
func TestRoundsNoExpiryAfterClose(t *testing.T) {
	r := Rounds[string]{TTL: time.Millisecond}
	r.Close()
	face := blockingExpire{newRoundFace(), make(chan struct{}), make(chan struct{})}
	c := &Call[string]{}
	r.Start(c, face, "f0", allCaps)
	c.Ask(sampling("10"))
	if _, suspended := c.Current(); !suspended {
		t.Fatal("the call did not suspend")
	}
	select {
	case <-face.entered:
		t.Fatal("Expire ran after Close")
	case <-time.After(100 * time.Millisecond): // the TTL is 1 ms: the timer has fired by now
	}
}
