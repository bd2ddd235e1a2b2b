package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/rs/zerolog"
)

// TracingFromEnv reports whether the OTEL_* environment asks for traces:
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the SDK is not disabled
// (OTEL_SDK_DISABLED=true) and OTEL_TRACES_EXPORTER, if set, lists otlp.
// Without one the bridge creates no span at all.
func TracingFromEnv(getenv func(string) string) bool {
	return TracingFromEnvLog(getenv, zerolog.Nop())
}

// TracingFromEnvLog is TracingFromEnv, warning on log about members of
// OTEL_TRACES_EXPORTER the bridge does not export to.
func TracingFromEnvLog(getenv func(string) string, log zerolog.Logger) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	otlp, ignored := tracesExporters(getenv("OTEL_TRACES_EXPORTER"))
	if len(ignored) > 0 {
		log.Warn().Strs("ignored", ignored).Bool("otlp", otlp).Msg("telemetry: OTEL_TRACES_EXPORTER names exporters mcp-bridge does not have; it exports traces only by OTLP")
	}
	if !otlp {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// tracesExporters reads OTEL_TRACES_EXPORTER: "a comma-separated list" of
// exporters, otlp when unset (OTel environment variable specification),
// whose enum values "SHOULD be interpreted in a case-insensitive manner".
// otlp reports whether otlp is among them; ignored lists the members that
// are neither otlp nor none, which the bridge has no exporter for.
func tracesExporters(v string) (otlp bool, ignored []string) {
	if strings.TrimSpace(v) == "" {
		return true, nil
	}
	for m := range strings.SplitSeq(v, ",") {
		switch m = strings.ToLower(strings.TrimSpace(m)); m {
		case "otlp":
			otlp = true
		case "none", "":
		default:
			ignored = append(ignored, m)
		}
	}
	return otlp, ignored
}

// tracer starts spans (ids, sampling) and hands ended ones to its batch
// processor. It is the bridge's whole tracing SDK: spans are Ops, their
// attributes fields, and the OTLP encoding happens on the processor's
// goroutine, off the request path.
type tracer struct {
	sampler sampler
	batch   *batcher
}

// initTracing reads the OTEL_* environment (see exportConfigFromEnv for
// the list) and starts the batch processor. A configuration the bridge
// cannot honour (gRPC, an unreadable certificate, an endpoint that is not
// http(s)) is an error; a bad tuning value is a warning and its default.
func (t *Telemetry) initTracing(_ context.Context, opts Options) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := exportConfigFromEnv(getenv, t.log)
	if err != nil {
		return err
	}
	smp, err := newSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		t.log.Warn().Err(err).Msg("telemetry: sampler")
	}
	res := resourceFromEnv(getenv, opts.Version, t.log)
	exp, err := newExporter(cfg, res, opts.Version, t.log)
	if err != nil {
		return err
	}
	t.tracer = &tracer{sampler: smp, batch: newBatcher(cfg.batch, exp, t.log)}
	return nil
}

// start gives o its span context: a child of parent when that is valid
// (same trace, its tracestate and random flag), else the root of a new
// trace; sampled as the sampler says.
func (tr *tracer) start(o *spanRecord, parent *spanContext) {
	sc := &o.sc
	if parent.valid() {
		sc.traceID, sc.state, sc.flags = parent.traceID, parent.state, parent.flags&flagRandom
		o.parentID = parent.spanID
	} else {
		newTraceID(&sc.traceID)
	}
	newSpanID(&sc.spanID)
	if tr.sampler.sample(parent, &sc.traceID) {
		sc.flags |= flagSampled
	}
}

// newTraceID and newSpanID draw random non-zero ids (W3C: all zeros is
// invalid). math/rand/v2's global source is ChaCha8 seeded from the OS,
// safe for concurrent use and cheap; ids need to be unique, not secret.
func newTraceID(id *[16]byte) {
	for *id == [16]byte{} {
		hi, lo := rand.Uint64(), rand.Uint64()
		binary.BigEndian.PutUint64(id[:8], hi)
		binary.BigEndian.PutUint64(id[8:], lo)
	}
}

func newSpanID(id *[8]byte) {
	for *id == [8]byte{} {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
}

func (tr *tracer) shutdown(ctx context.Context) error { return tr.batch.shutdown(ctx) }
