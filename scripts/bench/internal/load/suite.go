//go:build linux

package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// SuiteConfig describes one target and the measurements to take.
type SuiteConfig struct {
	ID        string   // short key, e.g. serve.bridge
	Round     int      // repetition of the whole list (1, 2, ...)
	Name      string   // label in the results
	Group     string   // "serve" or "connect"
	Role      string   // "bridge", "peer" or "floor"
	Transport string   // "http", "stdio" or "sse" (HTTP+SSE, 2024-11-05: URL is the stream)
	Legacy    bool     // 2025-era handshake and session instead of 2026-07-28
	URL       string   // http: the MCP endpoint
	Spawn     []string // http: a server to start first; stdio: the child to talk to
	Env       []string
	Log       string // where the spawned process's output goes
	ServerPID int    // a process whose CPU is reported beside (the upstream of connect)

	Size          int           // result bytes of the ordinary calls
	Warmup        int           // calls before measuring
	LatCount      int           // calls at 1 in flight
	Count         int           // calls per throughput level
	PhaseDuration time.Duration // cap of each latency/throughput phase
	Levels        []int         // concurrency levels beside 1
	Streams       int           // concurrent slow (progress) calls; 0 skips
	StreamSteps   int           // progress notifications per slow call
	StreamDelay   time.Duration // between them
	LargeSizes    []int         // result sizes of the large-payload phase
	LargeReps     int
	StartTimeout  time.Duration
	IdleWait      time.Duration // after the first call, before the idle sample
}

// SuiteResult is everything measured for one target.
type SuiteResult struct {
	ID        string   `json:"id"`
	Round     int      `json:"round,omitempty"`
	Rounds    int      `json:"rounds,omitempty"` // set by the report when it merges rounds
	Name      string   `json:"name"`
	Group     string   `json:"group"`
	Role      string   `json:"role"`
	Transport string   `json:"transport"`
	Era       string   `json:"era"`
	URL       string   `json:"url,omitempty"`
	Command   []string `json:"command,omitempty"`
	Pid       int      `json:"pid,omitempty"`

	StartupMs    float64  `json:"startup_ms,omitempty"`
	IdleMem      Mem      `json:"idle_mem"`
	Latency      *Result  `json:"latency,omitempty"`
	Throughput   []Result `json:"throughput,omitempty"`
	Streams      *Result  `json:"streams,omitempty"`
	Large        []Result `json:"large,omitempty"`
	PeakMem      Mem      `json:"peak_mem"`
	Notes        []string `json:"notes,omitempty"`
	Failed       string   `json:"failed,omitempty"`
	TotalSeconds float64  `json:"total_s"`
}

