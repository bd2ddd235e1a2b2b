package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

// telemetryFlags are the observability flags serve and connect share.
// Traces take no flag: the standard OTEL_* variables configure them.
type telemetryFlags struct {
	metricsListen string
}

func (t *telemetryFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.metricsListen, "metrics-listen", "", "serve Prometheus /metrics at `address` (host:port; \":9464\" binds loopback). Traces go over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set")
}

// start builds the process's Telemetry (nil when neither metrics nor traces
// are asked for) and the /metrics listener. stop shuts both down, flushing
// queued spans.
func (t *telemetryFlags) start(side telemetry.Side, log zerolog.Logger) (tel *telemetry.Telemetry, stop func(), err error) {
	stop = func() {}
	var addr string
	if t.metricsListen != "" {
		if addr, err = bindAddr("--metrics-listen", t.metricsListen); err != nil {
			return nil, stop, err
		}
	}
	tracing := telemetry.TracingFromEnvLog(os.Getenv, log)
	tel, err = telemetry.New(context.Background(), telemetry.Options{
		Side: side, Metrics: addr != "", Tracing: tracing, Version: versionString(), Logger: log,
	})
	if err != nil {
		return nil, stop, err
	}
	if tracing {
		// New refused what it cannot honour (grpc, a bad endpoint).
		log.Info().Msg("tracing: spans go to the OTLP endpoint of OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT")
	}
	var srv *http.Server
	served := make(chan struct{})
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, stop, fmt.Errorf("--metrics-listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", tel.Handler())
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Warn().Err(err).Msg("metrics listener stopped")
			}
		}()
		ev := log.Info()
		if loop, _ := isLoopbackAddr(addr); !loop {
			ev = log.Warn().Str("note", "metrics name the tools clients call; bound off loopback as asked")
		}
		ev.Str("url", "http://"+ln.Addr().String()+"/metrics").Msg("metrics serving")
	} else {
		close(served)
	}
	stop = func() {
		if srv != nil {
			srv.Close()
		}
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			log.Warn().Err(err).Msg("telemetry shutdown")
		}
	}
	return tel, stop, nil
}
