package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestCollectorRedirects: a collector's 307/308 to its own origin is
// followed and the spans arrive; one to another origin is refused at
// once — the other origin receives nothing (not the spans, not the
// OTEL_EXPORTER_OTLP_HEADERS) and the export is not retried.
func TestCollectorRedirects(t *testing.T) {
	t.Run("same origin", func(t *testing.T) {
		f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
			if i == 0 {
				w.Header().Set("Location", "/v1/traces?moved=1")
				w.WriteHeader(http.StatusPermanentRedirect)
				return true
			}
			return false
		})
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url}, nil)
		endSpans(tel, 2)
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(f.rcv.Spans()); n != 2 {
			t.Errorf("%d spans delivered, want 2", n)
		}
	})
	t.Run("other origin", func(t *testing.T) {
		other, otherURL := startFault(t, func(int, http.ResponseWriter) bool { return false })
		f, url := startFault(t, func(i int, w http.ResponseWriter) bool {
			w.Header().Set("Location", otherURL+"/v1/traces")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return true
		})
		tel := newTracing(t, Server, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=sekrit"}, nil)
		endSpans(tel, 2)
		err := tel.Shutdown(context.Background())
		if err == nil || !strings.Contains(err.Error(), "not followed") {
			t.Errorf("Shutdown: %v, want the refused redirect", err)
		}
		if n := len(f.attempts()); n != 1 {
			t.Errorf("%d attempts, want 1 (not retried)", n)
		}
		if n := len(other.attempts()); n != 0 {
			t.Errorf("the other origin received %d requests", n)
		}
	})
}
