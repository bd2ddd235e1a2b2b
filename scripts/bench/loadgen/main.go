//go:build linux

// Command loadgen is the benchmark load generator for mcp-bridge and its
// peers. It calls the "echo" tool of scripts/bench/echo (directly over a
// pipe, or through a bridge) with many calls in flight and reports latency
// percentiles, calls/s and errors as JSON.
//
//	loadgen run   [flags] [-- COMMAND ARGS]   one load phase
//	loadgen suite [flags] [-- COMMAND ARGS]   every measurement of run.sh for one target
//	loadgen ab    [flags]                     two targets, short phases alternating (ab.go)
//	loadgen sessions [flags] [-- COMMAND ARGS] new 2025 sessions one by one: initialize and first call times (sessions.go)
//	loadgen copyfloor [-size N] [-reps N]     time to move N bytes over loopback TCP
//	loadgen freeport                          print a free loopback TCP port
//
// Transports: -transport http talks Streamable HTTP to -url with one
// keep-alive http.Transport (MaxIdleConnsPerHost >= concurrency);
// -transport stdio starts COMMAND (the echo child, or a bridge such as
// `mcp-bridge connect URL`) and talks newline-delimited JSON-RPC over its
// pipes, matching responses by id. -era modern sends 2026-07-28 requests
// (the _meta envelope, Mcp-Method/Mcp-Name headers); -era legacy first
// initializes one 2025-11-25 session and reuses it for every call.
//
// For suite with -transport http, COMMAND is the server to start (and the
// time to its first answered call is measured); the CPU (utime+stime from
// /proc/<pid>/stat) and memory (VmRSS) of that process and its descendants
// are reported.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		// Interrupted: make sure nothing we started outlives us.
		time.Sleep(5 * time.Second)
		load.KillAll()
		os.Exit(130)
	}()
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(ctx, os.Args[2:])
	case "suite":
		err = suiteCmd(ctx, os.Args[2:])
	case "ab":
		err = abCmd(ctx, os.Args[2:])
	case "sessions":
		err = sessionsCmd(ctx, os.Args[2:])
	case "copyfloor":
		err = copyCmd(os.Args[2:])
	case "freeport":
		err = freeport()
	default:
		usage()
	}
	load.KillAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: loadgen run|suite|ab|sessions|copyfloor|freeport [flags] [-- COMMAND ARGS]  (loadgen run -h for flags)")
	os.Exit(2)
}

type common struct {
	transport, era, url, out, log string
	size                          int
	env                           multi
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.transport, "transport", "http", "http, stdio or sse (HTTP+SSE, 2024-11-05: -url is the stream, always a session)")
	fs.StringVar(&c.era, "era", "modern", "modern (2026-07-28, stateless) or legacy (2025-11-25 session)")
	fs.StringVar(&c.url, "url", "", "http: the MCP endpoint, e.g. http://127.0.0.1:8080/mcp")
	fs.IntVar(&c.size, "size", 128, "result size in bytes (text returned by echo)")
	fs.StringVar(&c.out, "out", "", "write the JSON result here (default stdout)")
	fs.StringVar(&c.log, "log", "", "append the started process's stdout/stderr here")
	fs.Var(&c.env, "env", "NAME=VALUE for the started process (repeatable)")
}

func (c *common) check(cmd []string) error {
	switch {
	case c.era != "modern" && c.era != "legacy":
		return fmt.Errorf("-era %q: want modern or legacy", c.era)
	case (c.transport == "http" || c.transport == "sse") && c.url == "":
		return fmt.Errorf("-transport %s needs -url", c.transport)
	case c.transport == "stdio" && len(cmd) == 0:
		return fmt.Errorf("-transport stdio needs a command after --")
	case c.transport != "http" && c.transport != "stdio" && c.transport != "sse":
		return fmt.Errorf("-transport %q: want http, stdio or sse", c.transport)
	}
	return nil
}

