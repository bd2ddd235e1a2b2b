package telemetry

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A sampler decides, when a span begins, whether it is recorded and
// exported. A span that is not still has ids and passes its context on
// (flags 00), so the services after the bridge see one trace either way.
type sampler struct {
	parentBased bool
	// root decides for a span without a valid parent: always (ratio 1),
	// never (0), or by its trace id.
	ratio float64
	bound uint64 // trace ids whose last 8 bytes >> 1 are below it are sampled
}

// newSampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (the
// ratio of traceidratio samplers, default 1.0). An unknown name or a bad
// argument is an error that the caller reports before using the default,
// parentbased_always_on ("Default value: parentbased_always_on").
func newSampler(name, arg string) (sampler, error) {
	def := sampler{parentBased: true, ratio: 1}
	def.setBound()
	s := def
	var ratioArg bool
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "parentbased_always_on":
	case "always_on":
		s.parentBased = false
	case "always_off":
		s.parentBased, s.ratio = false, 0
	case "parentbased_always_off":
		s.ratio = 0
	case "traceidratio":
		s.parentBased, ratioArg = false, true
	case "parentbased_traceidratio":
		ratioArg = true
	default:
		return def, fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER=%q is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
	}
	if ratioArg && strings.TrimSpace(arg) != "" {
		r, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
			s.setBound()
			return s, fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER_ARG=%q is not a ratio in [0, 1]; using 1.0", arg)
		}
		s.ratio = r
	}
	s.setBound()
	return s, nil
}

func (s *sampler) setBound() {
	// The SDK's TraceIDRatioBased rule, so that a bridge and an SDK-based
	// service with one ratio agree on a trace.
	s.bound = uint64(s.ratio * (1 << 63))
}

// sample decides for a span of traceID whose parent is parent (invalid
// for a root span).
func (s *sampler) sample(parent *spanContext, traceID *[16]byte) bool {
	if s.parentBased && parent.valid() {
		return parent.sampled()
	}
	switch s.ratio {
	case 1:
		return true
	case 0:
		return false
	}
	return binary.BigEndian.Uint64(traceID[8:16])>>1 < s.bound
}
