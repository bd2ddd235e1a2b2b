package telemetry

import (
	"strconv"
	"sync"
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

// metrics is the registry of one Telemetry: the families the request path
// updates, and the Gauges sources read at scrape time.
type metrics struct {
	ops                                         map[Side]*family
	rejects, restart, rounds, streams, requests *family
	absent                                      *family // aggregate.go
	static                                      []*family

	mu sync.Mutex
	// sources are the watched Gauges, one per Watch call: several Handlers
	// may report under one server name (the aggregate's, one per caller;
	// an old and a new Handler during a reload), and their Gauges add up.
	sources map[*watch]func() Gauges

	proc procCache
}

func (t *Telemetry) initMetrics() {
	m := &metrics{sources: map[*watch]func() Gauges{}}
	// Both histograms are registered: a gateway serves some servers and is
	// the client of others through one registry. One that is never used
	// does not appear in /metrics.
	labels := []string{LabelMethod, LabelTool, LabelVersion, LabelError, LabelServer}
	m.ops = map[Side]*family{
		Server: newFamily("mcp_server_operation_duration_seconds",
			"MCP request duration as observed on the receiver from the time it was received until the result was sent (mcp.server.operation.duration).",
			kindHistogram, labels...),
		Client: newFamily("mcp_client_operation_duration_seconds",
			"MCP request duration as observed on the sender from the time it was sent until the response was received (mcp.client.operation.duration).",
			kindHistogram, labels...),
	}
	m.rejects = newFamily(metricsPrefix+"rejected_requests_total",
		"HTTP requests answered with an error status, by status code (400 malformed, 401 unauthenticated, 404 unknown session, 413 body too large, 429/503 over a limit, ...).",
		kindCounter, LabelServer, LabelReason)
	m.restart = newFamily(metricsPrefix+"child_restarts_total",
		"Shared MCP server processes that exited and were restarted by the supervisor.",
		kindCounter, LabelServer)
	m.rounds = newFamily(metricsPrefix+"input_rounds_total",
		"2026-07-28 input rounds: InputRequiredResults the bridge sent on behalf of a child's server-to-client requests.",
		kindCounter, LabelServer)
	m.streams = newFamily(metricsPrefix+"open_streams",
		"SSE response streams open to HTTP clients.",
		kindGauge, LabelServer)
	m.requests = newFamily(metricsPrefix+"requests_total",
		"HTTP requests to the MCP endpoint by the principal they were admitted as: the name of the static token (from --auth-token-file; unnamed: token: and a prefix of its SHA-256), the OAuth subject, or anonymous (no credentials, or refused). At most "+strconv.Itoa(MaxPrincipals)+" principals per server; later ones count as _other.",
		kindCounter, LabelServer, LabelPrincipal)
	m.absent = newFamily(metricsPrefix+"aggregate_absent_total",
		"Answers of the aggregated endpoint a server was left out of, by server and step (initialize: it missed joinTimeout and joins later; a list method: it did not answer it within joinTimeout, or answered with an error).",
		kindCounter, LabelServer, LabelReason)
	m.static = []*family{m.ops[Server], m.ops[Client], m.rejects, m.restart, m.rounds, m.streams, m.requests, m.absent}
	t.met = m
}

// Gauges are the state a served MCP server reports when /metrics is read
// (Scope.Watch): nothing is counted on the request path for them.
type Gauges struct {
	Children       int   // MCP server processes running
	LegacySessions int   // 2025 HTTP sessions open
	BufferedBytes  int64 // bytes held for clients (serve's budget)
	Inflight       int   // requests the children have not answered
}

// watched reads every watched Scope's Gauges into fresh families.
func (m *metrics) watched() []*family {
	m.mu.Lock()
	type read struct {
		name string
		f    func() Gauges
	}
	reads := make([]read, 0, len(m.sources))
	for w, f := range m.sources {
		reads = append(reads, read{w.s.name, f})
	}
	m.mu.Unlock()
	children := newFamily(metricsPrefix+"children", "MCP server processes running.", kindGauge, LabelServer)
	sessions := newFamily(metricsPrefix+"legacy_sessions", "2025 (Mcp-Session-Id) HTTP sessions open.", kindGauge, LabelServer)
	buffered := newFamily(metricsPrefix+"buffered_bytes", "Bytes of child messages held for HTTP clients, counted against --max-buffered.", kindGauge, LabelServer)
	inflight := newFamily(metricsPrefix+"inflight_requests", "Requests sent to MCP server processes and not answered yet.", kindGauge, LabelServer)
	// The sources take their own locks: call them outside ours.
	sums := map[string]Gauges{}
	var names []string
	for _, r := range reads {
		v := r.f()
		sum, ok := sums[r.name]
		if !ok {
			names = append(names, r.name)
		}
		sum.Children += v.Children
		sum.LegacySessions += v.LegacySessions
		sum.BufferedBytes += v.BufferedBytes
		sum.Inflight += v.Inflight
		sums[r.name] = sum
	}
	for _, name := range names {
		v := sums[name]
		children.with(name).g.set(float64(v.Children))
		sessions.with(name).g.set(float64(v.LegacySessions))
		buffered.with(name).g.set(float64(v.BufferedBytes))
		inflight.with(name).g.set(float64(v.Inflight))
	}
	return []*family{children, sessions, buffered, inflight}
}

// A Scope is the Telemetry of one MCP server: its metrics carry the server's
// name, and the label children it uses are resolved once.
type Scope struct {
	t    *Telemetry
	side Side
	name string

	restart, rounds *counter
	streams         *gauge

	// The children the server's requests use, resolved once each.
	ops      readMap[opKey, *histogram]
	rejects  readMap[int, *counter]
	requests readMap[string, *counter]

	methods, tools, versions, errors, principals capSet
}

type opKey struct{ method, tool, version, err string }

// Label caps: values come from clients (methods, tool names, versions,
// OAuth subjects) and from children (error codes), so each label keeps at
// most this many distinct values; later ones are reported as Other.
const (
	MaxMethods    = 64
	MaxTools      = 256
	MaxVersions   = 16
	MaxErrors     = 64
	MaxPrincipals = 256
	maxLabelLen   = 128
	maxSeries     = 8192 // operation series per server, whatever the caps allow

	// Other stands for every value past a label's cap.
	Other = "_other"

	// anonymous is the principal of a request without credentials.
	anonymous = "anonymous"
)

func newScope(t *Telemetry, side Side, name string) *Scope {
	s := &Scope{t: t, side: side, name: name}
	s.methods.init(MaxMethods, knownMethods...)
	s.tools.init(MaxTools)
	s.versions.init(MaxVersions)
	s.errors.init(MaxErrors, ErrorToolError)
	s.principals.init(MaxPrincipals, anonymous)
	if m := t.met; m != nil {
		s.restart = &m.restart.with(name).c
		s.rounds = &m.rounds.with(name).c
		s.streams = &m.streams.with(name).g
	}
	return s
}

// metrics reports whether s records metrics.
func (s *Scope) metrics() bool { return s != nil && s.t.met != nil }

// Tracing reports whether s records spans.
func (s *Scope) Tracing() bool { return s != nil && s.t.tracer != nil }

// A watch is one Watch call's registration.
type watch struct{ s *Scope }

// Watch makes /metrics report f's Gauges under s's server name until the
// returned function is called; the Gauges of several Watch calls under
// one name are added up.
func (s *Scope) Watch(f func() Gauges) (stop func()) {
	if !s.metrics() {
		return func() {}
	}
	m := s.t.met
	w := &watch{s}
	m.mu.Lock()
	m.sources[w] = f
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.sources, w)
		m.mu.Unlock()
	}
}

