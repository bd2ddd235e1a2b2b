//go:build linux

// manyremotes measures what a host pays for several remote MCP servers
// (issue #26): three httpecho remotes served to one stdio host by
//
//	config     one `mcp-bridge connect --config FILE` (tools a_echo, b_echo, c_echo)
//	bridge     three `mcp-bridge connect URL` processes
//	mcp-remote three mcp-remote processes (node)
//
// For each: the summed RSS of the process trees once every server has
// answered a call (idle), the peak under load, and calls/s at 1 and at -c
// calls in flight, the calls spread round-robin over the three servers.
// The host's side speaks the 2025 handshake (mcp-remote's era) everywhere.
// Run through scripts/bench/many-remotes.sh.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

func main() {
	httpecho := flag.String("httpecho", "", "the httpecho binary")
	bridge := flag.String("bridge", "", "the mcp-bridge binary")
	node := flag.String("node", "node", "node, for mcp-remote")
	mcpRemote := flag.String("mcp-remote", "", "mcp-remote's dist/proxy.js (empty: skip it)")
	n := flag.Int("n", 6000, "calls per phase")
	conc := flag.Int("c", 16, "calls in flight in the concurrent phase")
	tmp := flag.String("tmp", os.TempDir(), "directory for the config file and logs")
	out := flag.String("out", "", "write the results as JSON here")
	flag.Parse()
	defer load.KillAll()
	if err := run(*httpecho, *bridge, *node, *mcpRemote, *tmp, *out, *n, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "manyremotes:", err)
		load.KillAll()
		os.Exit(1)
	}
}

// result is one configuration's measurements.
type result struct {
	Config      string  `json:"config"`
	Procs       int     `json:"procs"`
	IdleKiB     int64   `json:"idle_rss_kib"`
	PeakKiB     int64   `json:"peak_rss_kib"`
	CallsPerSec float64 `json:"calls_per_sec_c1"`
	ConcPerSec  float64 `json:"calls_per_sec_cN"`
	Concurrency int     `json:"concurrency"`
	Errors      int     `json:"errors"`
}

func run(httpecho, bridge, node, mcpRemote, tmp, out string, n, conc int) error {
	var urls []string
	for i := range 3 {
		addrFile := filepath.Join(tmp, fmt.Sprintf("httpecho-%d.addr", i))
		os.Remove(addrFile)
		if _, err := load.StartProc([]string{httpecho, "-listen", "127.0.0.1:0", "-addr-file", addrFile}, nil, filepath.Join(tmp, "httpecho.log")); err != nil {
			return err
		}
		addr, err := waitFile(addrFile)
		if err != nil {
			return err
		}
		urls = append(urls, "http://"+addr+"/mcp")
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"a": map[string]string{"type": "http", "url": urls[0]},
		"b": map[string]string{"type": "http", "url": urls[1]},
		"c": map[string]string{"type": "http", "url": urls[2]},
	}}
	cfgFile := filepath.Join(tmp, "many-remotes.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		return err
	}
	configs := []struct {
		name  string
		argvs [][]string
		tools []string
		env   []string
	}{
		{"mcp-bridge connect --config (1 process, 3 remotes)", [][]string{{bridge, "connect", "--log-level", "warn", "--config", cfgFile}}, []string{"a_echo", "b_echo", "c_echo"}, nil},
		{"mcp-bridge connect ×3", [][]string{{bridge, "connect", "--log-level", "warn", urls[0]}, {bridge, "connect", "--log-level", "warn", urls[1]}, {bridge, "connect", "--log-level", "warn", urls[2]}}, []string{"echo"}, nil},
	}
	if mcpRemote != "" {
		var argvs [][]string
		for _, u := range urls {
			argvs = append(argvs, []string{node, mcpRemote, u, "--silent"})
		}
		configs = append(configs, struct {
			name  string
			argvs [][]string
			tools []string
			env   []string
		}{"mcp-remote 0.15.1 ×3", argvs, []string{"echo"}, []string{"MCP_REMOTE_CONFIG_DIR=" + filepath.Join(tmp, "mcp-auth")}})
	}
	var results []result
	for _, c := range configs {
		r, err := measure(c.name, c.argvs, c.tools, c.env, filepath.Join(tmp, "many-remotes.log"), n, conc)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "%-50s procs %2d  idle %6.1f MiB  peak %6.1f MiB  c=1 %7.0f calls/s  c=%d %7.0f calls/s  errors %d\n",
			r.Config, r.Procs, float64(r.IdleKiB)/1024, float64(r.PeakKiB)/1024, r.CallsPerSec, r.Concurrency, r.ConcPerSec, r.Errors)
	}
	if out != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		return os.WriteFile(out, b, 0o644)
	}
	return nil
}

// rr spreads calls round-robin over the servers: callers[i] (one per
// process) or tools[i] (one process, the aggregate's names).
type rr struct {
	callers []*load.StdioCaller
	tools   []string
	next    atomic.Int64
}

func (r *rr) Setup(context.Context) error { return nil }
func (r *rr) Close() error                { return nil }
func (r *rr) Call(ctx context.Context, s load.Spec) (load.Outcome, error) {
	i := int(r.next.Add(1))
	s.Tool = r.tools[i%len(r.tools)]
	return r.callers[i%len(r.callers)].Call(ctx, s)
}

func measure(name string, argvs [][]string, tools, env []string, logPath string, n, conc int) (result, error) {
	res := result{Config: name, Concurrency: conc}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &rr{tools: tools}
	defer func() {
		for _, c := range r.callers {
			c.Close()
		}
	}()
	for _, argv := range argvs {
		c, err := load.StartStdio(argv, env, logPath, true)
		if err != nil {
			return res, err
		}
		r.callers = append(r.callers, c)
		sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
		err = c.Setup(sctx)
		scancel()
		if err != nil {
			return res, err
		}
	}
	spec := load.Spec{Size: 128}
	// Every server answers once (a late join of the aggregate included)
	// before the idle sample.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 3; {
		if _, err := r.Call(ctx, spec); err != nil {
			if time.Now().After(deadline) {
				return res, fmt.Errorf("first calls: %w", err)
			}
			time.Sleep(100 * time.Millisecond) // a remote still joining
			continue
		}
		i++
	}
	load.Run(ctx, r, load.Phase{Name: "warmup", Concurrency: 4, Count: 600, Spec: spec})
	time.Sleep(500 * time.Millisecond) // let the runtime settle before the idle sample
	var samplers []*load.Sampler
	for _, c := range r.callers {
		m := load.Sample(c.Proc().Pid())
		res.IdleKiB += m.Tree
		res.Procs += m.Procs
		samplers = append(samplers, load.NewSampler(c.Proc().Pid(), 50*time.Millisecond))
	}
	one := load.Run(ctx, r, load.Phase{Name: "c1", Concurrency: 1, Count: n / 3, Duration: 20 * time.Second, Spec: spec})
	many := load.Run(ctx, r, load.Phase{Name: "cN", Concurrency: conc, Count: n, Duration: 20 * time.Second, Spec: spec})
	for _, s := range samplers {
		res.PeakKiB += s.Mark().Tree
		s.Stop()
	}
	res.CallsPerSec, res.ConcPerSec = one.CallsPerSec, many.CallsPerSec
	res.Errors = one.Errors + many.Errors
	if res.Errors > 0 {
		fmt.Fprintf(os.Stderr, "%s: errors: %s\n", name, strings.Join(append(one.ErrorSamples, many.ErrorSamples...), "; "))
	}
	return res, nil
}

func waitFile(path string) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
	return "", fmt.Errorf("%s: not written within 20s", path)
}
