package telemetry

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// parse reads /metrics text with Prometheus's own parser (test-only: the
// binary does not link it).
func parse(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt cannot parse /metrics: %v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// find returns the series of fam whose labels are exactly want.
func find(t testing.TB, fams map[string]*dto.MetricFamily, fam string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[fam]
	if f == nil {
		t.Fatalf("no family %s", fam)
	}
	for _, m := range f.GetMetric() {
		if fmt.Sprint(labelsOf(m)) == fmt.Sprint(want) {
			return m
		}
	}
	t.Fatalf("%s has no series %v", fam, want)
	return nil
}

// TestExpositionDifferential: what /metrics says, read back by
// Prometheus's parser, is what was recorded — every family's type, help,
// label names and values, histogram buckets (cumulative, le inclusive),
// sums and counts — and the text is in a stable order.
func TestExpositionDifferential(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	srv, cli := tel.Scope("srv"), tel.ScopeFor(Client, "remote")
	durations := []float64{0.001, 0.01, 0.0100001, 0.3, 2, 299.9, 300, 1000}
	for _, d := range durations {
		srv.observe("tools/call", "echo", "2026-07-28", "", d)
	}
	cli.observe("tools/list", "", "2025-11-25", "-32601", 0.05)
	srv.Rejected(401)
	srv.Rejected(401)
	srv.Rejected(5000)
	for range 3 {
		srv.Request("alice")
	}
	srv.Request("")
	srv.StreamOpened()
	srv.StreamOpened()
	srv.StreamClosed()
	srv.Restarted()
	srv.InputRound()
	srv.InputRound()
	tel.AggregateAbsent("stuck", "tools/list")
	stop := srv.Watch(func() Gauges { return Gauges{Children: 3, LegacySessions: 4, BufferedBytes: 5 << 30, Inflight: 6} })
	defer stop()
	// A second Handler under the same name (a caller's aggregate, a
	// reload's new Handler): the Gauges add up.
	stop2 := srv.Watch(func() Gauges { return Gauges{Children: 2} })
	defer stop2()

	text := scrape(t, tel)
	fams := parse(t, text)

	types := map[string]dto.MetricType{
		"mcp_server_operation_duration_seconds": dto.MetricType_HISTOGRAM,
		"mcp_client_operation_duration_seconds": dto.MetricType_HISTOGRAM,
		"mcp_bridge_rejected_requests_total":    dto.MetricType_COUNTER,
		"mcp_bridge_child_restarts_total":       dto.MetricType_COUNTER,
		"mcp_bridge_input_rounds_total":         dto.MetricType_COUNTER,
		"mcp_bridge_requests_total":             dto.MetricType_COUNTER,
		"mcp_bridge_open_streams":               dto.MetricType_GAUGE,
		"mcp_bridge_children":                   dto.MetricType_GAUGE,
		"mcp_bridge_legacy_sessions":            dto.MetricType_GAUGE,
		"mcp_bridge_buffered_bytes":             dto.MetricType_GAUGE,
		"mcp_bridge_inflight_requests":          dto.MetricType_GAUGE,
		"mcp_bridge_aggregate_absent_total":     dto.MetricType_COUNTER,
	}
	// client_golang's Go collector (its default set: the MemStats names
	// and three runtime settings), and its process collector on Linux.
	for _, n := range []string{"go_goroutines", "go_threads", "go_info", "go_gc_gogc_percent", "go_gc_gomemlimit_bytes",
		"go_sched_gomaxprocs_threads", "go_memstats_alloc_bytes", "go_memstats_buck_hash_sys_bytes", "go_memstats_gc_sys_bytes",
		"go_memstats_heap_alloc_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects",
		"go_memstats_heap_released_bytes", "go_memstats_heap_sys_bytes", "go_memstats_last_gc_time_seconds",
		"go_memstats_mcache_inuse_bytes", "go_memstats_mcache_sys_bytes", "go_memstats_mspan_inuse_bytes",
		"go_memstats_mspan_sys_bytes", "go_memstats_next_gc_bytes", "go_memstats_other_sys_bytes",
		"go_memstats_stack_inuse_bytes", "go_memstats_stack_sys_bytes", "go_memstats_sys_bytes"} {
		types[n] = dto.MetricType_GAUGE
	}
	for _, n := range []string{"go_memstats_alloc_bytes_total", "go_memstats_frees_total", "go_memstats_mallocs_total"} {
		types[n] = dto.MetricType_COUNTER
	}
	types["go_gc_duration_seconds"] = dto.MetricType_SUMMARY
	if runtime.GOOS == "linux" {
		for _, n := range []string{"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
			"process_open_fds", "process_max_fds", "process_start_time_seconds"} {
			types[n] = dto.MetricType_GAUGE
		}
		for _, n := range []string{"process_cpu_seconds_total", "process_network_receive_bytes_total", "process_network_transmit_bytes_total"} {
			types[n] = dto.MetricType_COUNTER
		}
	}
	for name, typ := range types {
		f := fams[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	for name := range fams {
		// Off Linux, client_golang's process collector gives what the OS
		// lets it read (macOS, Windows): not pinned here.
		if _, ok := types[name]; !ok && (runtime.GOOS == "linux" || !strings.HasPrefix(name, "process_")) {
			t.Errorf("unexpected family %s", name)
		}
	}
	// docs/observability.md lists exactly these.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(l, "| `"); ok {
			name = name[:strings.IndexByte(name, '`')]
			if strings.HasPrefix(name, "mcp_") || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
				documented[name] = true
			}
		}
	}
	for name := range types {
		if !documented[name] {
			t.Errorf("docs/observability.md does not list %s", name)
		}
		delete(documented, name)
	}
	for name := range documented {
		if runtime.GOOS == "linux" || !strings.HasPrefix(name, "process_") {
			t.Errorf("docs/observability.md lists %s, which /metrics does not have", name)
		}
	}

	// The histogram: buckets are cumulative counts of v <= le.
	h := find(t, fams, "mcp_server_operation_duration_seconds", map[string]string{
		LabelError: "", LabelTool: "echo", LabelMethod: "tools/call", LabelVersion: "2026-07-28", LabelServer: "srv",
	}).GetHistogram()
	var sum float64
	for _, d := range durations {
		sum += d
	}
	if h.GetSampleCount() != uint64(len(durations)) || math.Abs(h.GetSampleSum()-sum) > 1e-9 {
		t.Errorf("count %d sum %v, want %d %v", h.GetSampleCount(), h.GetSampleSum(), len(durations), sum)
	}
	var bounds []float64
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			if b.GetCumulativeCount() != uint64(len(durations)) {
				t.Errorf("+Inf bucket %d", b.GetCumulativeCount())
			}
			continue
		}
		bounds = append(bounds, b.GetUpperBound())
		var want uint64
		for _, d := range durations {
			if d <= b.GetUpperBound() {
				want++
			}
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if !slices.Equal(bounds, durationBuckets) {
		t.Errorf("bucket bounds %v, want the semconv %v", bounds, durationBuckets)
	}
	if !strings.Contains(text, `le="+Inf"} 8`) {
		t.Error("no +Inf bucket in the text")
	}
	ch := find(t, fams, "mcp_client_operation_duration_seconds", map[string]string{
		LabelError: "-32601", LabelTool: "", LabelMethod: "tools/list", LabelVersion: "2025-11-25", LabelServer: "remote",
	}).GetHistogram()
	if ch.GetSampleCount() != 1 || ch.GetSampleSum() != 0.05 {
		t.Errorf("client histogram: %d %v", ch.GetSampleCount(), ch.GetSampleSum())
	}

	for _, c := range []struct {
		fam    string
		labels map[string]string
		want   float64
	}{
		{"mcp_bridge_rejected_requests_total", map[string]string{LabelServer: "srv", LabelReason: "401"}, 2},
		{"mcp_bridge_rejected_requests_total", map[string]string{LabelServer: "srv", LabelReason: "0"}, 1},
		{"mcp_bridge_requests_total", map[string]string{LabelServer: "srv", LabelPrincipal: "alice"}, 3},
		{"mcp_bridge_requests_total", map[string]string{LabelServer: "srv", LabelPrincipal: "anonymous"}, 1},
		{"mcp_bridge_child_restarts_total", map[string]string{LabelServer: "srv"}, 1},
		{"mcp_bridge_child_restarts_total", map[string]string{LabelServer: "remote"}, 0},
		{"mcp_bridge_input_rounds_total", map[string]string{LabelServer: "srv"}, 2},
		{"mcp_bridge_aggregate_absent_total", map[string]string{LabelServer: "stuck", LabelReason: "tools/list"}, 1},
		{"mcp_bridge_open_streams", map[string]string{LabelServer: "srv"}, 1},
		{"mcp_bridge_children", map[string]string{LabelServer: "srv"}, 5},
		{"mcp_bridge_legacy_sessions", map[string]string{LabelServer: "srv"}, 4},
		{"mcp_bridge_buffered_bytes", map[string]string{LabelServer: "srv"}, 5 << 30},
		{"mcp_bridge_inflight_requests", map[string]string{LabelServer: "srv"}, 6},
		{"go_info", map[string]string{"version": runtime.Version()}, 1},
	} {
		m := find(t, fams, c.fam, c.labels)
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.fam, c.labels, got, c.want)
		}
	}
	if n := len(fams["mcp_bridge_children"].GetMetric()); n != 1 {
		t.Errorf("mcp_bridge_children has %d series, want the one watched", n)
	}
	gc := fams["go_gc_duration_seconds"].GetMetric()[0].GetSummary()
	if len(gc.GetQuantile()) != 5 {
		t.Errorf("go_gc_duration_seconds: %d quantiles, want 5", len(gc.GetQuantile()))
	}
	value := func(name string) float64 {
		m := fams[name].GetMetric()[0]
		return m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	if value("go_goroutines") < 1 || value("go_threads") < 1 || value("go_memstats_alloc_bytes") <= 0 ||
		value("go_memstats_heap_inuse_bytes") < value("go_memstats_alloc_bytes") || value("go_memstats_sys_bytes") < value("go_memstats_heap_inuse_bytes") {
		t.Errorf("Go runtime metrics out of order:\n%s", testmain.Lines(text, "go_"))
	}
	if runtime.GOOS == "linux" {
		now := float64(time.Now().Unix())
		if st := value("process_start_time_seconds"); st > now+1 || st < now-7*24*3600 {
			t.Errorf("process_start_time_seconds = %v, now %v", st, now)
		}
		if value("process_resident_memory_bytes") <= 0 || value("process_virtual_memory_bytes") < value("process_resident_memory_bytes") ||
			value("process_open_fds") < 3 || value("process_max_fds") < value("process_open_fds") || value("process_cpu_seconds_total") < 0 {
			t.Errorf("process metrics out of order:\n%s", testmain.Lines(text, "process_"))
		}
	}

	// One HELP and TYPE per family, families sorted by name, series of a
	// family sorted by label values; the same text twice.
	var names []string
	for _, l := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(l, "# TYPE "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if !sort.StringsAreSorted(names) || len(names) != len(fams) {
		t.Errorf("families not once each in name order: %v", names)
	}
	again := scrape(t, tel)
	if strip(again) != strip(text) {
		t.Error("two scrapes differ beyond the runtime and process values")
	}
}

// strip drops the go_ and process_ lines, which change between scrapes.
func strip(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "go_") && !strings.Contains(l, "process_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSeriesSortedByLabelValues: series come out in label-value order
// whatever the order they were made in.
func TestSeriesSortedByLabelValues(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	for _, name := range []string{"zeta", "alpha", "mu", "beta"} {
		tel.Scope(name).Restarted()
	}
	var got []string
	for _, l := range strings.Split(scrape(t, tel), "\n") {
		if v, ok := strings.CutPrefix(l, `mcp_bridge_child_restarts_total{server="`); ok {
			got = append(got, v[:strings.IndexByte(v, '"')])
		}
	}
	if want := []string{"alpha", "beta", "mu", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("series order %v, want %v", got, want)
	}
}

// hostile are label values a client or an operator could get into
// /metrics: each must leave the text parseable and read back as itself
// (bytes that are not UTF-8 as U+FFFD).
var hostile = []string{
	`quote"d`, `back\slash`, "new\nline", `\"`, `\n`, "\\\n\"", "bad\xffutf8", "\xc3", "tab\there", "}", `{le="1"}`, "#", " ",
	"\u2028 unicode \U0001F600", strings.Repeat("huge", 16<<10),
}

// TestHostileLabelValues: server names (the operator's), tool names and
// principals (the clients') with quotes, backslashes, newlines, invalid
// UTF-8 or huge sizes: Prometheus's parser reads the whole scrape, and
// every value back as written or as its cap made it.
func TestHostileLabelValues(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	for _, v := range hostile {
		s := tel.Scope(v)
		s.Restarted()
		s.Request(v)
		s.observe("tools/call", v, "", "", 1)
	}
	fams := parse(t, scrape(t, tel))
	servers := map[string]bool{}
	for _, m := range fams["mcp_bridge_child_restarts_total"].GetMetric() {
		servers[labelsOf(m)[LabelServer]] = true
	}
	tools, principals := map[string]bool{}, map[string]bool{}
	for _, m := range fams["mcp_server_operation_duration_seconds"].GetMetric() {
		tools[labelsOf(m)[LabelTool]] = true
	}
	for _, m := range fams["mcp_bridge_requests_total"].GetMetric() {
		principals[labelsOf(m)[LabelPrincipal]] = true
	}
	for _, v := range hostile {
		if want := string([]rune(v)); !servers[want] {
			t.Errorf("server %.40q did not come back", v)
		}
		capped := v
		if len(v) > maxLabelLen || !utf8.ValidString(v) {
			capped = Other
		}
		if !tools[capped] || !principals[capped] {
			t.Errorf("tool/principal %.40q did not come back as %.40q", v, capped)
		}
	}
}

// scrapeOf is one GET of scrapeHandler over reg, as text.
func scrapeOf(t testing.TB, reg prometheus.Gatherer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	scrapeHandler(reg, zerolog.Nop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestHelpEscaped: a HELP text with a backslash and a newline is read
// back whole.
func TestHelpEscaped(t *testing.T) {
	const help = "a \\ b\nc \"d\""
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: help})
	reg.MustRegister(c)
	c.Inc()
	if got := parse(t, scrapeOf(t, reg))["x_total"].GetHelp(); got != help {
		t.Errorf("help %q, want %q", got, help)
	}
}

// FuzzLabelValue: whatever bytes a label value holds, labelValue makes it
// one client_golang takes, the text parses and the value reads back
// (invalid UTF-8 as U+FFFD).
func FuzzLabelValue(f *testing.F) {
	for _, v := range hostile[:len(hostile)-1] {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		reg := prometheus.NewRegistry()
		vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "help"}, []string{"a", "b"})
		reg.MustRegister(vec)
		vec.WithLabelValues(labelValue(v), "z").Inc()
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(scrapeOf(t, reg)))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := labelsOf(fams["x_total"].GetMetric()[0])["a"]; got != string([]rune(v)) {
			t.Fatalf("%q came back as %q", v, got)
		}
	})
}