// Restarted counts a restart of the server's process.
func (s *Scope) Restarted() {
	if s.metrics() {
		s.restart.inc()
	}
}

// InputRound counts an InputRequiredResult sent to a client.
func (s *Scope) InputRound() {
	if s.metrics() {
		s.rounds.inc()
	}
}

// StreamOpened and StreamClosed track SSE responses open to clients.
func (s *Scope) StreamOpened() {
	if s.metrics() {
		s.streams.add(1)
	}
}

func (s *Scope) StreamClosed() {
	if s.metrics() {
		s.streams.add(-1)
	}
}

// Rejected counts an HTTP request answered with status (>= 400).
func (s *Scope) Rejected(status int) {
	if !s.metrics() {
		return
	}
	if status < 100 || status > 999 {
		status = 0 // bounded: three digits or "0"
	}
	c, ok := s.rejects.load(status)
	if !ok {
		c = s.rejects.loadOrStore(status, func() *counter { return &s.t.met.rejects.with(s.name, strconv.Itoa(status)).c })
	}
	c.inc()
}

// Request counts an HTTP request to the server's MCP endpoint under the
// principal it was admitted as ("" for none: anonymous). The names of
// static tokens are the operator's and few; OAuth subjects are the
// clients', so the label is capped (MaxPrincipals, then Other).
func (s *Scope) Request(principal string) {
	if !s.metrics() {
		return
	}
	if principal == "" {
		principal = anonymous
	}
	if c, ok := s.requests.peek(principal); ok { // as in observe
		c.inc()
		return
	}
	p := s.principals.get(principal)
	c, ok := s.requests.load(p)
	if !ok {
		c = s.requests.loadOrStore(p, func() *counter { return &s.t.met.requests.with(s.name, p).c })
	}
	c.inc()
}

// observe records one operation in the duration histogram.
func (s *Scope) observe(method, tool, version, errType string, seconds float64) {
	// The usual call names a series that exists: its raw labels are the
	// key, each of them having been admitted by its cap (a value the caps
	// turn into Other is never a key of its own, and one that is Other's
	// name would be turned into it) — one lookup instead of five.
	if h, ok := s.ops.peek(opKey{method, tool, version, errType}); ok {
		h.observe(seconds)
		return
	}
	k := opKey{s.methods.get(method), s.tools.get(tool), s.versions.get(version), s.errors.get(errType)}
	h, ok := s.ops.load(k)
	if !ok {
		if s.ops.len() >= maxSeries {
			// Past the series cap every new label set is one. (Requests
			// making series at once may each pass the check: the cap is
			// exceeded by at most their number.)
			k = opKey{Other, Other, Other, Other}
		}
		h = s.ops.loadOrStore(k, func() *histogram {
			return s.t.met.ops[s.side].with(k.method, k.tool, k.version, k.err, s.name).h
		})
	}
	h.observe(seconds)
}
