package telemetry

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Prometheus label names: the semconv attribute names with dots turned into
// underscores (Prometheus allows [a-zA-Z_][a-zA-Z0-9_]* only).
const (
	LabelMethod    = "mcp_method_name"
	LabelTool      = "gen_ai_tool_name"
	LabelVersion   = "mcp_protocol_version"
	LabelError     = "error_type"
	LabelServer    = "server" // the server's name in a multi-server gateway
	LabelReason    = "reason"
	LabelPrincipal = "principal"
	metricsPrefix  = "mcp_bridge_"
)

// durationBuckets are the ExplicitBucketBoundaries the semantic conventions
// give mcp.{server,client}.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// metrics is the registry of one Telemetry (client_golang's: it formats
// /metrics, negotiates the format and the compression, and supplies the
// go_* and process_* collectors), the vectors the request path updates,
// and the Gauges sources read at scrape time.
type metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	ops                                map[Side]*prometheus.HistogramVec
	rejects, restart, rounds, requests *prometheus.CounterVec
	absent                             *prometheus.CounterVec // aggregate.go
	streams                            *prometheus.GaugeVec
	watched                            *watchedGauges
}

func (t *Telemetry) initMetrics() {
	m := &metrics{reg: prometheus.NewRegistry(), watched: &watchedGauges{sources: map[*watch]func() Gauges{}}}
	// Both histograms are registered: a gateway serves some servers and is
	// the client of others through one registry. One that is never used
	// has no series, and client_golang leaves it out of /metrics.
	labels := []string{LabelMethod, LabelTool, LabelVersion, LabelError, LabelServer}
	m.ops = map[Side]*prometheus.HistogramVec{
		Server: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
			Help:    "MCP request duration as observed on the receiver from the time it was received until the result was sent (mcp.server.operation.duration).",
			Buckets: durationBuckets}, labels),
		Client: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_client_operation_duration_seconds",
			Help:    "MCP request duration as observed on the sender from the time it was sent until the response was received (mcp.client.operation.duration).",
			Buckets: durationBuckets}, labels),
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + name, Help: help}, labels)
	}
	m.rejects = counter("rejected_requests_total",
		"HTTP requests answered with an error status, by status code (400 malformed, 401 unauthenticated, 404 unknown session, 413 body too large, 429/503 over a limit, ...).",
		LabelServer, LabelReason)
	m.restart = counter("child_restarts_total",
		"Shared MCP server processes that exited and were restarted by the supervisor.",
		LabelServer)
	m.rounds = counter("input_rounds_total",
		"2026-07-28 input rounds: InputRequiredResults the bridge sent on behalf of a child's server-to-client requests.",
		LabelServer)
	m.requests = counter("requests_total",
		"HTTP requests to the MCP endpoint by the principal they were admitted as: the name of the static token (from --auth-token-file; unnamed: token: and a prefix of its SHA-256), the OAuth subject, or anonymous (no credentials, or refused). At most "+strconv.Itoa(MaxPrincipals)+" principals per server; later ones count as _other.",
		LabelServer, LabelPrincipal)
	m.absent = counter("aggregate_absent_total",
		"Answers of the aggregated endpoint a server was left out of, by server and step (initialize: it missed joinTimeout and joins later; a list method: it did not answer it within joinTimeout, or answered with an error).",
		LabelServer, LabelReason)
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricsPrefix + "open_streams",
		Help: "SSE response streams open to HTTP clients."}, []string{LabelServer})
	m.reg.MustRegister(m.ops[Server], m.ops[Client], m.rejects, m.restart, m.rounds, m.requests, m.absent, m.streams, m.watched,
		// The go_* collector reads runtime/metrics (no stop-the-world);
		// the process_* one reads /proc on Linux (and the OS's own calls
		// on macOS and Windows), and reports nothing where it cannot.
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = scrapeHandler(m.reg, t.log)
	t.met = m
}

