package telemetry

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/otlptest"
	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// newTracing returns a tracing Telemetry configured by m, logging to log
// (may be nil), shut down when the test ends.
func newTracing(t *testing.T, side Side, m map[string]string, log *testmain.SyncBuffer) *Telemetry {
	t.Helper()
	l := zerolog.Nop()
	if log != nil {
		l = zerolog.New(log)
	}
	tel, err := New(context.Background(), Options{Side: side, Tracing: true, Getenv: env(m), Version: "1.2.3", Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel
}

// TestSpansReachCollector: through each protocol and compression, the
// collector gets one span per request with the parent of _meta, a link to
// the header's context, the resource of the environment and the
// configured headers; Shutdown flushes without waiting for the schedule.
func TestSpansReachCollector(t *testing.T) {
	for _, mode := range []struct{ protocol, compression string }{{"http/protobuf", "none"}, {"http/json", "gzip"}, {"", "gzip"}} {
		t.Run(mode.protocol+"+"+mode.compression, func(t *testing.T) {
			rcv := otlptest.Start(t)
			tel := newTracing(t, Server, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    rcv.URL + "/",
				"OTEL_EXPORTER_OTLP_PROTOCOL":    mode.protocol,
				"OTEL_EXPORTER_OTLP_COMPRESSION": mode.compression,
				"OTEL_EXPORTER_OTLP_HEADERS":     "api-key=k%2C1",
				"OTEL_SERVICE_NAME":              "bridge-a",
				"OTEL_RESOURCE_ATTRIBUTES":       "team=tools",
			}, nil)
			s := tel.Scope("srv")
			meta := "00-" + tpTrace + "-" + tpSpan + "-01"
			hdr := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			o := s.Begin(&Request{Method: "tools/call", Name: "echo", ID: []byte("1"), MetaParent: meta, MetaState: "rojo=1", HeaderParent: hdr})
			parent, state := o.Propagate()
			o.End()
			o.End() // a second End is ignored: still one span
			r := s.Begin(&Request{Method: "initialize", ID: []byte("2"), HeaderParent: hdr})
			r.SetSession("sess-9")
			r.Fail("503", "")
			r.End()
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			reqs, hdrs := rcv.Requests()
			spans := rcv.Spans()
			if len(spans) != 2 || len(reqs) != 1 {
				t.Fatalf("%d spans in %d requests, want 2 in 1", len(spans), len(reqs))
			}
			if hdrs[0].Get("Api-Key") != "k,1" || (mode.compression == "gzip") != (hdrs[0].Get("Content-Encoding") == "gzip") {
				t.Errorf("headers %v", hdrs[0])
			}
			res := map[string]string{}
			for _, kv := range reqs[0].ResourceSpans[0].Resource.Attributes {
				res[kv.Key] = kv.Value.GetStringValue()
			}
			if res["service.name"] != "bridge-a" || res["team"] != "tools" || res["service.version"] != "1.2.3" {
				t.Errorf("resource %v", res)
			}
			a, b := spans[0], spans[1]
			if otlptest.TraceID(a) != tpTrace || otlptest.ParentID(a) != tpSpan || a.TraceState != "rojo=1" || a.Kind != tracepb.Span_SPAN_KIND_SERVER ||
				a.Name != "tools/call echo" || len(a.Links) != 1 || hex.EncodeToString(a.Links[0].SpanId) != hdr[36:52] {
				t.Errorf("span %v", a)
			}
			if parent != "00-"+tpTrace+"-"+otlptest.SpanID(a)+"-01" || state != "rojo=1" {
				t.Errorf("propagates %q %q", parent, state)
			}
			if otlptest.TraceID(b) != hdr[3:35] || otlptest.ParentID(b) != hdr[36:52] || len(b.Links) != 0 ||
				otlptest.Attr(b, "mcp.session.id") != "sess-9" || otlptest.Attr(b, "error.type") != "503" ||
				otlptest.Attr(b, "rpc.response.status_code") != "" || b.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("span %v", b)
			}
		})
	}
}

