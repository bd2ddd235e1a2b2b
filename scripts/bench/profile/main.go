// Command profile runs mcp-bridge's serve or connect direction in-process,
// built from the project's public packages exactly as cmd/mcp-bridge wires
// them, with CPU and allocation profiling on. The load comes from outside
// (scripts/bench/loadgen, as in run.sh), so the profiles show the bridge and
// nothing else.
//
//	profile serve   -listen 127.0.0.1:PORT -cpuprofile F -memprofile F -- COMMAND [ARGS]
//	profile connect -cpuprofile F -memprofile F URL    (stdio on stdin/stdout)
//
// -telemetry turns on what `--metrics-listen` and the OTEL_* variables turn
// on in the binary: metrics, and traces when OTEL_EXPORTER_OTLP_ENDPOINT is
// set (serve also keeps its access log, at info, as the binary does).
//
// -mutexprofile F and -blockprofile F add contention profiles;
// -pprof-listen 127.0.0.1:PORT serves net/http/pprof for snapshots mid-load
// (goroutines, heap).
//
// serve writes the profiles on SIGTERM/SIGINT; connect when stdin closes (or
// on a signal). run.sh profile drives both and prints `go tool pprof -top`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/connect"
	"github.com/mcp-bridge/mcp-bridge/bridge/serve"
	"github.com/mcp-bridge/mcp-bridge/bridge/telemetry"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: profile serve|connect [flags] ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	cpu := fs.String("cpuprofile", "", "write the CPU profile here")
	mem := fs.String("memprofile", "", "write the allocation (heap) profile here")
	listen := fs.String("listen", "127.0.0.1:8080", "serve: listen address")
	rate := fs.Int("memrate", 16<<10, "runtime.MemProfileRate (bytes per sample)")
	mutex := fs.String("mutexprofile", "", "write the mutex contention profile here")
	block := fs.String("blockprofile", "", "write the blocking profile here")
	debug := fs.String("pprof-listen", "", "serve net/http/pprof here while running (goroutine and heap snapshots mid-load)")
	inflight := fs.Int("max-inflight", 0, "serve: --max-inflight (0: the default)")
	withTel := fs.Bool("telemetry", false, "metrics on, traces as the OTEL_* environment says (as --metrics-listen and OTEL_* do)")
	fs.Parse(os.Args[2:])
	runtime.MemProfileRate = *rate
	if *mutex != "" {
		runtime.SetMutexProfileFraction(10)
	}
	if *block != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	if *debug != "" {
		ln, err := net.Listen("tcp", *debug)
		must(err)
		go http.Serve(ln, nil) // http.DefaultServeMux carries net/http/pprof
	}
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpu != "" {
		f, err := os.Create(*cpu)
		must(err)
		must(pprof.StartCPUProfile(f))
	}
	var tel *telemetry.Telemetry
	if *withTel {
		side := telemetry.Server
		if os.Args[1] == "connect" {
			side = telemetry.Client
		}
		t, err := telemetry.New(ctx, telemetry.Options{Side: side, Metrics: true, Tracing: telemetry.TracingFromEnv(os.Getenv), Logger: log})
		must(err)
		tel = t
		defer tel.Shutdown(context.Background())
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(ctx, *listen, *inflight, fs.Args(), tel, log)
	case "connect":
		if fs.NArg() != 1 {
			err = errors.New("connect: want one URL")
			break
		}
		err = runConnect(ctx, fs.Arg(0), tel, log)
	default:
		err = fmt.Errorf("unknown direction %q", os.Args[1])
	}
	if *cpu != "" {
		pprof.StopCPUProfile()
	}
	if *mem != "" {
		f, ferr := os.Create(*mem)
		must(ferr)
		must(pprof.Lookup("allocs").WriteTo(f, 0))
		f.Close()
	}
	for name, path := range map[string]string{"mutex": *mutex, "block": *block} {
		if path == "" {
			continue
		}
		f, ferr := os.Create(path)
		must(ferr)
		must(pprof.Lookup(name).WriteTo(f, 0))
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}

func runServe(ctx context.Context, listen string, inflight int, child []string, tel *telemetry.Telemetry, log zerolog.Logger) error {
	if len(child) == 0 {
		return errors.New("serve: missing the child command after --")
	}
	path, err := exec.LookPath(child[0])
	if err != nil {
		return err
	}
	h, err := serve.New(serve.Config{
		Command: func() *exec.Cmd {
			cmd := exec.Command(path, child[1:]...)
			cmd.Args[0] = child[0]
			return cmd
		},
		CheckHost:   true,
		MaxInflight: inflight,
		Telemetry:   tel,
		AccessLog:   true,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	h.Start()
	go srv.Serve(ln)
	<-ctx.Done()
	h.BeginShutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	srv.Shutdown(sctx)
	cancel()
	h.Close()
	return nil
}

func runConnect(ctx context.Context, url string, tel *telemetry.Telemetry, log zerolog.Logger) error {
	b, err := connect.New(connect.Config{URL: url, Telemetry: tel, Logger: log})
	if err != nil {
		return err
	}
	err = b.Run(ctx, os.Stdin, os.Stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