// scrapeHandler answers a scrape of g through client_golang's handler:
// the format and the compression are the ones the scraper's Accept and
// Accept-Encoding ask for. /metrics is read-only: GET and HEAD only.
func scrapeHandler(g prometheus.Gatherer, log zerolog.Logger) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// A collector that fails (a /proc file unreadable) costs its
		// own families, not the scrape.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      scrapeLog{log},
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "telemetry: /metrics takes GET or HEAD", http.StatusMethodNotAllowed)
			return
		}
		if ae := r.Header.Get("Accept-Encoding"); ae != strings.ToLower(ae) {
			// Content codings are case-insensitive (RFC 9110 8.4.1);
			// client_golang matches "gzip" exactly.
			r = r.Clone(r.Context())
			r.Header.Set("Accept-Encoding", strings.ToLower(ae))
		}
		if r.Method == http.MethodHead {
			w = headWriter{w}
		}
		h.ServeHTTP(w, r)
	})
}

// headWriter answers HEAD with the headers a GET would get and no body
// (net/http's server drops it too, but not every ResponseWriter does).
type headWriter struct{ http.ResponseWriter }

func (headWriter) Write(b []byte) (int, error) { return len(b), nil }

// scrapeLog passes client_golang's scrape errors to the bridge's log.
type scrapeLog struct{ log zerolog.Logger }

func (l scrapeLog) Println(v ...any) {
	l.log.Warn().Msg("metrics: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}

// labelValue is v as client_golang accepts it: it refuses (WithLabelValues
// panics on) a value that is not UTF-8, so each invalid byte becomes
// U+FFFD. For the operator's names (servers); the clients' values pass the
// caps, which admit valid UTF-8 only.
func labelValue(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return string([]rune(v))
}

// Gauges are the state a served MCP server reports when /metrics is read
// (Scope.Watch): nothing is counted on the request path for them.
type Gauges struct {
	Children       int   // MCP server processes running
	LegacySessions int   // 2025 HTTP sessions open
	BufferedBytes  int64 // bytes held for clients (serve's budget)
	Inflight       int   // requests the children have not answered
}

var (
	descChildren = prometheus.NewDesc(metricsPrefix+"children", "MCP server processes running.", []string{LabelServer}, nil)
	descSessions = prometheus.NewDesc(metricsPrefix+"legacy_sessions", "2025 (Mcp-Session-Id) HTTP sessions open.", []string{LabelServer}, nil)
	descBuffered = prometheus.NewDesc(metricsPrefix+"buffered_bytes", "Bytes of child messages held for HTTP clients, counted against --max-buffered.", []string{LabelServer}, nil)
	descInflight = prometheus.NewDesc(metricsPrefix+"inflight_requests", "Requests sent to MCP server processes and not answered yet.", []string{LabelServer}, nil)
)

// watchedGauges is the collector of the watched Gauges. sources has one
// entry per Watch call: several Handlers may report under one server name
// (the aggregate's, one per caller; an old and a new Handler during a
// reload), and their Gauges add up.
type watchedGauges struct {
	mu      sync.Mutex
	sources map[*watch]func() Gauges
}

func (g *watchedGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descChildren
	ch <- descSessions
	ch <- descBuffered
	ch <- descInflight
}

func (g *watchedGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	type read struct {
		name string
		f    func() Gauges
	}
	reads := make([]read, 0, len(g.sources))
	for w, f := range g.sources {
		reads = append(reads, read{w.s.name, f})
	}
	g.mu.Unlock()
	// The sources take their own locks: call them outside ours.
	sums := map[string]Gauges{}
	for _, r := range reads {
		v := r.f()
		sum := sums[r.name]
		sum.Children += v.Children
		sum.LegacySessions += v.LegacySessions
		sum.BufferedBytes += v.BufferedBytes
		sum.Inflight += v.Inflight
		sums[r.name] = sum
	}
	for name, v := range sums {
		name = labelValue(name)
		ch <- prometheus.MustNewConstMetric(descChildren, prometheus.GaugeValue, float64(v.Children), name)
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(v.LegacySessions), name)
		ch <- prometheus.MustNewConstMetric(descBuffered, prometheus.GaugeValue, float64(v.BufferedBytes), name)
		ch <- prometheus.MustNewConstMetric(descInflight, prometheus.GaugeValue, float64(v.Inflight), name)
	}
}