// TestSampler: the OTEL_TRACES_SAMPLER choices. A span that is not sampled
// still passes its context on (flags 00) but is not exported.
func TestSampler(t *testing.T) {
	sampledParent := "00-" + tpTrace + "-" + tpSpan + "-01"
	unsampledParent := "00-" + tpTrace + "-" + tpSpan + "-00"
	for _, tc := range []struct {
		sampler, arg string
		parent       string
		exported     bool
	}{
		{"", "", "", true},
		{"", "", unsampledParent, false},
		{"parentbased_always_on", "", sampledParent, true},
		{"always_on", "", unsampledParent, true},
		{"always_off", "", sampledParent, false},
		{"parentbased_always_off", "", "", false},
		{"parentbased_always_off", "", sampledParent, true},
		{"traceidratio", "0", sampledParent, false},
		{"parentbased_traceidratio", "0", sampledParent, true},
		{"parentbased_traceidratio", "0", "", false},
		{"no_such_sampler", "", unsampledParent, false}, // the default, with a warning
	} {
		rcv := otlptest.Start(t)
		var log testmain.SyncBuffer
		tel := newTracing(t, Client, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
			"OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg}, &log)
		o := tel.Scope("").Begin(&Request{Method: "ping", MetaParent: tc.parent})
		p, _ := o.Propagate()
		o.End()
		tel.Shutdown(context.Background())
		c, ok := parseTraceparent(p, "")
		if !ok || c.sampled() != tc.exported || len(rcv.Spans()) != map[bool]int{true: 1}[tc.exported] {
			t.Errorf("%s(%s) parent %q: propagates %q, %d spans exported, want exported=%v", tc.sampler, tc.arg, tc.parent, p, len(rcv.Spans()), tc.exported)
		}
		if tc.parent != "" && c.traceID != [16]byte(mustHex(tpTrace)) {
			t.Errorf("%s: the trace changed: %q", tc.sampler, p)
		}
		if tc.sampler == "no_such_sampler" && !strings.Contains(log.String(), "no_such_sampler") {
			t.Errorf("no warning about the unknown sampler: %s", log.String())
		}
	}
	// traceidratio decides by the trace id, the SDK's way: about half of
	// 400 root spans at 0.5, and exactly those that propagate flags 01.
	rcv := otlptest.Start(t)
	tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}, nil)
	sampled := map[string]bool{}
	for range 400 {
		o := tel.Scope("").Begin(&Request{Method: "ping"})
		if p, _ := o.Propagate(); strings.HasSuffix(p, "-01") {
			sampled[p[3:35]] = true
		}
		o.End()
	}
	tel.Shutdown(context.Background())
	if n := len(sampled); n < 120 || n > 280 || len(rcv.Spans()) != n {
		t.Errorf("ratio 0.5: %d of 400 sampled, %d exported", n, len(rcv.Spans()))
	}
	for _, s := range rcv.Spans() {
		if !sampled[otlptest.TraceID(s)] {
			t.Errorf("exported an unsampled span")
		}
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// faultCollector answers export i (from 0) with status(i), else passes it
// to a receiver; it records when each attempt came.
type faultCollector struct {
	rcv    *otlptest.Receiver
	status func(i int, w http.ResponseWriter) bool // true: answered
	mu     sync.Mutex
	times  []time.Time
}

func startFault(t *testing.T, status func(int, http.ResponseWriter) bool) (*faultCollector, string) {
	f := &faultCollector{rcv: &otlptest.Receiver{}, status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *faultCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	i := len(f.times)
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	if f.status(i, w) {
		return
	}
	f.rcv.ServeHTTP(w, r)
}

func (f *faultCollector) attempts() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times...)
}

func endSpans(tel *Telemetry, n int) {
	for range n {
		tel.Scope("").Begin(&Request{Method: "tools/call", Name: "t"}).End()
	}
}

// TestCollectorRetries: 503 and 429 are retried (Retry-After honoured)
// until the batch is delivered; 400 drops the batch at once with a
// warning naming the status.
func TestCollectorRetries(t *testing.T) {
	t.Run("503 then 200", func(t *testing.T) {
		f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
			if i < 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
			return false
		})
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/v1/traces"}, nil)
		endSpans(tel, 3)
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(f.attempts()); n != 3 || len(f.rcv.Spans()) != 3 {
			t.Errorf("%d attempts, %d spans delivered; want 3, 3", n, len(f.rcv.Spans()))
		}
	})
	t.Run("429 Retry-After", func(t *testing.T) {
		f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
			if i == 0 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			}
			return false
		})
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url}, nil)
		endSpans(tel, 1)
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		at := f.attempts()
		if len(at) != 2 || len(f.rcv.Spans()) != 1 {
			t.Fatalf("%d attempts, %d spans", len(at), len(f.rcv.Spans()))
		}
		// A lower bound only: the retry waited for Retry-After.
		if gap := at[1].Sub(at[0]); gap < 900*time.Millisecond {
			t.Errorf("retried after %v, before Retry-After: 1", gap)
		} else {
			t.Logf("retried after %v (Retry-After: 1)", gap)
		}
	})
	t.Run("400", func(t *testing.T) {
		f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(strings.Repeat("x", 1<<20))) // read only in part
			return true
		})
		var log testmain.SyncBuffer
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20sekrit"}, &log)
		endSpans(tel, 2)
		err := tel.Shutdown(context.Background())
		if err == nil || !strings.Contains(err.Error(), "400") {
			t.Errorf("Shutdown: %v, want the 400", err)
		}
		if n := len(f.attempts()); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
		if !strings.Contains(log.String(), "400 Bad Request") || strings.Contains(log.String(), "sekrit") {
			t.Errorf("log: %s", log.String())
		}
	})
}