// TestPrincipalCap: principals are the clients' (OAuth subjects): past
// MaxPrincipals distinct ones, every further one counts as _other.
func TestPrincipalCap(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	s := tel.Scope("srv")
	for range 2 { // twice: the second time, Request's one-lookup way
		for i := range MaxPrincipals + 22 {
			s.Request(fmt.Sprintf("https://issuer sub-%d", i))
		}
	}
	s.Request("")
	ms := parse(t, scrape(t, tel))["mcp_bridge_requests_total"].GetMetric()
	if len(ms) != MaxPrincipals+2 {
		t.Errorf("%d principal series, want %d + anonymous + _other", len(ms), MaxPrincipals)
	}
	if m := find(t, parse(t, scrape(t, tel)), "mcp_bridge_requests_total", map[string]string{LabelServer: "srv", LabelPrincipal: Other}); m.GetCounter().GetValue() != 44 {
		t.Errorf("_other = %v, want 44", m.GetCounter().GetValue())
	}
}

// TestMetricsHandlerHTTP: GET and HEAD only, the 0.0.4 content type
// when the scraper names no format, gzip when asked for.
func TestMetricsHandlerHTTP(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	tel.Scope("srv").Restarted()
	h := tel.Handler()
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/metrics", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d Allow=%q, want 405", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/metrics", nil))
	// client_golang appends "; escaping=underscores" (the metric-name
	// escaping it applied, a parameter scrapers ignore or read).
	if rec.Code != 200 || rec.Body.Len() != 0 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8") {
		t.Errorf("HEAD: %d, %d bytes, %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
	}
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "deflate, GZIP"} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", ae)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding %q: not gzipped", ae)
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parse(t, string(text))["mcp_bridge_child_restarts_total"]; !ok {
			t.Error("gzipped text lacks the counter")
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip;q=0, identity")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "" || !strings.Contains(rec.Body.String(), "# TYPE mcp_bridge_child_restarts_total counter") {
		t.Error("gzip;q=0 was gzipped anyway")
	}
}

