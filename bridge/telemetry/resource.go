package telemetry

import (
	"strings"

	"github.com/rs/zerolog"
)

// resourceFromEnv is the Resource every exported span belongs to:
// service.name "mcp-bridge", service.version, telemetry.sdk.* — then the
// attributes of OTEL_RESOURCE_ATTRIBUTES over those, then
// OTEL_SERVICE_NAME over service.name (spec: "If service.name is also
// provided in OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME takes
// precedence"). A malformed OTEL_RESOURCE_ATTRIBUTES is dropped whole with
// a warning (spec: "In case of any error, e.g. failure during the decoding
// process, the entire environment variable value SHOULD be discarded and
// an error SHOULD be reported").
func resourceFromEnv(getenv func(string) string, version string, log zerolog.Logger) []pair {
	res := []pair{{"service.name", "mcp-bridge"}}
	if version != "" {
		res = append(res, pair{"service.version", version})
	}
	res = append(res, pair{"telemetry.sdk.language", "go"}, pair{"telemetry.sdk.name", "mcp-bridge"})
	if version != "" {
		res = append(res, pair{"telemetry.sdk.version", version})
	}
	if env := getenv("OTEL_RESOURCE_ATTRIBUTES"); strings.TrimSpace(env) != "" {
		attrs, err := parseList(env)
		if err != nil {
			log.Warn().Err(err).Msg("telemetry: OTEL_RESOURCE_ATTRIBUTES is malformed; ignoring it all")
		} else {
			for _, a := range attrs {
				res = setPair(res, a.key, a.value)
			}
		}
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		res = setPair(res, "service.name", name)
	}
	return res
}

// setPair replaces key's value in ps, or appends it.
func setPair(ps []pair, key, value string) []pair {
	for i := range ps {
		if ps[i].key == key {
			ps[i].value = value
			return ps
		}
	}
	return append(ps, pair{key, value})
}