// TestCollectorDownOrStuck: with the collector down, exports give up at
// OTEL_EXPORTER_OTLP_TIMEOUT; with it stuck, End keeps returning — spans
// past the queue are dropped, counted and warned about once — and
// Shutdown returns when its context ends, the goroutine joined.
func TestCollectorDownOrStuck(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close() // nothing listens there now
		var log testmain.SyncBuffer
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "300"}, &log)
		endSpans(tel, 2)
		start := time.Now()
		err := tel.Shutdown(context.Background())
		if err == nil {
			t.Fatal("Shutdown reported no failure")
		}
		t.Logf("gave up after %v: %v", time.Since(start), err)
		if !strings.Contains(log.String(), "exporting spans failed") {
			t.Errorf("no warning: %s", log.String())
		}
		// Requests still in flight at exit end their spans after Shutdown:
		// ignored, not queued, not counted as drops.
		endSpans(tel, 3000)
		if n := tel.tracer.batch.dropped.Load(); n != 0 || len(tel.tracer.batch.queue) != 0 {
			t.Errorf("after Shutdown: %d dropped, %d queued", n, len(tel.tracer.batch.queue))
		}
	})
	t.Run("stuck", func(t *testing.T) {
		release := make(chan struct{})
		var got atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		var log testmain.SyncBuffer
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
			"OTEL_BSP_MAX_QUEUE_SIZE": "8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4"}, &log)
		endSpans(tel, 1000) // would hang here if End waited for the network
		dropped := tel.tracer.batch.dropped.Load()
		if dropped < 1000-8-8 { // at most the queue and two batches in flight
			t.Errorf("%d of 1000 spans dropped with a queue of 8", dropped)
		}
		t.Logf("%d of 1000 spans dropped with a queue of 8 and the collector stuck", dropped)
		if n := strings.Count(log.String(), "span queue full"); n != 1 {
			t.Errorf("%d queue-full warnings, want 1 (rate-limited):\n%s", n, log.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := tel.Shutdown(ctx); err == nil {
			t.Error("Shutdown with the collector stuck reported success")
		}
		if got.Load() == 0 {
			t.Error("no export was attempted")
		}
	})
}

// TestCollectorTLS: OTEL_EXPORTER_OTLP_CERTIFICATE makes the exporter
// trust the collector's CA, and the client certificate and key are
// presented to it.
func TestCollectorTLS(t *testing.T) {
	ca := testmain.NewCA(t)
	certPEM, keyPEM := ca.Issue(t, 2)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": ca.PEM, "cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rcv := &otlptest.Receiver{}
	var clientCert atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientCert.Store(r.TLS != nil && len(r.TLS.PeerCertificates) > 0)
		rcv.ServeHTTP(w, r)
	}))
	srv.TLS = tlsServerConfig(t, certPEM, keyPEM)
	srv.StartTLS()
	defer srv.Close()
	tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        filepath.Join(dir, "ca.pem"),
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": filepath.Join(dir, "cert.pem"),
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":         filepath.Join(dir, "key.pem")}, nil)
	endSpans(tel, 1)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rcv.Spans()) != 1 || !clientCert.Load() {
		t.Errorf("%d spans, client certificate presented: %v", len(rcv.Spans()), clientCert.Load())
	}
}

// (#28 item 7) An invalid traceparent in _meta starts a new trace (W3C
// Trace Context; docs/observability.md): version ff, version 00 with more
// after the flags, and a higher version whose flags run on are no parent,
// though the parser reads their ids before finding them invalid. A valid
// higher version is a parent.
func TestInvalidMetaTraceparentStartsNewTrace(t *testing.T) {
	ids := tpTrace + "-" + tpSpan + "-01"
	for _, tc := range []struct {
		parent string
		child  bool
	}{
		{"ff-" + ids, false},
		{"00-" + ids + "-extra", false},
		{"cc-" + ids + "x", false},
		{"cc-" + ids + "-what-the-future-holds", true},
		{"00-" + ids, true},
	} {
		rcv := otlptest.Start(t)
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}, nil)
		o := tel.Scope("").Begin(&Request{Method: "ping", MetaParent: tc.parent, MetaState: "rojo=1"})
		p, state := o.Propagate()
		o.End()
		tel.Shutdown(context.Background())
		c, ok := parseTraceparent(p, "")
		if !ok {
			t.Fatalf("%q: propagates %q", tc.parent, p)
		}
		if same := c.traceID == [16]byte(mustHex(tpTrace)); same != tc.child {
			t.Errorf("%q: propagates %q (state %q): child of it %v, want %v", tc.parent, p, state, same, tc.child)
		}
		if !tc.child && state != "" {
			t.Errorf("%q: the tracestate of an invalid traceparent went on: %q", tc.parent, state)
		}
	}
}
