package connect

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// With telemetry on, each request of a 2025-03-26 batch gets its own CLIENT
// span, and the remote still gets the batch as one POST, each request
// naming its own span in params._meta (the one whose host gave a
// traceparent continues the host's trace).
func TestBatchSpansPerRequest(t *testing.T) {
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	tel, err := telemetry.New(context.Background(), telemetry.Options{Side: telemetry.Client, Metrics: true, Tracing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	srv, posted := batchRemote(t)
	h := startHost(t, Config{URL: srv.URL, Protocol: ProtocolLegacy, Telemetry: tel})
	h.send(`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"traceparent":"00-` + traceID + `-` + parent + `-01"}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"prompts/list"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
	for range 2 {
		if m := h.next(10 * time.Second); m["result"] == nil {
			t.Fatalf("line %v, want a response", m)
		}
	}
	// The spans end when the batch's requests retire, after their
	// answers went out: Run returns once that is done.
	h.close()
	err = <-h.done
	h.done <- err // for the cleanup, which checks it
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	bodies := posted()
	if len(bodies) != 1 {
		t.Fatalf("remote got %d POSTs, want the batch as one: %q", len(bodies), bodies)
	}
	var sent []struct {
		ID     any `json:"id"`
		Method string
		Params struct {
			Meta map[string]string `json:"_meta"`
		}
	}
	if err := json.Unmarshal([]byte(bodies[0]), &sent); err != nil || len(sent) != 3 {
		t.Fatalf("remote got %q (%v), want an array of the three messages", bodies[0], err)
	}
	spans := map[string]string{} // method -> its span's traceparent
	for _, s := range rcv.Spans() {
		spans[otlptest.Attr(s, "mcp.method.name")] = "00-" + otlptest.TraceID(s) + "-" + otlptest.SpanID(s) + "-01"
		if otlptest.Attr(s, "mcp.method.name") == "tools/list" && (otlptest.TraceID(s) != traceID || otlptest.ParentID(s) != parent) {
			t.Errorf("tools/list span in trace %s under %s, want the host's", otlptest.TraceID(s), otlptest.ParentID(s))
		}
	}
	for _, m := range sent[:2] {
		if tp := spans[m.Method]; tp == "" || m.Params.Meta["traceparent"] != tp {
			t.Errorf("%s went out with traceparent %q, want its span's %q", m.Method, m.Params.Meta["traceparent"], tp)
		}
	}
	if sent[2].Method != "notifications/roots/list_changed" || sent[2].Params.Meta != nil {
		t.Errorf("the notification changed: %+v", sent[2])
	}
}