func emit(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var c common
	c.register(fs)
	conc := fs.Int("c", 16, "calls in flight")
	n := fs.Int("n", 10000, "calls (0: until -duration)")
	dur := fs.Duration("duration", 0, "stop starting calls after this long (0: no limit)")
	progress := fs.Int("progress", 0, "progress notifications per call (sends a progressToken)")
	delay := fs.Int("delay-ms", 0, "delay before each progress notification")
	warmup := fs.Int("warmup", 200, "unmeasured calls first")
	fs.Parse(args)
	cmd := fs.Args()
	if err := c.check(cmd); err != nil {
		return err
	}
	var caller load.Caller
	switch c.transport {
	case "stdio":
		sc, err := load.StartStdio(cmd, c.env, c.log, c.era == "legacy")
		if err != nil {
			return err
		}
		defer sc.Close()
		caller = sc
	case "sse":
		sc, err := load.StartSSE(ctx, &http.Client{Transport: load.NewTransport(*conc)}, c.url)
		if err != nil {
			return err
		}
		defer sc.Close()
		caller = sc
	default:
		caller = &load.HTTPCaller{Client: &http.Client{Transport: load.NewTransport(*conc)}, URL: c.url, Legacy: c.era == "legacy"}
		defer caller.Close()
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err := caller.Setup(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	spec := load.Spec{Size: c.size, Progress: *progress, DelayMs: *delay}
	if *warmup > 0 {
		load.Run(ctx, caller, load.Phase{Concurrency: min(*conc, 8), Count: *warmup, Spec: load.Spec{Size: c.size}})
	}
	r := load.Run(ctx, caller, load.Phase{Name: fmt.Sprintf("c%d", *conc), Concurrency: *conc, Count: *n, Duration: *dur, Spec: spec})
	return emit(c.out, r)
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		mult := 1
		switch {
		case strings.HasSuffix(f, "MiB"):
			mult, f = 1<<20, strings.TrimSuffix(f, "MiB")
		case strings.HasSuffix(f, "KiB"):
			mult, f = 1<<10, strings.TrimSuffix(f, "KiB")
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

func suiteCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("suite", flag.ExitOnError)
	var c common
	c.register(fs)
	var cfg load.SuiteConfig
	fs.StringVar(&cfg.ID, "id", "", "short key of the target (the report looks configurations up by it)")
	fs.IntVar(&cfg.Round, "round", 1, "which repetition of the run this is (the report keeps the best round per measurement)")
	fs.StringVar(&cfg.Name, "name", "", "label of the target")
	fs.StringVar(&cfg.Group, "group", "", "serve or connect")
	fs.StringVar(&cfg.Role, "role", "bridge", "bridge, peer or floor")
	fs.IntVar(&cfg.ServerPID, "server-pid", 0, "also report the CPU of this process tree (the upstream server)")
	fs.IntVar(&cfg.Warmup, "warmup", 300, "unmeasured calls before the latency phase")
	fs.IntVar(&cfg.LatCount, "lat-n", 2000, "calls at 1 in flight")
	fs.IntVar(&cfg.Count, "n", 10000, "calls per concurrency level")
	fs.DurationVar(&cfg.PhaseDuration, "phase-max", 8*time.Second, "cap of each latency/throughput phase")
	levels := fs.String("levels", "16,64,256", "concurrency levels beside 1")
	fs.IntVar(&cfg.Streams, "streams", 1000, "concurrent slow calls (SSE streams) (0 skips)")
	fs.IntVar(&cfg.StreamSteps, "stream-steps", 5, "progress notifications per slow call")
	fs.DurationVar(&cfg.StreamDelay, "stream-delay", 200*time.Millisecond, "delay before each progress notification of a slow call")
	large := fs.String("large", "1MiB,4MiB,16MiB", "result sizes of the large-payload phase (empty skips)")
	fs.IntVar(&cfg.LargeReps, "large-reps", 5, "calls per large size")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", 60*time.Second, "how long to wait for the first answered call")
	fs.DurationVar(&cfg.IdleWait, "idle-wait", 500*time.Millisecond, "pause after the first call before the idle memory sample")
	fs.Parse(args)
	cmd := fs.Args()
	if err := c.check(cmd); err != nil {
		return err
	}
	var err error
	if cfg.Levels, err = ints(*levels); err != nil {
		return err
	}
	if cfg.LargeSizes, err = ints(*large); err != nil {
		return err
	}
	cfg.Transport, cfg.Legacy, cfg.URL, cfg.Spawn, cfg.Env, cfg.Log, cfg.Size = c.transport, c.era == "legacy", c.url, cmd, c.env, c.log, c.size
	if cfg.Name == "" {
		cfg.Name = strings.Join(cmd, " ")
	}
	t0 := time.Now()
	fmt.Fprintf(os.Stderr, "loadgen: %s/%s ...", cfg.Group, cfg.Name)
	res := load.RunSuite(ctx, cfg)
	summary(res, time.Since(t0))
	return emit(c.out, res)
}

func summary(r load.SuiteResult, d time.Duration) {
	if r.Failed != "" {
		fmt.Fprintf(os.Stderr, " FAILED after %.1fs: %s\n", d.Seconds(), r.Failed)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, " %.1fs: start %.1fms", d.Seconds(), r.StartupMs)
	if r.Latency != nil {
		fmt.Fprintf(&b, ", p50 %.3fms", r.Latency.P50)
	}
	for _, t := range append([]load.Result{*r.Latency}, r.Throughput...) {
		fmt.Fprintf(&b, ", %s %.0f/s", t.Name, t.CallsPerSec)
		if t.Errors > 0 {
			fmt.Fprintf(&b, " (%d errors)", t.Errors)
		}
	}
	if s := r.Streams; s != nil {
		fmt.Fprintf(&b, ", streams %d/%d", s.Calls, s.Concurrency)
	}
	for _, l := range r.Large {
		fmt.Fprintf(&b, ", %dMiB %.1fms", l.Size>>20, l.P50)
		if l.Errors > 0 {
			fmt.Fprintf(&b, " (%d errors)", l.Errors)
		}
	}
	fmt.Fprintln(os.Stderr, b.String())
}

func copyCmd(args []string) error {
	fs := flag.NewFlagSet("copyfloor", flag.ExitOnError)
	sizes := fs.String("size", "1MiB,4MiB,16MiB", "bytes to move (comma list)")
	reps := fs.Int("reps", 7, "repetitions (median reported)")
	out := fs.String("out", "", "write the JSON result here (default stdout)")
	fs.Parse(args)
	list, err := ints(*sizes)
	if err != nil {
		return err
	}
	var res []load.CopyResult
	for _, cold := range []bool{false, true} {
		for _, n := range list {
			r, err := load.CopyFloor(n, *reps, cold)
			if err != nil {
				return err
			}
			res = append(res, r)
		}
	}
	return emit(*out, res)
}

func freeport() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}