// TestConcurrentObserveAndScrape: requests record (making new series as
// they go) while scrapes read; every scrape parses, and at the end the
// counts are exact. Run under -race.
func TestConcurrentObserveAndScrape(t *testing.T) {
	tel, _ := New(context.Background(), Options{Side: Server, Metrics: true})
	const workers, per = 4, 500
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := tel.Scope(fmt.Sprint("srv-", w%2))
			for i := range per {
				s.observe("tools/call", fmt.Sprint("tool-", i%40), "2026-07-28", "", float64(i%7)/10)
				s.Request(fmt.Sprint("p-", i%5))
				s.Rejected(400 + i%3)
				s.StreamOpened()
				s.StreamClosed()
			}
		}()
	}
	scrapes := 0
	var sw sync.WaitGroup
	sw.Add(1)
	go func() {
		defer sw.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			fams := parse(t, scrape(t, tel))
			for _, m := range fams["mcp_server_operation_duration_seconds"].GetMetric() {
				h := m.GetHistogram()
				b := h.GetBucket()
				for i := 1; i < len(b); i++ {
					if b[i].GetCumulativeCount() < b[i-1].GetCumulativeCount() {
						t.Errorf("buckets not cumulative: %v", b)
					}
				}
				if len(b) > 0 && math.IsInf(b[len(b)-1].GetUpperBound(), 1) && b[len(b)-1].GetCumulativeCount() != h.GetSampleCount() {
					t.Errorf("+Inf bucket %d != count %d", b[len(b)-1].GetCumulativeCount(), h.GetSampleCount())
				}
			}
			scrapes++
		}
	}()
	wg.Wait()
	close(done)
	sw.Wait()
	fams := parse(t, scrape(t, tel))
	total := func(fam string) (n float64) {
		for _, m := range fams[fam].GetMetric() {
			n += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
		return n
	}
	for fam, want := range map[string]float64{
		"mcp_server_operation_duration_seconds": workers * per,
		"mcp_bridge_requests_total":             workers * per,
		"mcp_bridge_rejected_requests_total":    workers * per,
		"mcp_bridge_open_streams":               0,
	} {
		if got := total(fam); got != want {
			t.Errorf("%s totals %v, want %v", fam, got, want)
		}
	}
	t.Logf("%d scrapes during the run", scrapes)
}
