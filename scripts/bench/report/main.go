//go:build linux

// Command report merges the per-target results of scripts/bench/run.sh
// (loadgen suite JSON files and the loopback copy floor) into one results
// file, and prints Markdown tables: per direction, latency, throughput,
// CPU, memory, start-up, open streams and large results; ratios against
// each peer and the floors; and the targets, met or missed.
//
//	report [-out results.json] [-md results.md] [-command "..."] [-copy copy.json] [-merge best|median] SUITE.json...
//	report -from results.json   (re-render an earlier results file)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

// Results is the merged results file.
type Results struct {
	Date    string              `json:"date"`
	Command string              `json:"command"`
	Mode    string              `json:"mode"`
	Rev     string              `json:"mcp_bridge_rev,omitempty"`
	LoadAvg string              `json:"loadavg,omitempty"`
	Machine Machine             `json:"machine"`
	Copy    []load.CopyResult   `json:"loopback_copy,omitempty"`
	Suites  []*load.SuiteResult `json:"suites"`
	Merge   string              `json:"merge,omitempty"` // how rounds are merged: best (default) or median

	raw []*load.SuiteResult // the unmerged rounds, while rendering
}

// Machine describes where the numbers were taken.
type Machine struct {
	NProc  int    `json:"nproc"`
	CPU    string `json:"cpu"`
	Kernel string `json:"kernel"`
	MemGiB int    `json:"mem_gib"`
	Go     string `json:"go"`
	Node   string `json:"node"`
}

func main() {
	out := flag.String("out", "", "write the merged results JSON here")
	md := flag.String("md", "", "also write the Markdown here")
	command := flag.String("command", "", "the command that produced the results")
	mode := flag.String("mode", "full", "full or quick")
	copyFile := flag.String("copy", "", "loopback copy floor JSON (loadgen copyfloor)")
	from := flag.String("from", "", "render this results file instead of merging")
	rev := flag.String("rev", "", "the mcp-bridge revision measured")
	loadavg := flag.String("load", "", "the machine's load averages around the run")
	merge := flag.String("merge", "best", "how repeated rounds are merged: best or median")
	flag.Parse()
	if *merge != "best" && *merge != "median" {
		check(fmt.Errorf("-merge %q: want best or median", *merge))
	}

	var res Results
	if *from != "" {
		b, err := os.ReadFile(*from)
		check(err)
		check(json.Unmarshal(b, &res))
	} else {
		res = Results{Date: time.Now().UTC().Format(time.RFC3339), Command: *command, Mode: *mode, Rev: *rev, LoadAvg: *loadavg, Machine: machine(), Merge: *merge}
		if *copyFile != "" {
			b, err := os.ReadFile(*copyFile)
			check(err)
			check(json.Unmarshal(b, &res.Copy))
		}
		for _, f := range flag.Args() {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "report:", err)
				continue
			}
			var s load.SuiteResult
			if err := json.Unmarshal(b, &s); err != nil {
				fmt.Fprintf(os.Stderr, "report: %s: %v\n", f, err)
				continue
			}
			res.Suites = append(res.Suites, &s)
		}
		if *out != "" {
			b, err := json.MarshalIndent(res, "", " ")
			check(err)
			check(os.WriteFile(*out, append(b, '\n'), 0o644))
		}
	}
	var sb strings.Builder
	render(&sb, &res)
	os.Stdout.WriteString(sb.String())
	if *md != "" {
		check(os.WriteFile(*md, []byte(sb.String()), 0o644))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.MemGiB = int(math.Round(float64(kb) / (1 << 20)))
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	return m
}

// ---- lookups and formatting

func (r *Results) get(id string) *load.SuiteResult {
	for _, s := range r.Suites {
		if s.ID == id && s.Failed == "" {
			return s
		}
	}
	return nil
}

func level(s *load.SuiteResult, c int) *load.Result {
	if s == nil {
		return nil
	}
	if c == 1 {
		return s.Latency
	}
	for i := range s.Throughput {
		if s.Throughput[i].Concurrency == c {
			return &s.Throughput[i]
		}
	}
	return nil
}

