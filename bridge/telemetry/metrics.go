package telemetry

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Prometheus label names: the semconv attribute names with dots turned into
// underscores (Prometheus allows [a-zA-Z_][a-zA-Z0-9_]* only).
const (
	LabelMethod   = "mcp_method_name"
	LabelTool     = "gen_ai_tool_name"
	LabelVersion  = "mcp_protocol_version"
	LabelError    = "error_type"
	LabelServer   = "server" // the server's name in a multi-server gateway
	LabelReason   = "reason"
	metricsPrefix = "mcp_bridge_"
)

// durationBuckets are the ExplicitBucketBoundaries the semantic conventions
// give mcp.{server,client}.operation.duration.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

func (t *Telemetry) initMetrics() {
	t.reg = prometheus.NewRegistry()
	t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Both histograms are registered: a gateway serves some servers and is
	// the client of others through one registry. One that is never used
	// does not appear in /metrics.
	labels := []string{LabelMethod, LabelTool, LabelVersion, LabelError, LabelServer}
	t.ops = map[Side]*prometheus.HistogramVec{
		Server: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
			Help:    "MCP request duration as observed on the receiver from the time it was received until the result was sent (mcp.server.operation.duration).",
			Buckets: durationBuckets}, labels),
		Client: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_client_operation_duration_seconds",
			Help:    "MCP request duration as observed on the sender from the time it was sent until the response was received (mcp.client.operation.duration).",
			Buckets: durationBuckets}, labels),
	}
	t.rejects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "rejected_requests_total",
		Help: "HTTP requests answered with an error status, by status code (400 malformed, 401 unauthenticated, 404 unknown session, 413 body too large, 429/503 over a limit, ...).",
	}, []string{LabelServer, LabelReason})
	t.restart = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "child_restarts_total",
		Help: "Shared MCP server processes that exited and were restarted by the supervisor.",
	}, []string{LabelServer})
	t.rounds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "input_rounds_total",
		Help: "2026-07-28 input rounds: InputRequiredResults the bridge sent on behalf of a child's server-to-client requests.",
	}, []string{LabelServer})
	t.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: metricsPrefix + "open_streams",
		Help: "SSE response streams open to HTTP clients.",
	}, []string{LabelServer})
	t.gauges = &gaugeCollector{sources: map[*Scope]func() Gauges{}}
	t.reg.MustRegister(t.ops[Server], t.ops[Client], t.rejects, t.restart, t.rounds, t.streams, t.gauges)
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

// gaugeCollector reads every watched Scope's Gauges at scrape time.
type gaugeCollector struct {
	mu      sync.Mutex
	sources map[*Scope]func() Gauges
}

func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descChildren
	ch <- descSessions
	ch <- descBuffered
	ch <- descInflight
}

func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	type read struct {
		name string
		f    func() Gauges
	}
	reads := make([]read, 0, len(g.sources))
	for s, f := range g.sources {
		reads = append(reads, read{s.name, f})
	}
	g.mu.Unlock()
	// The sources take their own locks: call them outside ours.
	for _, r := range reads {
		v := r.f()
		ch <- prometheus.MustNewConstMetric(descChildren, prometheus.GaugeValue, float64(v.Children), r.name)
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(v.LegacySessions), r.name)
		ch <- prometheus.MustNewConstMetric(descBuffered, prometheus.GaugeValue, float64(v.BufferedBytes), r.name)
		ch <- prometheus.MustNewConstMetric(descInflight, prometheus.GaugeValue, float64(v.Inflight), r.name)
	}
}

// A Scope is the Telemetry of one MCP server: its metrics carry the server's
// name, and the label children it uses are resolved once.
type Scope struct {
	t    *Telemetry
	side Side
	name string

	restart prometheus.Counter
	rounds  prometheus.Counter
	streams prometheus.Gauge

	mu      sync.RWMutex
	ops     map[opKey]prometheus.Observer
	rejects map[int]prometheus.Counter

	methods, tools, versions, errors capSet
}

type opKey struct{ method, tool, version, err string }

// Label caps: values come from clients (methods, tool names, versions) and
// from children (error codes), so each label keeps at most this many
// distinct values; later ones are reported as Other.
const (
	MaxMethods  = 64
	MaxTools    = 256
	MaxVersions = 16
	MaxErrors   = 64
	maxLabelLen = 128
	maxSeries   = 8192 // operation series per server, whatever the caps allow

	// Other stands for every value past a label's cap.
	Other = "_other"
)

func newScope(t *Telemetry, side Side, name string) *Scope {
	s := &Scope{t: t, side: side, name: name,
		ops: map[opKey]prometheus.Observer{}, rejects: map[int]prometheus.Counter{},
	}
	s.methods.init(MaxMethods, knownMethods...)
	s.tools.init(MaxTools)
	s.versions.init(MaxVersions)
	s.errors.init(MaxErrors, ErrorToolError)
	if t.reg != nil {
		s.restart = t.restart.WithLabelValues(name)
		s.rounds = t.rounds.WithLabelValues(name)
		s.streams = t.streams.WithLabelValues(name)
	}
	return s
}

// metrics reports whether s records metrics.
func (s *Scope) metrics() bool { return s != nil && s.t.reg != nil }

// Tracing reports whether s records spans.
func (s *Scope) Tracing() bool { return s != nil && s.t.tracer != nil }

// Watch makes /metrics report f's Gauges under s's server name until the
// returned function is called.
func (s *Scope) Watch(f func() Gauges) (stop func()) {
	if !s.metrics() {
		return func() {}
	}
	g := s.t.gauges
	g.mu.Lock()
	g.sources[s] = f
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.sources, s)
		g.mu.Unlock()
	}
}

// Restarted counts a restart of the server's process.
func (s *Scope) Restarted() {
	if s.metrics() {
		s.restart.Inc()
	}
}

// InputRound counts an InputRequiredResult sent to a client.
func (s *Scope) InputRound() {
	if s.metrics() {
		s.rounds.Inc()
	}
}

// StreamOpened and StreamClosed track SSE responses open to clients.
func (s *Scope) StreamOpened() {
	if s.metrics() {
		s.streams.Inc()
	}
}

func (s *Scope) StreamClosed() {
	if s.metrics() {
		s.streams.Dec()
	}
}

// Rejected counts an HTTP request answered with status (>= 400).
func (s *Scope) Rejected(status int) {
	if !s.metrics() {
		return
	}
	s.mu.RLock()
	c, ok := s.rejects[status]
	s.mu.RUnlock()
	if !ok {
		if status < 100 || status > 999 {
			status = 0 // bounded: three digits or "0"
		}
		c = s.t.rejects.WithLabelValues(s.name, strconv.Itoa(status))
		s.mu.Lock()
		s.rejects[status] = c
		s.mu.Unlock()
	}
	c.Inc()
}

// observe records one operation in the duration histogram.
func (s *Scope) observe(method, tool, version, errType string, seconds float64) {
	k := opKey{s.methods.get(method), s.tools.get(tool), s.versions.get(version), s.errors.get(errType)}
	s.mu.RLock()
	o, ok := s.ops[k]
	n := len(s.ops)
	s.mu.RUnlock()
	if !ok {
		if n >= maxSeries {
			k = opKey{Other, Other, Other, Other}
		}
		o = s.t.ops[s.side].WithLabelValues(k.method, k.tool, k.version, k.err, s.name)
		s.mu.Lock()
		s.ops[k] = o
		s.mu.Unlock()
	}
	o.Observe(seconds)
}
