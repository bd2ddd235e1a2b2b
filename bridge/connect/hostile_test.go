package connect

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// hostileRemote is a server that does not keep to JSON-RPC's id rules. It
// speaks whichever era it is spoken to (initialize and a session with a GET
// stream, or server/discover), and answers tools/call by tool name:
//
//   - batch: an SSE event holding a batch: a stranger's response, a
//     notification, its own response twice;
//   - jsonbatch: a JSON body that is a batch: a stranger's response and its
//     own;
//   - hold: waits until thief's stream is closed, then answers;
//   - thief: once hold is in flight, sends a forged response under hold's
//     id, a stranger's, then its own;
//   - nullid: answers with an error whose id is null;
//   - garbage: sends non-JSON, non-JSON-RPC and broken JSON carrying its
//     own id (one of them 300 KiB, broken near its end), then its own
//     response;
//   - both: answers on the GET stream and on its own stream at once;
//   - anything else: answers {"who":name}.
//
// A host batch (an array body) is answered with a batch holding the
// response to batchE, a forged one under hold's id, a stranger's, and none
// for batchF.
//
// The GET stream carries a stranger's response and a batch of a stranger's
// response and a log notification, then what the calls send there.
type hostileRemote struct {
	get       chan string
	mu        sync.Mutex
	holdID    string
	holdSeen  chan struct{}
	thiefDone chan struct{}
}

func newHostileRemote() *hostileRemote {
	return &hostileRemote{get: make(chan string, 8), holdSeen: make(chan struct{}), thiefDone: make(chan struct{})}
}

func (s *hostileRemote) hold() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holdID
}