// RunSuite measures one target and stops every process it started.
func RunSuite(ctx context.Context, cfg SuiteConfig) (res SuiteResult) {
	began := time.Now()
	res = SuiteResult{ID: cfg.ID, Round: cfg.Round, Name: cfg.Name, Group: cfg.Group, Role: cfg.Role, Transport: cfg.Transport, Era: "2026-07-28", URL: cfg.URL, Command: portableArgv(cfg.Spawn)}
	if cfg.Legacy {
		res.Era = "2025-11-25"
	}
	defer func() { res.TotalSeconds = round(time.Since(began).Seconds(), 2) }()
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	maxConns := cfg.Streams
	for _, l := range cfg.Levels {
		maxConns = max(maxConns, l)
	}
	client := &http.Client{Transport: NewTransport(maxConns)}
	defer client.CloseIdleConnections()

	var (
		caller Caller
		proc   *Proc
	)
	fail := func(format string, args ...any) SuiteResult {
		res.Failed = fmt.Sprintf(format, args...)
		return res
	}
	first := Spec{Size: cfg.Size}
	switch cfg.Transport {
	case "stdio":
		sc, err := StartStdio(cfg.Spawn, cfg.Env, cfg.Log, cfg.Legacy)
		if err != nil {
			return fail("start: %v", err)
		}
		defer sc.Close()
		proc, caller = sc.Proc(), sc
		sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
		err = sc.Setup(sctx)
		if err == nil {
			_, err = sc.Call(sctx, first)
		}
		cancel()
		if err != nil {
			return fail("first call: %v", err)
		}
		res.StartupMs = ms(time.Since(proc.Started))
	case "http":
		if len(cfg.Spawn) > 0 {
			p, err := StartProc(cfg.Spawn, cfg.Env, cfg.Log)
			if err != nil {
				return fail("start: %v", err)
			}
			proc = p
			defer p.Stop(3 * time.Second)
			d, err := firstAnswer(ctx, client, cfg, p)
			if err != nil {
				return fail("first call: %v", err)
			}
			res.StartupMs = ms(d)
		}
		hc := &HTTPCaller{Client: client, URL: cfg.URL, Legacy: cfg.Legacy}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := hc.Setup(sctx)
		cancel()
		if err != nil {
			return fail("setup: %v", err)
		}
		defer hc.Close()
		caller = hc
	case "sse":
		if len(cfg.Spawn) == 0 {
			return fail("-transport sse needs the server to start")
		}
		p, err := StartProc(cfg.Spawn, cfg.Env, cfg.Log)
		if err != nil {
			return fail("start: %v", err)
		}
		proc = p
		defer p.Stop(3 * time.Second)
		sc, d, err := firstSSEAnswer(ctx, client, cfg, p)
		if err != nil {
			return fail("first call: %v", err)
		}
		defer sc.Close()
		res.StartupMs = ms(d)
		caller = sc
	default:
		return fail("unknown transport %q", cfg.Transport)
	}
	pid := 0
	if proc != nil {
		pid = proc.Pid()
		res.Pid = pid
	}
	sampler := NewSampler(pid, 50*time.Millisecond)
	defer sampler.Stop()
	if cfg.IdleWait > 0 {
		time.Sleep(cfg.IdleWait)
	}
	res.IdleMem = Sample(pid)
	sampler.Mark()

	phase := func(p Phase) Result {
		cpu0, scpu0 := TreeCPU(pid), TreeCPU(cfg.ServerPID)
		sampler.Mark()
		r := Run(ctx, caller, p)
		peak := sampler.Mark()
		if pid > 0 {
			r.CPUSeconds = round(TreeCPU(pid)-cpu0, 3)
			r.PeakMem = &peak
			if r.Calls > 0 {
				r.CPUPer10k = round(r.CPUSeconds/float64(r.Calls)*1e4, 3)
			}
		}
		if cfg.ServerPID > 0 {
			r.ServerCPUSeconds = round(TreeCPU(cfg.ServerPID)-scpu0, 3)
			if r.Calls > 0 {
				r.ServerCPUPer10k = round(r.ServerCPUSeconds/float64(r.Calls)*1e4, 3)
			}
		}
		return r
	}
	if cfg.Warmup > 0 {
		Run(ctx, caller, Phase{Name: "warmup", Concurrency: 4, Count: cfg.Warmup, Duration: 2 * time.Second, Spec: first})
	}
	lat := phase(Phase{Name: "c1", Concurrency: 1, Count: cfg.LatCount, Duration: cfg.PhaseDuration, Spec: first})
	res.Latency = &lat
	for _, c := range cfg.Levels {
		if ctx.Err() != nil {
			break
		}
		// One unmeasured wave at the level first: the connections (and
		// their buffers) a level needs are set up once, and at 1,024 in
		// flight that set-up would otherwise be a large part of a short
		// phase. What stays in the measured phase is the steady state,
		// including any connection a target dials and closes per call.
		Run(ctx, caller, Phase{Name: fmt.Sprintf("warmup-c%d", c), Concurrency: c, Count: 2 * c, Duration: 2 * time.Second, Spec: first})
		res.Throughput = append(res.Throughput, phase(Phase{Name: fmt.Sprintf("c%d", c), Concurrency: c, Count: cfg.Count, Duration: cfg.PhaseDuration, Spec: first}))
	}
	if cfg.Streams > 0 && ctx.Err() == nil {
		s := phase(Phase{
			Name: "streams", Concurrency: cfg.Streams, Count: cfg.Streams, CallTimeout: 90 * time.Second,
			Spec: Spec{Size: cfg.Size, Progress: cfg.StreamSteps, DelayMs: int(cfg.StreamDelay / time.Millisecond)},
		})
		res.Streams = &s
	}
	for _, size := range cfg.LargeSizes {
		if ctx.Err() != nil {
			break
		}
		r := phase(Phase{Name: fmt.Sprintf("large-%d", size), Concurrency: 1, Count: cfg.LargeReps, Duration: 20 * time.Second, CallTimeout: 60 * time.Second, Spec: Spec{Size: size}})
		res.Large = append(res.Large, r)
	}
	res.PeakMem = sampler.Peak()
	if proc != nil && proc.Exited() {
		res.Notes = append(res.Notes, "the process exited during the run")
	}
	return res
}

