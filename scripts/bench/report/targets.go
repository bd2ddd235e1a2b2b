//go:build linux

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

// perRound evaluates f(ours, theirs) for each round both completed, as
// " (per round: a, b)"; "" with fewer than two rounds.
func (r *Results) perRound(ours, theirs string, f func(a, b *load.SuiteResult) (float64, bool), format string) string {
	rounds := map[int][2]*load.SuiteResult{}
	maxRound := 0
	for _, s := range r.raw {
		if s.Failed != "" || s.Latency == nil {
			continue
		}
		p := rounds[s.Round]
		switch s.ID {
		case ours:
			p[0] = s
		case theirs:
			p[1] = s
		default:
			continue
		}
		rounds[s.Round] = p
		maxRound = max(maxRound, s.Round)
	}
	var vals []string
	for i := 1; i <= maxRound; i++ {
		p := rounds[i]
		if p[0] == nil || p[1] == nil {
			continue
		}
		if v, ok := f(p[0], p[1]); ok {
			vals = append(vals, fmt.Sprintf(format, v))
		}
	}
	if len(vals) < 2 {
		return ""
	}
	return " (per round: " + strings.Join(vals, ", ") + ")"
}

func rateRatio(c int) func(a, b *load.SuiteResult) (float64, bool) {
	return func(a, b *load.SuiteResult) (float64, bool) {
		x, y := level(a, c), level(b, c)
		if x == nil || y == nil || y.CallsPerSec == 0 {
			return 0, false
		}
		return x.CallsPerSec / y.CallsPerSec, true
	}
}

func p50Diff(a, b *load.SuiteResult) (float64, bool) {
	return (a.Latency.P50 - b.Latency.P50) * 1000, true
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

func targets(w io.Writer, r *Results) {
	fmt.Fprintln(w, "### Targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | verdict |")
	fmt.Fprintln(w, "|---|---|---|")
	row := func(target, measured string, ok bool) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", target, measured, verdict(ok))
	}
	na := func(target, why string) { fmt.Fprintf(w, "| %s | %s | not measured |\n", target, why) }

	// speedup rows the calls/s at 64 in flight of a over b; show renders
	// their ratio, perRound its value in each round.
	speedup := func(target string, a, b *load.SuiteResult, show func(v float64) string, perRound string, min float64) {
		v, ok := rateRatio(64)(a, b)
		if !ok {
			return
		}
		x, y := level(a, 64).CallsPerSec, level(b, 64).CallsPerSec
		row(target, fmt.Sprintf("%.0f vs %.0f calls/s = %s", x, y, show(v))+r.perRound(a.ID, b.ID, rateRatio(64), perRound), v >= min)
	}
	times := func(v float64) string { return fmt.Sprintf("%.1f×", v) }
	// addedP50 rows the p50 at 1 in flight that a adds over the floor b.
	addedP50 := func(target string, a, b *load.SuiteResult) {
		d, _ := p50Diff(a, b)
		row(target, fmt.Sprintf("%.0f µs − %.0f µs = %+.0f µs", a.Latency.P50*1000, b.Latency.P50*1000, d)+r.perRound(a.ID, b.ID, p50Diff, "%+.0f µs"), d <= 100)
	}

	sb, sg, sf := r.get("serve.bridge"), r.get("serve.sg-stateful"), r.get("serve.floor-http")
	if sb != nil && sg != nil {
		speedup("serve: calls/s @64 ≥ 10× supergateway --stateful", sb, sg, times, "%.1f×", 10)
	} else {
		na("serve: calls/s @64 ≥ 10× supergateway --stateful", "a configuration is missing or failed")
	}
	if sb != nil && sf != nil {
		speedup("serve: calls/s @64 ≥ 50% of the bare net/http handler", sb, sf, func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }, "%.2f", 0.5)
		addedP50("serve: added p50 @1 ≤ 100 µs over the floor", sb, sf)
	} else {
		na("serve: against the bare-handler floor", "a configuration is missing or failed")
	}
	cb, mr, cf := r.get("connect.bridge"), r.get("connect.mcp-remote"), r.get("connect.floor-http")
	if cb != nil && mr != nil {
		speedup("connect: calls/s @64 ≥ 10× mcp-remote", cb, mr, times, "%.1f×", 10)
	} else {
		na("connect: calls/s @64 ≥ 10× mcp-remote", "a configuration is missing or failed")
	}
	if cb != nil && cf != nil {
		addedP50("connect: added p50 @1 ≤ 100 µs over the floor", cb, cf)
	}
	// Issue 13: connect keeps its speed at high concurrency.
	for _, b := range []*load.SuiteResult{cb, r.get("connect.bridge-legacy")} {
		base := level(b, 64)
		if base == nil || base.CallsPerSec <= 0 {
			continue
		}
		for _, c := range []int{256, 1024} {
			if x := level(b, c); x != nil {
				v := x.CallsPerSec / base.CallsPerSec
				row(fmt.Sprintf("%s: calls/s @%d ≥ 90%% of @64", b.Name, c), fmt.Sprintf("%.0f vs %.0f calls/s = %.0f%%", x.CallsPerSec, base.CallsPerSec, 100*v), v >= 0.9)
			}
		}
	}
	for _, b := range []*load.SuiteResult{sb, cb} {
		if b == nil {
			continue
		}
		idle := float64(b.IdleMem.Bridge) / 1024
		row(b.Name+": RSS idle ≤ 20 MiB", fmt.Sprintf("%.1f MiB (with children %.1f MiB)", idle, float64(b.IdleMem.Tree)/1024), idle > 0 && idle <= 20)
		if st := b.Streams; st != nil && st.PeakMem != nil {
			p := float64(st.PeakMem.Bridge) / 1024
			row(fmt.Sprintf("%s: RSS ≤ 150 MiB with %d open streams", b.Name, st.Concurrency),
				fmt.Sprintf("%.1f MiB peak (with children %.1f MiB); %d/%d completed, %d in flight at once", p, float64(st.PeakMem.Tree)/1024, st.Calls, st.Concurrency, st.MaxInFlight),
				p <= 150 && st.Calls == st.Concurrency)
		}
		row(b.Name+": start → first answered call ≤ 50 ms", fmt.Sprintf("%.1f ms", b.StartupMs), b.StartupMs > 0 && b.StartupMs <= 50)
		if l := large(b, 16<<20); l != nil {
			if cp := r.copyFloor(16<<20, false); cp != nil {
				v := l.P50 / cp.Median
				cold := ""
				if cc := r.copyFloor(16<<20, true); cc != nil {
					cold = fmt.Sprintf("; %.1f× the copy into fresh memory (%.1f ms)", l.P50/cc.Median, cc.Median)
				}
				row(b.Name+": 16 MiB result ≤ 3× loopback copy", fmt.Sprintf("%.1f ms vs %.1f ms = %.1f×%s", l.P50, cp.Median, v, cold), v <= 3)
			}
		}
		a4, a1, a16 := large(b, 4<<20), large(b, 1<<20), large(b, 16<<20)
		if a1 != nil && a4 != nil && a16 != nil {
			r1, r2 := a4.P50/a1.P50, a16.P50/a4.P50
			k, _ := exponent(b)
			row(b.Name+": time linear in size 1→16 MiB", fmt.Sprintf("%.1f / %.1f / %.1f ms: ×%.1f then ×%.1f per 4× size (exponent %.2f)", a1.P50, a4.P50, a16.P50, r1, r2, k), r1 <= 4.6 && r2 <= 4.6)
		}
	}
	fmt.Fprintln(w)
}