func large(s *load.SuiteResult, size int) *load.Result {
	if s == nil {
		return nil
	}
	for i := range s.Large {
		if s.Large[i].Size == size && s.Large[i].Calls > 0 {
			return &s.Large[i]
		}
	}
	return nil
}

func (r *Results) copyFloor(size int, cold bool) *load.CopyResult {
	for i := range r.Copy {
		if r.Copy[i].Bytes == size && r.Copy[i].Cold == cold {
			return &r.Copy[i]
		}
	}
	return nil
}

func mib(kib int64) string {
	if kib <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func usec(msv float64) string { return fmt.Sprintf("%.0f", msv*1000) }

func rate(p *load.Result) string {
	if p == nil {
		return "–"
	}
	s := fmt.Sprintf("%.0f", p.CallsPerSec)
	if p.Errors > 0 {
		s += fmt.Sprintf(" (%d err)", p.Errors)
	}
	return s
}

// ---- rendering

type group struct {
	key, title, floorID, bridgeID string
	peers                         []string
	floors                        []string
}

var groups = []group{
	{
		key: "serve", title: "serve (stdio server → Streamable HTTP)",
		floorID: "serve.floor-http", bridgeID: "serve.bridge",
		peers:  []string{"serve.sg-stateful", "serve.sg-stateless", "serve.mcp-proxy", "serve.mcp-proxy-modern"},
		floors: []string{"serve.floor-http", "serve.floor-stdio"},
	},
	{
		key: "connect", title: "connect (Streamable HTTP server → stdio)",
		floorID: "connect.floor-http", bridgeID: "connect.bridge",
		peers:  []string{"connect.mcp-remote", "connect.sg-streamable"},
		floors: []string{"connect.floor-http"},
	},
}

// mergeRounds folds repeated measurements of one configuration (run.sh
// repeats the whole list in full mode) into one: per phase the best round
// (lowest p50 at 1 in flight, highest calls/s at each concurrency, fastest
// start), the highest peak memory, and streams, large results and idle
// memory from the first round that has them. With median, the latency and
// throughput phases come from the median round instead of the best (on a
// loaded machine the best round is luck).
func mergeRounds(all []*load.SuiteResult, median bool) []*load.SuiteResult {
	var order []string
	by := map[string][]*load.SuiteResult{}
	for _, s := range all {
		if _, ok := by[s.ID]; !ok {
			order = append(order, s.ID)
		}
		by[s.ID] = append(by[s.ID], s)
	}
	var out []*load.SuiteResult
	for _, id := range order {
		rounds := by[id]
		var ok []*load.SuiteResult
		for _, s := range rounds {
			if s.Failed == "" && s.Latency != nil {
				ok = append(ok, s)
			}
		}
		if len(ok) == 0 {
			out = append(out, rounds[0])
			continue
		}
		m := *ok[0]
		for _, s := range ok {
			if s.Streams != nil || len(s.Large) > 0 {
				m = *s
				break
			}
		}
		m.Rounds = len(ok)
		m.Throughput = append([]load.Result(nil), m.Throughput...)
		for _, s := range ok {
			if s.Latency.Calls > 0 && (m.Latency.Calls == 0 || s.Latency.P50 < m.Latency.P50) {
				m.Latency = s.Latency
			}
			if s.StartupMs > 0 && (m.StartupMs == 0 || s.StartupMs < m.StartupMs) {
				m.StartupMs = s.StartupMs
			}
			m.PeakMem.Bridge = max(m.PeakMem.Bridge, s.PeakMem.Bridge)
			m.PeakMem.Tree = max(m.PeakMem.Tree, s.PeakMem.Tree)
			m.Notes = append(m.Notes, s.Notes...)
			for _, t := range s.Throughput {
				found := false
				for i := range m.Throughput {
					if m.Throughput[i].Concurrency == t.Concurrency {
						found = true
						if t.CallsPerSec > m.Throughput[i].CallsPerSec {
							m.Throughput[i] = t
						}
					}
				}
				if !found {
					m.Throughput = append(m.Throughput, t)
				}
			}
		}
		if median {
			medianPhases(&m, ok)
		}
		out = append(out, &m)
	}
	return out
}

// medianPhases sets m's latency and throughput phases to the median round
// of each (the lower middle one with an even count).
func medianPhases(m *load.SuiteResult, rounds []*load.SuiteResult) {
	pick := func(rs []load.Result, better func(a, b load.Result) bool) load.Result {
		sort.Slice(rs, func(i, j int) bool { return better(rs[i], rs[j]) })
		return rs[(len(rs)-1)/2]
	}
	var lat []load.Result
	for _, s := range rounds {
		if s.Latency.Calls > 0 {
			lat = append(lat, *s.Latency)
		}
	}
	if len(lat) > 0 {
		l := pick(lat, func(a, b load.Result) bool { return a.P50 > b.P50 })
		m.Latency = &l
	}
	for i := range m.Throughput {
		var rs []load.Result
		for _, s := range rounds {
			if t := level(s, m.Throughput[i].Concurrency); t != nil {
				rs = append(rs, *t)
			}
		}
		m.Throughput[i] = pick(rs, func(a, b load.Result) bool { return a.CallsPerSec < b.CallsPerSec })
	}
}

func render(w io.Writer, raw *Results) {
	merged := *raw
	merged.Suites = mergeRounds(raw.Suites, raw.Merge == "median")
	merged.raw = raw.Suites
	r := &merged
	rounds := 1
	for _, s := range r.Suites {
		rounds = max(rounds, s.Rounds)
	}
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d × %s, %d GiB, kernel %s, %s, Node %s. Date %s. Mode: %s.", m.NProc, m.CPU, m.MemGiB, m.Kernel, m.Go, m.Node, r.Date, r.Mode)
	if r.LoadAvg != "" {
		fmt.Fprintf(w, " Load average %s.", r.LoadAvg)
	}
	fmt.Fprint(w, "\n\n")
	if r.Command != "" {
		fmt.Fprintf(w, "Command: `%s`", r.Command)
		if r.Rev != "" {
			fmt.Fprintf(w, " (mcp-bridge %s)", r.Rev)
		}
		fmt.Fprint(w, "\n\n")
	}
	if rounds > 1 && r.Merge == "median" {
		fmt.Fprintf(w, "Each configuration was measured in %d rounds (the whole list, then again); the latency and throughput columns show per measurement the median round; open streams and large results come from round 1. The raw rounds are in the results JSON.\n\n", rounds)
	} else if rounds > 1 {
		fmt.Fprintf(w, "Each configuration was measured in %d rounds (the whole list, then again); the tables show per measurement the best round (lowest p50 at 1 in flight, highest calls/s at each concurrency, fastest start, highest peak RSS); open streams and large results come from round 1. The raw rounds are in the results JSON.\n\n", rounds)
	}
	for _, g := range groups {
		var suites []*load.SuiteResult
		for _, s := range r.Suites {
			if s.Group == g.key {
				suites = append(suites, s)
			}
		}
		if len(suites) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", g.title)
		throughputTable(w, suites)
		cpuTable(w, suites)
		resourceTable(w, r, suites)
		ratioTable(w, r, g)
		for _, s := range suites {
			if s.Failed != "" {
				fmt.Fprintf(w, "- **%s failed**: %s\n", s.Name, s.Failed)
			}
			for _, n := range s.Notes {
				fmt.Fprintf(w, "- %s: %s\n", s.Name, n)
			}
			for _, p := range allPhases(s) {
				if len(p.ErrorSamples) > 0 {
					fmt.Fprintf(w, "- %s, %s: %d errors, e.g. `%s`\n", s.Name, p.Name, p.Errors, trunc(p.ErrorSamples[0], 160))
				}
			}
		}
		fmt.Fprintln(w)
	}
	copyTable(w, r)
	targets(w, r)
}

func trunc(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "`", "'")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func allPhases(s *load.SuiteResult) []load.Result {
	var out []load.Result
	if s.Latency != nil {
		out = append(out, *s.Latency)
	}
	out = append(out, s.Throughput...)
	if s.Streams != nil {
		out = append(out, *s.Streams)
	}
	return append(out, s.Large...)
}

// levels returns the concurrency levels beside 1 that suites measured,
// ascending.
func levels(suites []*load.SuiteResult) []int {
	var out []int
	for _, s := range suites {
		for _, t := range s.Throughput {
			if !slices.Contains(out, t.Concurrency) {
				out = append(out, t.Concurrency)
			}
		}
	}
	slices.Sort(out)
	return out
}

func throughputTable(w io.Writer, suites []*load.SuiteResult) {
	lv := levels(suites)
	var head, rule strings.Builder
	for _, c := range lv {
		fmt.Fprintf(&head, " @%d |", c)
		rule.WriteString("---|")
	}
	fmt.Fprintf(w, "| configuration | era | p50 µs @1 | p99 µs @1 | calls/s @1 |%s CPU s / 10k calls @64 (bridge+children) | server CPU s / 10k @64 |\n", head.String())
	fmt.Fprintf(w, "|---|---|---|---|---|%s---|---|\n", rule.String())
	for _, s := range suites {
		if s.Failed != "" {
			fmt.Fprintf(w, "| %s | %s | failed | | |%s | |\n", s.Name, s.Era, strings.Repeat(" |", len(lv)))
			continue
		}
		l := s.Latency
		c64 := level(s, 64)
		cpu, scpu := "–", "–"
		if c64 != nil && c64.CPUPer10k > 0 {
			cpu = num(c64.CPUPer10k)
		}
		if c64 != nil && c64.ServerCPUPer10k > 0 {
			scpu = num(c64.ServerCPUPer10k)
		}
		var rates strings.Builder
		for _, c := range lv {
			fmt.Fprintf(&rates, " %s |", rate(level(s, c)))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |%s %s | %s |\n", s.Name, s.Era,
			usec(l.P50), usec(l.P99), rate(l), rates.String(), cpu, scpu)
	}
	fmt.Fprintln(w)
}

// cpuTable shows the CPU per call at each level: on a shared machine it
// shows how a target scales with calls in flight better than calls/s,
// which follow the CPU share the target got.
func cpuTable(w io.Writer, suites []*load.SuiteResult) {
	lv := levels(suites)
	var head, rule strings.Builder
	for _, c := range lv {
		fmt.Fprintf(&head, " @%d |", c)
		rule.WriteString("---|")
	}
	fmt.Fprintf(w, "CPU s per 10k calls at each level (target and its children / upstream server):\n\n| configuration |%s\n|---|%s\n", head.String(), rule.String())
	for _, s := range suites {
		if s.Failed != "" {
			continue
		}
		fmt.Fprintf(w, "| %s |", s.Name)
		for _, c := range lv {
			t := level(s, c)
			own, srv := "–", "–"
			if t != nil && t.CPUPer10k > 0 {
				own = num(t.CPUPer10k)
			}
			if t != nil && t.ServerCPUPer10k > 0 {
				srv = num(t.ServerCPUPer10k)
			}
			fmt.Fprintf(w, " %s / %s |", own, srv)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func resourceTable(w io.Writer, r *Results, suites []*load.SuiteResult) {
	fmt.Fprintln(w, "| configuration | start → first answer ms | idle RSS MiB (bridge / +children) | peak RSS MiB (bridge / +children) | open streams: done / in flight, wall s | streams peak RSS MiB (bridge / +children) | progress delivered | 1 MiB ms | 4 MiB ms | 16 MiB ms | 16 MiB ÷ copy | size exponent |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	cp := r.copyFloor(16<<20, false)
	for _, s := range suites {
		if s.Failed != "" {
			continue
		}
		start := "–"
		if s.StartupMs > 0 {
			start = num(s.StartupMs)
		}
		streams, smem, prog := "–", "–", "–"
		if st := s.Streams; st != nil {
			streams = fmt.Sprintf("%d / %d, %.1f", st.Calls, st.MaxInFlight, st.Seconds)
			if st.Errors > 0 {
				streams += fmt.Sprintf(" (%d err)", st.Errors)
			}
			if st.PeakMem != nil {
				smem = mib(st.PeakMem.Bridge) + " / " + mib(st.PeakMem.Tree)
			}
			if st.ProgressWant > 0 {
				prog = fmt.Sprintf("%d / %d", st.ProgressGot, st.ProgressWant)
			}
		}
		sizes := []string{"–", "–", "–"}
		for i, sz := range []int{1 << 20, 4 << 20, 16 << 20} {
			if l := large(s, sz); l != nil {
				sizes[i] = num(l.P50)
				if l.Errors > 0 {
					sizes[i] += fmt.Sprintf(" (%d err)", l.Errors)
				}
			} else if len(s.Large) > 0 {
				sizes[i] = "failed"
			}
		}
		ratio, exp := "–", "–"
		if l := large(s, 16<<20); l != nil && cp != nil {
			ratio = fmt.Sprintf("%.1f×", l.P50/cp.Median)
		}
		if k, ok := exponent(s); ok {
			exp = fmt.Sprintf("%.2f", k)
		}
		idle := mib(s.IdleMem.Bridge) + " / " + mib(s.IdleMem.Tree)
		peak := mib(s.PeakMem.Bridge) + " / " + mib(s.PeakMem.Tree)
		if s.Pid == 0 {
			idle, peak = "–", "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, start, idle, peak, streams, smem, prog, sizes[0], sizes[1], sizes[2], ratio, exp)
	}
	fmt.Fprintln(w)
}

// exponent k of time ∝ size^k between 1 and 16 MiB (1 = linear).
func exponent(s *load.SuiteResult) (float64, bool) {
	a, b := large(s, 1<<20), large(s, 16<<20)
	if a == nil || b == nil || a.P50 <= 0 {
		return 0, false
	}
	return math.Log(b.P50/a.P50) / math.Log(16), true
}

func ratioTable(w io.Writer, r *Results, g group) {
	b := r.get(g.bridgeID)
	if b == nil {
		return
	}
	fmt.Fprintf(w, "**%s against the others** (same run; >1× means mcp-bridge is better):\n\n", b.Name)
	lv := append([]int{1}, levels([]*load.SuiteResult{b})...)
	var head, rule strings.Builder
	for _, c := range lv[1:] {
		fmt.Fprintf(&head, " @%d |", c)
		rule.WriteString("---|")
	}
	fmt.Fprintf(w, "| against | calls/s @1 |%s p50 @1 (their ÷ ours) | CPU / call @64 (their ÷ ours) | 16 MiB time (their ÷ ours) |\n", head.String())
	fmt.Fprintf(w, "|---|---|%s---|---|---|\n", rule.String())
	for _, id := range append(append([]string{}, g.peers...), g.floors...) {
		o := r.get(id)
		if o == nil {
			continue
		}
		cells := []string{}
		for _, c := range lv {
			cells = append(cells, ratio(level(b, c), level(o, c), func(p *load.Result) float64 { return p.CallsPerSec }, false))
		}
		cells = append(cells, ratio(b.Latency, o.Latency, func(p *load.Result) float64 { return p.P50 }, true))
		cells = append(cells, ratio(level(b, 64), level(o, 64), func(p *load.Result) float64 { return p.CPUPer10k }, true))
		cells = append(cells, ratio(large(b, 16<<20), large(o, 16<<20), func(p *load.Result) float64 { return p.P50 }, true))
		fmt.Fprintf(w, "| %s | %s |\n", o.Name, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

// ratio of ours to theirs (or theirs to ours when inverse: smaller is better).
func ratio(ours, theirs *load.Result, f func(*load.Result) float64, inverse bool) string {
	if ours == nil || theirs == nil {
		return "–"
	}
	a, b := f(ours), f(theirs)
	if a <= 0 || b <= 0 {
		return "–"
	}
	v := a / b
	if inverse {
		v = b / a
	}
	if v >= 10 {
		return fmt.Sprintf("%.0f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func copyTable(w io.Writer, r *Results) {
	if len(r.Copy) == 0 {
		return
	}
	fmt.Fprintln(w, "### loopback copy floor (one TCP connection over 127.0.0.1, dial + write + read into one buffer; median)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| bytes | warm destination ms | fresh (page-faulted) destination ms |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, c := range r.Copy {
		if c.Cold {
			continue
		}
		cold := "–"
		if cc := r.copyFloor(c.Bytes, true); cc != nil {
			cold = num(cc.Median)
		}
		fmt.Fprintf(w, "| %d MiB | %s | %s |\n", c.Bytes>>20, num(c.Median), cold)
	}
	fmt.Fprintln(w)
}
