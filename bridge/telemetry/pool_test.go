package telemetry

import (
	"context"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// fullRequest sets every field a record can hold: both parents (so a
// link), a session, an id, a tool.
func fullRequest() *Request {
	return &Request{Method: "tools/call", Name: "secret-tool", ID: []byte(`"id-1"`), Version: "2025-11-25", Session: "sess-1",
		MetaParent: "00-" + tpTrace + "-" + tpSpan + "-01", MetaState: "rojo=1",
		HeaderParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", HeaderState: "congo=2"}
}

// TestRecycledRecordStartsClean: a record that goes back to the pool at
// End and comes out for the next request carries nothing of the span it
// held (metrics only: End releases it at once).
func TestRecycledRecordStartsClean(t *testing.T) {
	tel, err := New(context.Background(), Options{Side: Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	s := tel.Scope("srv")
	reused := 0
	for range 200 {
		o := s.Begin(fullRequest())
		o.Fail("-32602", "bad")
		o.SetSession("sess-2")
		prev := o.r
		o.End()
		n := s.Begin(&Request{Method: "ping"})
		r := n.r
		if r == prev {
			reused++
		}
		want := spanRecord{s: s, start: r.start, method: "ping"}
		if *r != want {
			t.Fatalf("a fresh record holds %+v", *r)
		}
		n.End()
	}
	if reused == 0 {
		t.Fatal("no record was ever reused: the test checked nothing")
	}
}

// TestLateCallsDoNotTouchReusedRecord: the Op is shared (the response
// writer, a child's late answer); once it has ended, its record may be
// another request's, and every method of the old Op must leave that one
// alone. Under -race, a write through the old Op would also show as a
// race with the new Op's reads.
func TestLateCallsDoNotTouchReusedRecord(t *testing.T) {
	tel, err := New(context.Background(), Options{Side: Server, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	s := tel.Scope("srv")
	var errResp wire.Message
	if err := wire.Parse([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"late"}}`), &errResp); err != nil {
		t.Fatal(err)
	}
	reused := 0
	for range 200 {
		old := s.Begin(fullRequest())
		rec := old.r
		old.End()
		n := s.Begin(&Request{Method: "tools/call", Name: "t"})
		if n.r == rec {
			reused++
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			old.Fail("-1", "late")
			old.SetSession("late-session")
			old.Result(&errResp)
			if p, st := old.Propagate(); p != "" || st != "" {
				t.Errorf("an ended Op propagates %q %q", p, st)
			}
			old.End()
		}()
		n.SetSession("s") // not sampled: ignored
		wg.Wait()
		n.mu.Lock()
		got := *n.r
		n.mu.Unlock()
		if got.errType != "" || got.errMsg != "" || got.session != "" || got.name != "" || got.tool != "t" {
			t.Fatalf("the new request's record was written through the old Op: %+v", got)
		}
		n.End()
	}
	if reused == 0 {
		t.Fatal("no record was ever reused: the test checked nothing")
	}
}

// TestExportedSpansDoNotLeakIntoNext: through the batch processor (which
// releases records after each export), a span with every field set and
// minimal spans after it: each minimal span decodes with its own
// attributes only — no link, status, session or tool of an earlier one.
func TestExportedSpansDoNotLeakIntoNext(t *testing.T) {
	rcv := otlptest.Start(t)
	tel := newTracing(t, Server, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    rcv.URL + "/",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1",
	}, nil)
	s := tel.Scope("")
	const rounds = 50
	for range rounds {
		o := s.Begin(fullRequest())
		o.Fail("-32602", "bad")
		o.End()
		s.Begin(&Request{Method: "ping"}).End()
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 2*rounds {
		t.Fatalf("%d spans, want %d", len(spans), 2*rounds)
	}
	traces := map[string]bool{}
	for _, sp := range spans {
		// New ids are drawn only into a cleared record: a recycled one
		// that kept its ids would start the same trace again.
		if traces[otlptest.SpanID(sp)] {
			t.Fatalf("span id %s twice", otlptest.SpanID(sp))
		}
		traces[otlptest.SpanID(sp)] = true
		if sp.Name == "ping" {
			if traces[otlptest.TraceID(sp)] {
				t.Fatalf("root spans share the trace id %s", otlptest.TraceID(sp))
			}
			traces[otlptest.TraceID(sp)] = true
		}
		if sp.Name == "tools/call secret-tool" {
			if len(sp.Links) != 1 || otlptest.Attr(sp, "mcp.session.id") != "sess-1" || sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Fatalf("full span %v", sp)
			}
			continue
		}
		if sp.Name != "ping" || len(sp.Links) != 0 || sp.Status != nil || len(sp.ParentSpanId) != 0 || sp.TraceState != "" || len(sp.Attributes) != 3 {
			t.Fatalf("a minimal span carries more than its own: %v", sp)
		}
	}
}

// TestRelayAllocatesOnlyTheMessage: the _meta edit of a traced request
// allocates the edited message's bytes and nothing else — the traceparent,
// the added members and the replaced values live on the stack, and the
// message is edited in place — whether it adds the context or replaces the
// client's own.
func TestRelayAllocatesOnlyTheMessage(t *testing.T) {
	s := tracingScope(t, Server, "srv", nil)
	const envelope = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
	for _, tc := range []struct{ name, raw string }{
		{"add", envelope + `}}}`},
		{"replace", envelope + `,"traceparent":"00-` + tpTrace + `-` + tpSpan + `-01","tracestate":"rojo=1"}}}`},
	} {
		var call wire.Message
		if err := wire.Parse([]byte(tc.raw), &call); err != nil {
			t.Fatal(err)
		}
		meta := ReadMeta(&call)
		mp := meta.Parent
		o := s.Begin(&Request{Method: "tools/call", Name: "echo", MetaParent: mp, MetaState: meta.State})
		var out []byte
		n := testing.AllocsPerRun(100, func() {
			m := call
			out = o.Relay(&m, meta).Raw
		})
		o.End()
		if n != 1 && !raceEnabled {
			t.Errorf("%s: %v allocations, want 1 (the edited message)", tc.name, n)
		}
		t.Logf("%s: %v allocations", tc.name, n)
		var got wire.Message
		if err := wire.Parse(out, &got); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, out, err)
		}
		if p, _ := MetaContext(&got); p == mp || len(p) != traceparentLen {
			t.Errorf("%s: traceparent %q after the edit", tc.name, p)
		}
	}
}

// TestFreeListBound: the free list keeps at most maxFreeRecords records,
// each cleared, and hands them out last in, first out.
func TestFreeListBound(t *testing.T) {
	var l freeList
	rs := make([]*spanRecord, maxFreeRecords+100)
	for i := range rs {
		rs[i] = &spanRecord{method: "tools/call", errMsg: "secret detail"}
	}
	l.put(rs[:10]...)
	l.put(rs[10:]...)
	if len(l.free) != maxFreeRecords {
		t.Fatalf("%d records kept, want %d", len(l.free), maxFreeRecords)
	}
	for _, r := range rs {
		if *r != (spanRecord{}) {
			t.Fatalf("a released record still holds %+v", *r)
		}
	}
	if got := l.get(); got != rs[maxFreeRecords-1] {
		t.Error("get did not return the last record kept")
	}
	l.free = nil
	if l.get() == nil {
		t.Error("an empty list gave no record")
	}
}