func respond(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

func who(name string) string { return `{"content":[],"who":"` + name + `"}` }

func (s *hostileRemote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		sseStart(w)
		sseSend(w, respond(`"stranger-get"`, `{"who":"stranger"}`))
		sseSend(w, `[`+respond(`987`, `{"who":"stranger"}`)+`,{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"from a batch"}}]`)
		for {
			select {
			case msg := <-s.get:
				sseSend(w, msg)
			case <-r.Context().Done():
				return
			}
		}
	}
	body := readBody(r)
	if wire.FirstByte(body) == '[' {
		s.hostBatch(w, body)
		return
	}
	var m wire.Message
	if wire.Parse(body, &m) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if m.Kind != wire.KindRequest {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	id := string(m.IDBytes())
	switch {
	case m.Method == "initialize":
		v, _ := wire.StringField(m.Raw, m.Params, "protocolVersion")
		w.Header().Set("Mcp-Session-Id", "hostile-1")
		answer(w, r, body, `{"protocolVersion":"`+v+`","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
	case m.Method == "server/discover":
		answer(w, r, body, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hostile","version":"1"}}}`)
	case m.Method != "tools/call":
		answer(w, r, body, `{}`)
	case m.Name == "batch":
		sseStart(w)
		sseSend(w, `[`+respond(`"stranger-1"`, `{"who":"stranger"}`)+`,{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"in a batch"}},`+respond(id, who("batch"))+`,`+respond(id, `{"who":"second"}`)+`]`)
	case m.Name == "jsonbatch":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[`+respond(`"stranger-2"`, `{"who":"stranger"}`)+",\n"+respond(id, who("jsonbatch"))+`]`)
	case m.Name == "hold":
		s.mu.Lock()
		s.holdID = id
		s.mu.Unlock()
		close(s.holdSeen)
		select {
		case <-s.thiefDone:
		case <-r.Context().Done():
			return
		}
		answer(w, r, body, who("hold"))
	case m.Name == "thief":
		select {
		case <-s.holdSeen:
		case <-r.Context().Done():
			return
		}
		sseStart(w)
		sseSend(w, respond(s.hold(), `{"who":"forged"}`))
		sseSend(w, respond(`12345`, `{"who":"stranger"}`))
		sseSend(w, respond(id, who("thief")))
		<-r.Context().Done() // the bridge closes the stream after the response
		close(s.thiefDone)
	case m.Name == "nullid":
		sseStart(w)
		sseSend(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)
	case m.Name == "garbage":
		sseStart(w)
		sseSend(w, `not json at all`)
		sseSend(w, `{"foo":1}`)
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"who" "broken"}}`)
		// Broken past where the envelope reader looks, in a message larger
		// than any cheap check would cover.
		sseSend(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"who":"bigbroken","pad":"`+strings.Repeat("x", 300<<10)+`","x":tru}}`)
		sseSend(w, respond(id, who("garbage")))
	case m.Name == "both":
		select {
		case s.get <- respond(id, who("both")):
		default: // no GET stream in this era: never read
		}
		answer(w, r, body, who("both"))
	default:
		answer(w, r, body, who(m.Name))
	}
}

func (s *hostileRemote) hostBatch(w http.ResponseWriter, body []byte) {
	elems, err := wire.BatchElements(body)
	if err != nil {
		http.Error(w, "bad batch", http.StatusBadRequest)
		return
	}
	var out []string
	for _, e := range elems {
		var m wire.Message
		if wire.Parse(body[e.Start:e.End], &m) == nil && m.Name == "batchE" {
			out = append(out, respond(string(m.IDBytes()), who("batchE")))
		}
	}
	forged := s.hold()
	if forged == "" {
		forged = "12"
	}
	out = append(out, respond(forged, `{"who":"forged"}`), respond(`"stranger-3"`, `{"who":"stranger"}`))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, "["+strings.Join(out, ",")+"]")
}

// Acceptance (issue 8, deliverable 8): against a remote that sends
// batches, strangers' ids and another request's id, every host request is
// answered exactly once, in every era pairing, and every stdout line is one
// JSON-RPC message (startHost's reader checks each line).
func TestHostileRemoteAnswersEachRequestOnce(t *testing.T) {
	legacyCall := func(id, tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
	}
	const legacyInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`
	for _, tc := range []struct {
		name     string
		protocol Protocol
		modern   bool // the host speaks 2026-07-28
		pass     bool // no translation: the host's batch goes as one POST
	}{
		{"legacy pass-through", ProtocolLegacy, false, true},
		{"modern pass-through", ProtocolModern, true, true},
		{"legacy host, modern remote", ProtocolModern, false, false},
		{"modern host, legacy remote", ProtocolLegacy, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(newHostileRemote())
			t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
			h := startHost(t, Config{URL: srv.URL, Protocol: tc.protocol})
			call := legacyCall
			if tc.modern {
				call = modernCall
			} else {
				h.send(legacyInit)
				if m, _ := h.response("0", 30*time.Second); m["result"] == nil {
					t.Fatalf("initialize: %v", m)
				}
				h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			want := map[string]string{ // id -> "who" of the result, or "error"
				"10": "batch", "11": "jsonbatch", "12": "hold", "13": "thief",
				"14": "error", "15": "garbage", "16": "both", "20": "batchE", "21": "batchF",
			}
			if tc.pass {
				want["21"] = "error" // the remote left it out of its batch
			}
			for _, c := range []struct{ id, tool string }{
				{"10", "batch"}, {"11", "jsonbatch"}, {"12", "hold"}, {"13", "thief"}, {"14", "nullid"}, {"15", "garbage"}, {"16", "both"},
			} {
				h.send(call(c.id, c.tool))
			}
			h.send("[" + call("20", "batchE") + "," + call("21", "batchF") + "]")

			answers := map[string][]map[string]any{}
			var lines []map[string]any
			complete := func() bool {
				for id := range want {
					if len(answers[id]) == 0 {
						return false
					}
				}
				return true
			}
			take := func(m map[string]any) {
				lines = append(lines, m)
				if _, isReq := m["method"]; isReq {
					return
				}
				id, _ := json.Marshal(m["id"])
				answers[string(id)] = append(answers[string(id)], m)
			}
			for !complete() {
				take(h.next(30 * time.Second))
			}
			// Whatever else the bridge would write comes before it exits.
			h.close()
			for l := range h.lines {
				var m map[string]any
				json.Unmarshal([]byte(l), &m)
				take(m)
			}
			for id, ms := range answers {
				w, ok := want[id]
				switch {
				case !ok:
					t.Errorf("response with id %s, which the host never sent: %v", id, ms)
				case len(ms) != 1:
					t.Errorf("id %s answered %d times: %v", id, len(ms), ms)
				case w == "error" && ms[0]["error"] == nil:
					t.Errorf("id %s: %v, want an error", id, ms[0])
				case w != "error" && dig(ms[0], "result", "who") != w:
					t.Errorf("id %s: %v, want the result of %s", id, ms[0], w)
				}
			}
			if e, _ := answers["14"][0]["error"].(map[string]any); e["code"] != float64(wire.CodeInvalidRequest) {
				t.Errorf("nullid: %v, want the remote's error under the request's id", answers["14"][0])
			}
			for _, m := range lines {
				if s := jsonText(m); strings.Contains(s, "forged") || strings.Contains(s, "stranger") || strings.Contains(s, "second") {
					t.Errorf("delivered: %s", s)
				}
			}
		})
	}
}

