package translate

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// fakeBack is a legacy back that records resources/subscribe and
// resources/unsubscribe and refuses the URIs in refuse.
type fakeBack struct {
	caps   ChangeCaps
	refuse map[string]bool
	during func() // called inside Subscribe, when set
	mu     sync.Mutex
	log    []string
}

func (b *fakeBack) ChangeCaps() ChangeCaps { return b.caps }

func (b *fakeBack) Subscribe(_ context.Context, uri string) error {
	if b.during != nil {
		b.during()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuse[uri] {
		return errors.New("refused")
	}
	b.log = append(b.log, "+"+uri)
	return nil
}

func (b *fakeBack) Unsubscribe(uri string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, "-"+uri)
}

func (b *fakeBack) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.log)
}

// stream collects what a listener's stream gets.
type stream struct {
	mu   sync.Mutex
	msgs []string
}

func (s *stream) deliver(msg []byte) {
	s.mu.Lock()
	s.msgs = append(s.msgs, string(msg))
	s.mu.Unlock()
}

func (s *stream) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

func listenReq(t *testing.T, id, filter string) *wire.Message {
	return parse(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"subscriptions/listen","params":{"notifications":`+filter+`}}`)
}

// The acknowledgement lists the honoured subset (what the back advertised,
// the URIs it took, each once) and comes first; notifications reach only
// the listeners that asked for their kind or URI, tagged with their own
// subscription id; resource subscriptions are held at the back once across
// listeners and dropped with the last.
func TestListenHub(t *testing.T) {
	back := &fakeBack{caps: ChangeCaps{Tools: true, Resources: true, Subscribe: true}, refuse: map[string]bool{"file:///bad": true}}
	var hub ListenHub
	ctx := context.Background()
	var a, b stream
	la := hub.Open(ctx, back, listenReq(t, "1", `{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///a","file:///bad","file:///a"]}`), []byte("1"), a.deliver)
	lb := hub.Open(ctx, back, listenReq(t, `"b"`, `{"resourcesListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}`), []byte(`"b"`), b.deliver)

	ackA := a.got()[0]
	jsonEq(t, "ack A", []byte(ackA), `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}}}`)
	jsonEq(t, "ack B", []byte(b.got()[0]), `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"b"},"notifications":{"resourcesListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}}}`)
	if got := back.calls(); !slices.Equal(got, []string{"+file:///a", "+file:///b"}) {
		t.Fatalf("back calls after open = %v, want file:///a once, file:///b", got)
	}

	for _, n := range []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///b"}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///bad"}}`,
	} {
		if !hub.Deliver(parse(t, n)) {
			t.Fatalf("Deliver(%s) = false, want a change notification", n)
		}
	}
	if hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)) {
		t.Fatal("Deliver(notifications/message) = true")
	}
	want := func(s *stream, id string, kinds ...string) {
		t.Helper()
		got := s.got()[1:]
		if len(got) != len(kinds) {
			t.Fatalf("listener %s got %q, want %d notifications %v", id, got, len(kinds), kinds)
		}
		for i, k := range kinds {
			if !strings.Contains(got[i], k) || !strings.Contains(got[i], `"io.modelcontextprotocol/subscriptionId":`+id) {
				t.Errorf("listener %s message %d = %s, want %s tagged with its id", id, i, got[i], k)
			}
		}
	}
	want(&a, "1", "tools/list_changed", `"file:///a"`)
	want(&b, `"b"`, "resources/list_changed", `"file:///a"`, `"file:///b"`)

	// a leaves: file:///a is still b's, and nothing more reaches a.
	hub.Close(la)
	hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	if n := len(a.got()); n != 3 {
		t.Errorf("a got %d messages after Close, want 3", n)
	}
	if got := back.calls(); len(got) != 2 {
		t.Errorf("back calls after a left = %v, want no unsubscribe", got)
	}
	// A restarted back gets the held subscriptions again.
	restarted := &fakeBack{}
	hub.Resubscribe(ctx, restarted)
	if got := restarted.calls(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"+file:///a", "+file:///b"}) {
		t.Errorf("Resubscribe = %v", got)
	}
	hub.Close(lb)
	got := back.calls()[2:]
	slices.Sort(got)
	if !slices.Equal(got, []string{"-file:///a", "-file:///b"}) {
		t.Errorf("back calls after b left = %v, want both unsubscribed", got)
	}
	if hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`)); len(b.got()) != 4 {
		t.Errorf("b got %d messages after Close, want 4", len(b.got()))
	}
}

// A back that advertises no subscriptions is asked none, and a back that
// advertises nothing gets an empty acknowledgement.
func TestListenHubNothingAdvertised(t *testing.T) {
	back := &fakeBack{}
	var hub ListenHub
	var s stream
	l := hub.Open(context.Background(), back, listenReq(t, "7", `{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}`), []byte("7"), s.deliver)
	jsonEq(t, "ack", []byte(s.got()[0]), `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{}}}`)
	hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	hub.Close(l)
	if n := len(s.got()); n != 1 || len(back.calls()) != 0 {
		t.Errorf("messages %d (want the ack only), back calls %v (want none)", n, back.calls())
	}
	jsonEq(t, "closing", l.Closing(), `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`)
}

// "MUST NOT send any notification on the subscription before" the
// acknowledgement: a change notification that arrives while the listener
// opens (here: while the back takes its resource subscription) does not
// reach it ahead of its acknowledgement.
func TestListenHubAckFirst(t *testing.T) {
	var hub ListenHub
	back := &fakeBack{caps: ChangeCaps{Tools: true, Subscribe: true}}
	back.during = func() {
		hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	}
	var s stream
	l := hub.Open(context.Background(), back, listenReq(t, "1", `{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}`), []byte("1"), s.deliver)
	defer hub.Close(l)
	hub.Deliver(parse(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	got := s.got()
	if len(got) == 0 || !strings.Contains(got[0], "notifications/subscriptions/acknowledged") {
		t.Fatalf("stream = %q, want the acknowledgement first", got)
	}
}

func TestParseChangeCaps(t *testing.T) {
	for caps, want := range map[string]ChangeCaps{
		`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`: {true, true, true, true},
		`{"tools":{},"resources":{"subscribe":true}}`: {Subscribe: true},
		`{}`: {},
		``:   {},
	} {
		if got := ParseChangeCaps([]byte(caps)); got != want {
			t.Errorf("ParseChangeCaps(%s) = %+v, want %+v", caps, got, want)
		}
	}
}

// One listen request naming more URIs than MaxSubscriptions gets the first
// MaxSubscriptions subscribed at the back and acknowledged, no more.
func TestListenHubSubscriptionsBounded(t *testing.T) {
	back := &fakeBack{caps: ChangeCaps{Resources: true, Subscribe: true}}
	var hub ListenHub
	var uris []string
	for i := range MaxSubscriptions + 10 {
		uris = append(uris, strconv.Quote("file:///"+strconv.Itoa(i)))
	}
	var s stream
	l := hub.Open(context.Background(), back, listenReq(t, "1", `{"resourceSubscriptions":[`+strings.Join(uris, ",")+`]}`), []byte("1"), s.deliver)
	if n := len(back.calls()); n != MaxSubscriptions {
		t.Fatalf("%d subscriptions at the back, want %d", n, MaxSubscriptions)
	}
	ack := s.got()[0]
	if strings.Contains(ack, `"file:///`+strconv.Itoa(MaxSubscriptions)+`"`) || !strings.Contains(ack, `"file:///`+strconv.Itoa(MaxSubscriptions-1)+`"`) {
		t.Fatalf("acknowledgement does not list exactly the first %d URIs", MaxSubscriptions)
	}
	hub.Close(l)
}

// A second listener of a URI whose first resources/subscribe is still
// unanswered does not take the URI as held: the back may refuse it (it
// does here), and then the second acknowledgement would list a URI nobody
// subscribed, and its Close would unsubscribe the back from it. It waits
// for the answer (here its context has ended, so it leaves the URI out).
func TestListenHubSubscribeInFlight(t *testing.T) {
	var hub ListenHub
	entered, release := make(chan struct{}), make(chan struct{})
	back := &fakeBack{caps: ChangeCaps{Subscribe: true}, refuse: map[string]bool{"file:///x": true}}
	back.during = func() {
		close(entered)
		<-release
	}
	var s1, s2 stream
	first := make(chan *Listener)
	go func() {
		first <- hub.Open(context.Background(), back, listenReq(t, "1", `{"resourceSubscriptions":["file:///x"]}`), []byte("1"), s1.deliver)
	}()
	<-entered
	back.during = nil
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	l2 := hub.Open(gone, back, listenReq(t, "2", `{"resourceSubscriptions":["file:///x"]}`), []byte("2"), s2.deliver)
	close(release)
	l1 := <-first
	hub.Close(l1)
	hub.Close(l2)
	for i, got := range [][]string{s1.got(), s2.got()} {
		if len(got) == 0 || strings.Contains(got[0], "file:///x") {
			t.Errorf("listener %d: acknowledgement %q lists a URI the back refused", i+1, got)
		}
	}
	if c := back.calls(); len(c) != 0 {
		t.Errorf("back got %v, want nothing (it refused the only subscribe)", c)
	}
}
