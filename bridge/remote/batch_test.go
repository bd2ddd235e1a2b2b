package remote

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// sseServer answers every POST with events, one SSE event each.
func sseServer(t *testing.T, events ...string) *Remote {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, "data: "+e+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	r, err := New(Config{URL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// What the remote sends beside the answer to a request of the bridge's own
// reaches the host side as it reaches a host request's stream: JSON only,
// a batch split, a batch in a batch dropped (deliver).
func TestRoundTripOtherOneMessageAtATime(t *testing.T) {
	r := sseServer(t,
		`not json`,
		`[{"jsonrpc":"2.0","method":"a"},[{"jsonrpc":"2.0","method":"nested"}],{"jsonrpc":"2.0","method":"b"}]`,
		`{"jsonrpc":"2.0","method":"c"}`,
		`{"jsonrpc":"2.0","id":"own","result":{}}`,
	)
	var got []string
	var m wire.Message
	if err := wire.Parse(wire.Request([]byte(`"own"`), "ping", nil), &m); err != nil {
		t.Fatal(err)
	}
	rm, err := r.RoundTrip(context.Background(), &m, func(msg []byte) { got = append(got, string(msg)) })
	if err != nil || !rm.Result.Present() {
		t.Fatalf("RoundTrip: %v, %v", rm, err)
	}
	want := []string{`{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`, `{"jsonrpc":"2.0","method":"c"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("other got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A host batch's answer reaches each one message at a time; the error
// returned is what the requests the remote left out get.
func TestBatchAnswer(t *testing.T) {
	r := sseServer(t, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`)
	var got []string
	refused, err := r.Batch(context.Background(), []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`),
		func(msg []byte) { got = append(got, string(msg)) })
	if refused || err == nil || !strings.Contains(err.Error(), "without a response") {
		t.Errorf("Batch: refused %v, err %v; want an answer without a response", refused, err)
	}
	if len(got) != 2 || got[0] != `{"jsonrpc":"2.0","id":1,"result":{}}` || got[1] != `{"jsonrpc":"2.0","method":"n"}` {
		t.Errorf("each got %q", got)
	}
}

// A refused batch of notifications only is answered with an error of id
// null: nothing else would tell the host.
func TestBatchRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no batches here", http.StatusBadRequest)
	}))
	defer srv.Close()
	r, err := New(Config{URL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	refused, err := r.Batch(context.Background(), []byte(`[{"jsonrpc":"2.0","method":"a"}]`), func([]byte) { t.Error("a refusal has no messages") })
	if !refused || err == nil {
		t.Fatalf("Batch: refused %v, err %v; want refused", refused, err)
	}
	var m wire.Message
	if err := wire.Parse(r.BatchRefusal(err), &m); err != nil || string(m.IDBytes()) != "null" || m.ErrorCode != wire.CodeConnectionClosed ||
		!strings.Contains(string(m.Raw), "the remote rejected a batch: the remote MCP server answered HTTP 400") {
		t.Errorf("BatchRefusal: %s (%v)", m.Raw, err)
	}
}
