package telemetry

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestExportConfigFromEnv: the endpoint, protocol, header, timeout and
// batch rules of the OTel spec.
func TestExportConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		url  string
		json bool
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces", false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/base/"}, "http://c:4318/base/v1/traces", false},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other"}, "https://c/custom", false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "http://c/v1/traces", true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "http://c/v1/traces", false},
	} {
		c, err := exportConfigFromEnv(env(tc.env), zerolog.Nop())
		if err != nil || c.url != tc.url || c.json != tc.json {
			t.Errorf("%v: %q json=%v (%v), want %q json=%v", tc.env, c.url, c.json, err, tc.url, tc.json)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTLP over gRPC is not supported; use http/protobuf"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, "use http/protobuf or http/json"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"}, "not an http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:secret-pw@c:bad port"}, "not an http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "k.pem"}, "go together"},
	} {
		_, err := New(context.Background(), Options{Side: Server, Tracing: true, Getenv: env(tc.env)})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%v: New error %v, want one saying %q", tc.env, err, tc.want)
		}
	}
	_, err := New(context.Background(), Options{Side: Server, Tracing: true, Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})})
	if !errors.Is(err, ErrGRPC) {
		t.Errorf("grpc: %v, want ErrGRPC", err)
	}

	var log bytes.Buffer
	c, err := exportConfigFromEnv(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://c",
		"OTEL_EXPORTER_OTLP_HEADERS":         "ignored=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "api-key=s%3Dcr%2Cet-1 , x-b = 2,bad header=secret-2,x-c=a%0Ab-secret-3,novalue,=x",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":  "1500",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		"OTEL_BSP_MAX_QUEUE_SIZE":            "100",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE":     "1000",
		"OTEL_BSP_SCHEDULE_DELAY":            "-5",
		"OTEL_BSP_EXPORT_TIMEOUT":            "250",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
	}), zerolog.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.headers) != 2 || c.headers[0] != (pair{"api-key", "s=cr,et-1"}) || c.headers[1] != (pair{"x-b", "2"}) {
		t.Errorf("headers %q", c.headers)
	}
	if c.timeout != 1500*time.Millisecond || !c.gzip || c.batch.queue != 100 || c.batch.maxBatch != 100 ||
		c.batch.delay != 5*time.Second || c.batch.timeout != 250*time.Millisecond {
		t.Errorf("config %+v", c)
	}
	for _, secret := range []string{"secret", "s=cr", "s%3Dcr"} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log shows a header value (%s):\n%s", secret, log.String())
		}
	}
	if !strings.Contains(log.String(), "OTEL_BSP_SCHEDULE_DELAY") {
		t.Errorf("no warning about the bad schedule delay:\n%s", log.String())
	}
}

// TestBatchDefaults: without OTEL_BSP_* the queue is the specification's
// 2048 and a batch its 512 spans, on both sides (serve batched 128 for a
// while: docs/benchmarks.md, session 6, says why no more); the variables
// decide.
func TestBatchDefaults(t *testing.T) {
	for _, tc := range []struct {
		side Side
		env  map[string]string
		want int
	}{
		{Server, nil, 512},
		{Client, nil, 512},
		{Server, map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "128"}, 128},
		{Server, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "64"}, 64},
		{Client, map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"}, 100},
	} {
		vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
		for k, v := range tc.env {
			vars[k] = v
		}
		tel, err := New(context.Background(), Options{Side: tc.side, Tracing: true, Getenv: env(vars)})
		if err != nil {
			t.Fatal(err)
		}
		b := tel.tracer.batch.cfg
		if b.maxBatch != tc.want || (tc.env == nil && (b.queue != 2048 || b.delay != 5*time.Second || b.timeout != 30*time.Second)) {
			t.Errorf("side %v, %v: batch %+v, want a batch of %d", tc.side, tc.env, b, tc.want)
		}
		tel.Shutdown(context.Background())
	}
}

// TestResourceFromEnv: defaults, OTEL_RESOURCE_ATTRIBUTES percent-decoded
// over them, OTEL_SERVICE_NAME over both; a malformed list is dropped
// whole.
func TestResourceFromEnv(t *testing.T) {
	get := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for _, p := range resourceFromEnv(env(m), "9.9", zerolog.Nop()) {
			out[p.key] = p.value
		}
		return out
	}
	r := get(nil)
	if r["service.name"] != "mcp-bridge" || r["service.version"] != "9.9" || r["telemetry.sdk.language"] != "go" || r["telemetry.sdk.name"] != "mcp-bridge" {
		t.Errorf("defaults %v", r)
	}
	r = get(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=a, deployment.environment=prod%20eu,team=x%2Cy"})
	if r["service.name"] != "a" || r["deployment.environment"] != "prod eu" || r["team"] != "x,y" {
		t.Errorf("from OTEL_RESOURCE_ATTRIBUTES: %v", r)
	}
	r = get(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=a", "OTEL_SERVICE_NAME": "b"})
	if r["service.name"] != "b" {
		t.Errorf("OTEL_SERVICE_NAME does not win: %v", r)
	}
	r = get(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=a,bad=%zz"})
	if r["service.name"] != "mcp-bridge" || r["bad"] != "" {
		t.Errorf("a malformed list was partly used: %v", r)
	}
}

// FuzzParseList: the key=value list parser never panics, returns only
// non-empty keys, reads back what percent-encoding wrote, and its error
// never quotes a value.
func FuzzParseList(f *testing.F) {
	f.Add("a=1,b=2", "k", "v")
	f.Add(" a = %20x ,,=,b", "a b", "c,d=e")
	f.Add("%", "%", "%zz")
	f.Fuzz(func(t *testing.T, list, k, v string) {
		ps, err := parseList(list)
		for _, p := range ps {
			if p.key == "" {
				t.Fatalf("%q: empty key", list)
			}
		}
		// The error names keys, quoted (%q): a value that shows in a key
		// as written or as quoted is the key's, not a leak.
		inKey := false
		for _, m := range strings.Split(list, ",") {
			key, _, _ := strings.Cut(m, "=")
			key = strings.TrimSpace(key)
			inKey = inKey || strings.Contains(key, v) || strings.Contains(strconv.Quote(safeKey(key)), v)
		}
		if err != nil && len(v) > 8 && !inKey && strings.Contains(list, "="+v) && strings.Contains(err.Error(), v) {
			t.Fatalf("%q: error %q quotes a value", list, err)
		}
		if strings.TrimSpace(k) == "" || k != strings.TrimSpace(k) || v != strings.TrimSpace(v) {
			return
		}
		esc := func(s string) string { return strings.ReplaceAll(url.PathEscape(s), "=", "%3D") }
		ps, err = parseList(esc(k) + "=" + esc(v))
		if err != nil || len(ps) != 1 || ps[0].key != k || ps[0].value != v {
			t.Fatalf("%q=%q reads back as %q (%v)", k, v, ps, err)
		}
	})
}
