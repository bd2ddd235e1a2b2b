package telemetry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// ErrGRPC is New's error when the environment asks for OTLP over gRPC.
var ErrGRPC = errors.New("telemetry: OTLP over gRPC is not supported; use http/protobuf")

// exportConfig is what the OTEL_* environment says about exporting spans.
type exportConfig struct {
	url     string
	json    bool // http/json instead of http/protobuf
	gzip    bool
	headers []pair // never logged: they carry API keys
	timeout time.Duration
	tls     *tls.Config // nil: the system's roots, no client certificate
	batch   batchConfig
}

// batchConfig bounds the batch processor (OTEL_BSP_*).
type batchConfig struct {
	queue, maxBatch int
	delay, timeout  time.Duration
}

// exportConfigFromEnv reads the variables of the OTLP exporter and the
// batch span processor. For every exporter setting the _TRACES_ variable
// wins over the generic one ("the signal-specific configuration options
// take precedence"):
//
//	OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT     (TRACES_: used as is; generic: + "/v1/traces")
//	OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL     http/protobuf (default), http/json; grpc is an error
//	OTEL_EXPORTER_OTLP_[TRACES_]HEADERS      key=value,… percent-decoded
//	OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT      ms per batch, retries included (10000)
//	OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION  gzip | none (none)
//	OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE  CA bundle (PEM) to verify the collector
//	OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE, _CLIENT_KEY  for mutual TLS
//	OTEL_BSP_MAX_QUEUE_SIZE (2048), OTEL_BSP_SCHEDULE_DELAY (5000 ms),
//	OTEL_BSP_MAX_EXPORT_BATCH_SIZE (512), OTEL_BSP_EXPORT_TIMEOUT (30000 ms)
func exportConfigFromEnv(getenv func(string) string, log zerolog.Logger) (exportConfig, error) {
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	var c exportConfig
	switch p, _ := get("PROTOCOL"); p {
	case "", "http/protobuf":
	case "http/json":
		c.json = true
	case "grpc":
		return c, ErrGRPC
	default:
		return c, fmt.Errorf("telemetry: OTLP protocol %q: use http/protobuf or http/json", p)
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		c.url = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		// "For the per-signal variables (OTEL_EXPORTER_OTLP_<signal>_ENDPOINT),
		// the URL MUST be used as-is ... [for OTEL_EXPORTER_OTLP_ENDPOINT] the
		// signal path v1/traces is appended, relative to the base path".
		c.url = strings.TrimSuffix(v, "/") + "/v1/traces"
	} else {
		c.url = "http://localhost:4318/v1/traces" // the spec's default
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// url.Parse's error may quote the URL, which may hold a password.
		return c, errors.New("telemetry: the OTLP endpoint is not an http:// or https:// URL")
	}
	if h, name := get("HEADERS"); h != "" {
		ps, err := parseList(h)
		if err != nil {
			log.Warn().Str("variable", name).Err(err).Msg("telemetry: skipping malformed headers")
		}
		for _, p := range ps {
			if !validHeader(p.key, p.value) {
				log.Warn().Str("variable", name).Str("header", safeKey(p.key)).Msg("telemetry: skipping a header that HTTP cannot carry")
				continue
			}
			c.headers = append(c.headers, p)
		}
	}
	c.timeout = envMillis(log, 10*time.Second)(get("TIMEOUT"))
	switch v, name := get("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		log.Warn().Str(name, v).Msg("telemetry: unknown compression; sending uncompressed")
	}
	if c.tls, err = tlsFromEnv(get); err != nil {
		return c, err
	}
	c.batch = batchConfig{
		queue:    envInt(log, getenv, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		maxBatch: envInt(log, getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
		delay:    envMillis(log, 5*time.Second)(strings.TrimSpace(getenv("OTEL_BSP_SCHEDULE_DELAY")), "OTEL_BSP_SCHEDULE_DELAY"),
		timeout:  envMillis(log, 30*time.Second)(strings.TrimSpace(getenv("OTEL_BSP_EXPORT_TIMEOUT")), "OTEL_BSP_EXPORT_TIMEOUT"),
	}
	if c.batch.maxBatch > c.batch.queue {
		// Spec: "Must be less than or equal to OTEL_BSP_MAX_QUEUE_SIZE".
		c.batch.maxBatch = c.batch.queue
	}
	return c, nil
}

// envInt reads a positive integer variable, warning and using def when it
// is malformed.
func envInt(log zerolog.Logger, getenv func(string) string, name string, def int) int {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 1<<20 {
		log.Warn().Str(name, v).Int("default", def).Msg("telemetry: not a positive integer up to 1048576; using the default")
		return def
	}
	return n
}

// envMillis returns a reader of a variable in milliseconds (value, name).
func envMillis(log zerolog.Logger, def time.Duration) func(v, name string) time.Duration {
	return func(v, name string) time.Duration {
		if v == "" {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > int64(time.Hour/time.Millisecond) {
			log.Warn().Str(name, v).Int64("default_ms", def.Milliseconds()).Msg("telemetry: not a positive number of milliseconds up to an hour; using the default")
			return def
		}
		return time.Duration(n) * time.Millisecond
	}
}

// tlsFromEnv builds the TLS settings for the collector, or nil when the
// environment names no file.
func tlsFromEnv(get func(string) (string, string)) (*tls.Config, error) {
	ca, caVar := get("CERTIFICATE")
	cert, certVar := get("CLIENT_CERTIFICATE")
	key, keyVar := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", caVar, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("telemetry: %s: no PEM certificate in %s", caVar, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("telemetry: %s and %s go together", certVar, keyVar)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s/%s: %w", certVar, keyVar, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
