package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// A pair is one key=value of an OTEL_* list variable.
type pair struct{ key, value string }

// parseList reads the comma-separated key=value lists of
// OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS. OTel spec
// (resource): "The OTEL_RESOURCE_ATTRIBUTES environment variable ...
// values MUST be percent-decoded"; (exporter) headers are "a list of
// key-value pairs ... in the W3C Baggage format, except that additional
// semi-colon delimited metadata is not supported ... Values MUST be
// percent-decoded". Surrounding blanks are trimmed and empty members
// skipped. It returns the pairs it could read and an error naming the
// bad members by position only: a header value may be a secret, so
// neither the member nor its value appears in the error.
func parseList(s string) ([]pair, error) {
	var out []pair
	var errs []error
	for i := 0; s != ""; i++ {
		var m string
		m, s, _ = strings.Cut(s, ",")
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		k, v, ok := strings.Cut(m, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("member %d is not key=value", i+1))
			continue
		}
		dk, err1 := url.PathUnescape(k)
		dv, err2 := url.PathUnescape(v)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("member %d (%q): bad percent-encoding", i+1, safeKey(k)))
			continue
		}
		out = append(out, pair{dk, dv})
	}
	return out, errors.Join(errs...)
}

// safeKey shortens a key for an error message (keys are not secret, but a
// hostile environment could make them huge).
func safeKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// validHeader reports whether k: v can be sent as an HTTP header field
// (RFC 9110 token name; no control characters in the value).
func validHeader(k, v string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
