package telemetry

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// A Scope is the Telemetry of one MCP server: its metrics carry the server's
// name, and the label children it uses are resolved once.
type Scope struct {
	t    *Telemetry
	side Side
	name string

	restart, rounds prometheus.Counter
	streams         prometheus.Gauge

	// The children the server's requests use, resolved once each: the
	// request path then does a lock-free map read and the child's atomic
	// update, not client_golang's label hashing and locked map
	// (WithLabelValues) per request.
	ops      readMap[opKey, prometheus.Observer]
	rejects  readMap[int, prometheus.Counter]
	requests readMap[string, prometheus.Counter]

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
		s.restart = m.restart.WithLabelValues(labelValue(name))
		s.rounds = m.rounds.WithLabelValues(labelValue(name))
		s.streams = m.streams.WithLabelValues(labelValue(name))
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
	g := s.t.met.watched
	w := &watch{s}
	g.mu.Lock()
	g.sources[w] = f
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.sources, w)
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
	if status < 100 || status > 999 {
		status = 0 // bounded: three digits or "0"
	}
	c, ok := s.rejects.load(status)
	if !ok {
		c = s.rejects.loadOrStore(status, func() prometheus.Counter {
			return s.t.met.rejects.WithLabelValues(labelValue(s.name), strconv.Itoa(status))
		})
	}
	c.Inc()
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
		c.Inc()
		return
	}
	p := s.principals.get(principal)
	c, ok := s.requests.load(p)
	if !ok {
		c = s.requests.loadOrStore(p, func() prometheus.Counter {
			return s.t.met.requests.WithLabelValues(labelValue(s.name), p)
		})
	}
	c.Inc()
}

// observe records one operation in the duration histogram.
func (s *Scope) observe(method, tool, version, errType string, seconds float64) {
	// The usual call names a series that exists: its raw labels are the
	// key, each of them having been admitted by its cap (a value the caps
	// turn into Other is never a key of its own, and one that is Other's
	// name would be turned into it) — one lookup instead of five.
	if h, ok := s.ops.peek(opKey{method, tool, version, errType}); ok {
		h.Observe(seconds)
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
		h = s.ops.loadOrStore(k, func() prometheus.Observer {
			return s.t.met.ops[s.side].WithLabelValues(k.method, k.tool, k.version, k.err, labelValue(s.name))
		})
	}
	h.Observe(seconds)
}
