package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strings"
)

// TracingFromEnv reports whether the OTEL_* environment asks for traces:
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the SDK is not disabled
// (OTEL_SDK_DISABLED=true) and OTEL_TRACES_EXPORTER, if set, names otlp.
// Without one the bridge creates no span at all.
func TracingFromEnv(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" && e != "otlp" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
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
