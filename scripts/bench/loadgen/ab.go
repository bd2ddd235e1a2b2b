//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

// abCmd compares two long-lived targets, A and B, under the same load in
// many short phases that alternate between them (A B, then B A, ...). Why
// not one long phase each: on a shared 2-core VM the speed of the whole
// machine drifts by 10-40% within a minute (docs/benchmarks.md), which
// swamps a difference of a few percent between two phases run a minute
// apart; phases of a second or two, interleaved, see the same drift.
//
//	loadgen ab -rounds R -n N -c C -url-a URL -pid-a PID -url-b URL -pid-b PID
//	loadgen ab -transport stdio -rounds R -n N -c C -cmd-a 'ARGV' -cmd-b 'ARGV' [-env-b K=V ...]
//
// http: the script starts both servers; -pid-a/-pid-b name the process
// trees whose CPU is read. stdio: loadgen starts both commands (argv split
// on spaces) and talks to each over its pipes; -env-a/-env-b add to their
// environment. It prints one line per round and a summary, and writes
// the rounds as JSON to -out.
func abCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ab", flag.ExitOnError)
	transport := fs.String("transport", "http", "http or stdio")
	rounds := fs.Int("rounds", 20, "rounds; each runs one phase of A and one of B")
	n := fs.Int("n", 20000, "calls per phase")
	conc := fs.Int("c", 64, "calls in flight")
	warmup := fs.Int("warmup", 2000, "unmeasured calls to each target first")
	size := fs.Int("size", 128, "result size in bytes")
	out := fs.String("out", "", "write the rounds as JSON here")
	bFirst := fs.Bool("b-first", false, "stdio: start B before A (a process started later ran ~2% faster in A/A runs; alternate to cancel it)")
	var t [2]abTarget
	for i, s := range []string{"a", "b"} {
		fs.StringVar(&t[i].url, "url-"+s, "", "http: the MCP endpoint of "+strings.ToUpper(s))
		fs.IntVar(&t[i].pid, "pid-"+s, 0, "http: the process whose tree's CPU is "+strings.ToUpper(s)+"'s")
		fs.StringVar(&t[i].argv, "cmd-"+s, "", "stdio: the command of "+strings.ToUpper(s)+" (split on spaces)")
		fs.Var(&t[i].env, "env-"+s, "stdio: KEY=VALUE for "+strings.ToUpper(s)+" (repeatable)")
	}
	fs.Parse(args)
	starts := []int{0, 1}
	if *bFirst {
		starts = []int{1, 0}
	}
	for _, i := range starts {
		c, err := t[i].start(*transport, *conc)
		if err != nil {
			return fmt.Errorf("target %c: %w", 'A'+i, err)
		}
		defer c.Close()
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err = c.Setup(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("target %c: setup: %w", 'A'+i, err)
		}
		t[i].caller = c
		if w := load.Run(ctx, c, load.Phase{Concurrency: *conc, Count: *warmup, Spec: load.Spec{Size: *size}}); w.Errors > 0 {
			return fmt.Errorf("target %c: %d errors in the warmup: %v", 'A'+i, w.Errors, w.ErrorSamples)
		}
	}
	var res abResult
	fmt.Printf("%-5s %10s %10s %9s %9s %8s\n", "round", "A calls/s", "B calls/s", "A CPU/10k", "B CPU/10k", "B/A")
	for r := 0; r < *rounds; r++ {
		var row abRound
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0} // A B, B A, ...: drift within a round cancels
		}
		for _, i := range order {
			cpu0 := load.TreeCPU(t[i].pid)
			p := load.Run(ctx, t[i].caller, load.Phase{Concurrency: *conc, Count: *n, Spec: load.Spec{Size: *size}})
			if p.Errors > 0 {
				return fmt.Errorf("round %d, target %c: %d errors: %v", r+1, 'A'+i, p.Errors, p.ErrorSamples)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			row.CallsPerSec[i] = p.CallsPerSec
			row.CPUPer10k[i] = (load.TreeCPU(t[i].pid) - cpu0) * 10000 / float64(p.Calls)
		}
		res.Rounds = append(res.Rounds, row)
		fmt.Printf("%-5d %10.0f %10.0f %9.3f %9.3f %7.1f%%\n", r+1, row.CallsPerSec[0], row.CallsPerSec[1],
			row.CPUPer10k[0], row.CPUPer10k[1], 100*row.CallsPerSec[1]/row.CallsPerSec[0])
	}
	res.summarize()
	fmt.Printf("B/A calls/s: median of rounds %.1f%%, pooled %.1f%% (min %.1f%%, max %.1f%%); CPU per call: median B/A %.1f%%\n",
		res.MedianRatio, res.PooledRatio, res.MinRatio, res.MaxRatio, res.MedianCPURatio)
	if *out != "" {
		return emit(*out, res)
	}
	return nil
}

type abTarget struct {
	url, argv string
	pid       int
	env       multi
	caller    load.Caller
}

func (t *abTarget) start(transport string, conc int) (load.Caller, error) {
	switch transport {
	case "http":
		if t.url == "" {
			return nil, errors.New("-url-a and -url-b are required with -transport http")
		}
		return &load.HTTPCaller{Client: &http.Client{Transport: load.NewTransport(conc)}, URL: t.url}, nil
	case "stdio":
		argv := strings.Fields(t.argv)
		if len(argv) == 0 {
			return nil, errors.New("-cmd-a and -cmd-b are required with -transport stdio")
		}
		c, err := load.StartStdio(argv, t.env, "", false)
		if err != nil {
			return nil, err
		}
		t.pid = c.Proc().Pid()
		return c, nil
	}
	return nil, fmt.Errorf("-transport %q: want http or stdio", transport)
}

type abRound struct {
	CallsPerSec [2]float64 `json:"calls_per_sec"` // A, B
	CPUPer10k   [2]float64 `json:"cpu_s_per_10k"` // A, B: CPU seconds of the target's tree
}

type abResult struct {
	Rounds         []abRound `json:"rounds"`
	MedianRatio    float64   `json:"median_b_over_a_pct"`
	PooledRatio    float64   `json:"pooled_b_over_a_pct"` // total calls/s of B over A's, all rounds
	MinRatio       float64   `json:"min_b_over_a_pct"`
	MaxRatio       float64   `json:"max_b_over_a_pct"`
	MedianCPURatio float64   `json:"median_cpu_b_over_a_pct"`
}

func (r *abResult) summarize() {
	var ratios, cpu []float64
	var sum [2]float64
	for _, x := range r.Rounds {
		ratios = append(ratios, 100*x.CallsPerSec[1]/x.CallsPerSec[0])
		if x.CPUPer10k[0] > 0 {
			cpu = append(cpu, 100*x.CPUPer10k[1]/x.CPUPer10k[0])
		}
		sum[0] += x.CallsPerSec[0]
		sum[1] += x.CallsPerSec[1]
	}
	if len(ratios) == 0 {
		return
	}
	r.MedianRatio, r.MinRatio, r.MaxRatio = median(ratios), slices.Min(ratios), slices.Max(ratios)
	r.PooledRatio = 100 * sum[1] / sum[0]
	if len(cpu) > 0 {
		r.MedianCPURatio = median(cpu)
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