// A remote that sends thousands of unusable messages costs one warning per
// period, not one per message.
func TestHostileRemoteWarningsRateLimited(t *testing.T) {
	const junk = 2000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		sseStart(w)
		for i := range junk {
			switch i % 3 {
			case 0:
				sseSend(w, `not json`)
			case 1:
				sseSend(w, `{"no":"envelope"}`)
			default:
				sseSend(w, `[[{"jsonrpc":"2.0","method":"x"}]]`)
			}
		}
		sseSend(w, respond(string(m.IDBytes()), `{"resultType":"complete","content":[]}`))
	}))
	defer srv.Close()
	var log syncBuffer
	start := time.Now()
	h := startHostLogging(t, Config{URL: srv.URL, Logger: zerolog.New(&log).Level(zerolog.InfoLevel)}, true)
	h.send(modernCall("1", "x"))
	if m, _ := h.response("1", 60*time.Second); m["result"] == nil {
		t.Fatalf("call: %v", m)
	}
	h.close()
	for range h.lines {
	}
	elapsed := time.Since(start)
	n := strings.Count(log.String(), `"level":"warn"`)
	// One line per kind and period; three kinds here.
	if limit := 3 * (1 + int(elapsed/ratelog.Period)); n == 0 || n > limit {
		t.Errorf("%d warnings for %d bad messages in %v, want 1..%d:\n%s", n, junk, elapsed, limit, log.String())
	}
	t.Logf("%d warning lines for %d bad messages in %v", n, junk, elapsed)
}

type syncBuffer = testmain.SyncBuffer

// A legacy remote that floods the GET stream with pings and refuses every
// answer the bridge POSTs (modern host: the bridge answers pings itself)
// costs one warning per period, not one per ping.
func TestPingFloodWarningsRateLimited(t *testing.T) {
	const pings = 300
	var refused atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodGet:
			sseStart(w)
			for i := range pings {
				sseSend(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 1000+i))
			}
			<-r.Context().Done()
			return
		}
		body := readBody(r)
		var m wire.Message
		wire.Parse(body, &m)
		switch {
		case m.Kind == wire.KindResponse:
			refused.Add(1)
			http.Error(w, "no", http.StatusInternalServerError)
		case m.Kind == wire.KindNotification:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "flood-1")
			answer(w, r, body, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`)
		default:
			answer(w, r, body, `{"content":[]}`)
		}
	}))
	t.Cleanup(srv.Close) // after the host's cleanup: the GET stream holds a connection
	var log syncBuffer
	start := time.Now()
	h := startHostLogging(t, Config{URL: srv.URL, Protocol: ProtocolLegacy, Logger: zerolog.New(&log).Level(zerolog.InfoLevel)}, true)
	h.send(modernCall("1", "x"))
	if m, _ := h.response("1", 60*time.Second); m["result"] == nil {
		t.Fatalf("call: %v", m)
	}
	waitFor(t, "every ping answered", func() bool { return refused.Load() == pings })
	elapsed := time.Since(start)
	n := strings.Count(log.String(), "remote did not accept")
	if limit := 1 + int(elapsed/ratelog.Period); n == 0 || n > limit {
		t.Errorf("%d warnings for %d refused answers in %v, want 1..%d", n, pings, elapsed, limit)
	}
	t.Logf("%d warning lines for %d refused answers in %v", n, pings, elapsed)
}