// firstAnswer polls a freshly started HTTP server until one call succeeds
// and returns the time since the process started.
func firstAnswer(ctx context.Context, client *http.Client, cfg SuiteConfig, p *Proc) (time.Duration, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return 0, err
	}
	deadline := p.Started.Add(cfg.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return 0, errors.New("the server exited")
		}
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			last = err
			time.Sleep(time.Millisecond)
			continue
		}
		c.Close()
		hc := &HTTPCaller{Client: client, URL: cfg.URL, Legacy: cfg.Legacy}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = hc.Setup(cctx)
		if err == nil {
			_, err = hc.Call(cctx, Spec{Size: cfg.Size})
		}
		cancel()
		if err == nil {
			d := time.Since(p.Started)
			hc.Close()
			return d, nil
		}
		hc.Close()
		last = err
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("no answer within %s: %v", cfg.StartTimeout, last)
}

// CopyResult is the loopback copy floor.
type CopyResult struct {
	Bytes  int       `json:"bytes"`
	Cold   bool      `json:"cold"` // the destination was fresh memory (page faults included)
	Reps   int       `json:"reps"`
	Median float64   `json:"median_ms"`
	Min    float64   `json:"min_ms"`
	All    []float64 `json:"all_ms"`
}

// CopyFloor times moving size bytes over a fresh loopback TCP connection
// into one buffer: dial, write everything, read everything. Warm: the same
// destination buffer every time. Cold: a freshly mapped one each time, so
// the time includes faulting the pages in (expensive in some VMs).
func CopyFloor(size, reps int, cold bool) (CopyResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return CopyResult{}, err
	}
	defer ln.Close()
	src := make([]byte, size)
	for i := range src {
		src[i] = 'a' + byte(i%26)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.Write(src)
				c.Close()
			}()
		}
	}()
	dst := make([]byte, size)
	res := CopyResult{Bytes: size, Reps: reps, Cold: cold}
	var ds []time.Duration
	for range reps + 1 { // the first is a warm-up
		if cold {
			m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
			if err != nil {
				return res, err
			}
			dst = m
		}
		t0 := time.Now()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return res, err
		}
		n := 0
		for n < size {
			k, err := c.Read(dst[n:])
			n += k
			if err != nil {
				break
			}
		}
		d := time.Since(t0)
		c.Close()
		if cold {
			syscall.Munmap(dst)
		}
		if n != size {
			return res, fmt.Errorf("read %d of %d bytes", n, size)
		}
		ds = append(ds, d)
	}
	ds = ds[1:]
	for _, d := range ds {
		res.All = append(res.All, ms(d))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	res.Median = ms(ds[len(ds)/2])
	res.Min = ms(ds[0])
	return res, nil
}

// portableArgv is the command as recorded in results files, which are
// committed: a path under the working directory (run.sh runs from the
// repository root) is written relative to it, so no file names a path of the
// machine that ran the benchmark.
func portableArgv(argv []string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return argv
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if !filepath.IsAbs(a) {
			continue
		}
		if rel, err := filepath.Rel(wd, a); err == nil && filepath.IsLocal(rel) {
			out[i] = rel
		}
	}
	return out
}
