//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	conformanceTimeout = 4 * time.Minute
	// conformanceSuite: "all" runs the active scenarios and the pending ones
	// (json-schema-2020-12, server-sse-polling); both runs use the same list.
	conformanceSuite = "all"
)

// confCheck is one entry of a scenario's checks.json.
type confCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage,omitempty"`
}

type confScenario struct {
	Name            string      `json:"name"`
	Success         int         `json:"success"`
	Failure         int         `json:"failure"`
	Warning         int         `json:"warning"`
	Info            int         `json:"info"`
	Checks          []confCheck `json:"checks"`
	FromSummaryOnly bool        `json:"fromSummaryOnly,omitempty"` // no checks.json: counts from stdout
}

func (s *confScenario) passes() bool { return s.Failure == 0 }

type confRun struct {
	Label     string                   `json:"label"`
	URL       string                   `json:"url"`
	Seconds   float64                  `json:"seconds"`
	Exit      int                      `json:"exit"`
	Order     []string                 `json:"order"`
	Scenarios map[string]*confScenario `json:"scenarios"`
	Passed    int                      `json:"passedChecks"`
	Failed    int                      `json:"failedChecks"`
}

// (c) The official conformance suite's server scenarios, run against the go-sdk
// everything-server twice: serving Streamable HTTP by itself (stateful, the
// 2025-era mode the scenarios use) and as a stdio child behind
// `mcp-bridge serve`. Whatever passes directly must pass through the bridge,
// and dns-rebinding-protection must pass through the bridge.
func TestConformanceServerScenarios(t *testing.T) {
	_, addr := startDirect(t, "everything-server-http", func(addr string) []string {
		return []string{env.everything, "-http", addr, "-stateless=false"}
	})
	direct := runConformance(t, "direct", "http://"+addr+"/mcp")

	b := startBridge(t, serveOpts{Child: []string{env.everything}})
	via := runConformance(t, "mcp-bridge", b.URL)

	table := conformanceTable(direct, via)
	t.Logf("conformance %s server scenarios (suite %q), Node %s, %s/%s, %d CPUs, %s:\n%s",
		"0.1.16", conformanceSuite, nodeVersion(env.node22), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		time.Now().UTC().Format("2006-01-02"), table)
	art := artifactDir(t)
	_ = os.WriteFile(filepath.Join(art, "conformance-table.md"), []byte(table), 0o644)
	if j, err := json.MarshalIndent([]*confRun{direct, via}, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(art, "conformance-results.json"), j, 0o644)
	}

	// The pinned suite (0.1.16, --suite all) has 32 server scenarios.
	if direct.Passed == 0 || len(direct.Order) < 30 {
		t.Fatalf("the direct run has %d scenarios and %d passing checks: the baseline is broken, nothing to compare (see %s)",
			len(direct.Order), direct.Passed, art)
	}
	for _, name := range direct.Order {
		d := direct.Scenarios[name]
		v, ok := via.Scenarios[name]
		switch {
		case !ok:
			t.Errorf("BRIDGE REGRESSION: scenario %s ran directly but has no result through mcp-bridge", name)
		case d.passes() && !v.passes():
			t.Errorf("BRIDGE REGRESSION: scenario %s passes directly but fails through mcp-bridge:\n%s", name, failedChecks(v))
		}
		if ok {
			for _, c := range downgraded(d, v) {
				t.Logf("note: %s", c)
			}
		}
	}
	dns, ok := via.Scenarios["dns-rebinding-protection"]
	switch {
	case !ok:
		t.Errorf("dns-rebinding-protection did not run through mcp-bridge")
	case !dns.passes() || dns.Success == 0:
		t.Errorf("dns-rebinding-protection must pass through mcp-bridge: %d ok, %d failed\n%s", dns.Success, dns.Failure, failedChecks(dns))
	}
}

// runConformance runs `conformance server --url URL --suite all -o DIR` with
// Node 22 and reads the per-scenario checks.json files it writes.
func runConformance(t *testing.T, label, url string) *confRun {
	t.Helper()
	out := filepath.Join(artifactDir(t), "conformance-"+label)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.node22,
		filepath.Join(env.nodeModules, "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", url, "--suite", conformanceSuite, "-o", out)
	cmd.Dir = env.interopDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	logPath := filepath.Join(out, "output.txt")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	runErr := cmd.Run()
	run := &confRun{Label: label, URL: url, Seconds: time.Since(t0).Seconds(), Exit: -1, Scenarios: map[string]*confScenario{}}
	if cmd.ProcessState != nil {
		run.Exit = cmd.ProcessState.ExitCode()
	}
	output, _ := os.ReadFile(logPath)
	if ctx.Err() != nil {
		t.Fatalf("conformance (%s) did not finish within %v\n%s", label, conformanceTimeout, tail(string(output), 40))
	}
	if err := parseConformance(run, string(output), out); err != nil {
		t.Fatalf("conformance (%s): %v (run error %v)\n%s", label, err, runErr, tail(string(output), 40))
	}
	t.Logf("conformance against %s (%s): %d scenarios, %d checks ok, %d checks failed, exit %d, %.1fs; output in %s",
		label, url, len(run.Order), run.Passed, run.Failed, run.Exit, run.Seconds, out)
	return run
}

var (
	summaryLineRE = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	resultDirRE   = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
)

func parseConformance(run *confRun, output, dir string) error {
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		m := summaryLineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		if _, dup := run.Scenarios[m[1]]; !dup {
			run.Order = append(run.Order, m[1])
		}
		run.Scenarios[m[1]] = &confScenario{Name: m[1], FromSummaryOnly: true, Success: p, Failure: f}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		m := resultDirRE.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var checks []confCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s/checks.json: %v", e.Name(), err)
		}
		s, ok := run.Scenarios[m[1]]
		if !ok {
			s = &confScenario{Name: m[1]}
			run.Scenarios[m[1]] = s
			run.Order = append(run.Order, m[1])
		}
		s.Checks, s.FromSummaryOnly = checks, false
		s.Success, s.Failure, s.Warning, s.Info = 0, 0, 0, 0
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				s.Success++
			case "FAILURE":
				s.Failure++
			case "WARNING":
				s.Warning++
			default:
				s.Info++
			}
		}
	}
	if len(run.Order) == 0 {
		return fmt.Errorf("no scenario results in the output or %s", dir)
	}
	for _, s := range run.Scenarios {
		run.Passed += s.Success
		run.Failed += s.Failure
	}
	return nil
}

func failedChecks(s *confScenario) string {
	var b strings.Builder
	for _, c := range s.Checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			fmt.Fprintf(&b, "  - %s %s (%s): %s\n", c.Status, c.ID, c.Name, c.ErrorMessage)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "  (%d failed per the suite's summary; no checks.json)\n", s.Failure)
	}
	return b.String()
}

// downgraded lists checks that succeed directly but not through the bridge
// (failures are reported separately; this shows INFO/WARNING/missing).
func downgraded(d, v *confScenario) []string {
	status := map[string]string{}
	for _, c := range v.Checks {
		status[c.ID] = c.Status
	}
	var out []string
	for _, c := range d.Checks {
		if c.Status != "SUCCESS" {
			continue
		}
		got, ok := status[c.ID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: check %s succeeds directly, absent through mcp-bridge", d.Name, c.ID))
		case got != "SUCCESS" && got != "FAILURE":
			msg := ""
			for _, vc := range v.Checks {
				if vc.ID == c.ID && vc.ErrorMessage != "" {
					msg = ": " + vc.ErrorMessage
				}
			}
			out = append(out, fmt.Sprintf("%s: check %s succeeds directly, %s through mcp-bridge%s", d.Name, c.ID, got, msg))
		}
	}
	return out
}

// cell renders a scenario's result without the "N passed, N failed" shape
// (CI reads that shape as a test runner's closing line).
func cell(s *confScenario) string {
	if s == nil {
		return "not run"
	}
	mark := "✓"
	if !s.passes() {
		mark = "✗"
	}
	c := fmt.Sprintf("%s %d/%d", mark, s.Success, s.Success+s.Failure)
	var extra []string
	if s.Warning > 0 {
		extra = append(extra, fmt.Sprintf("%d warning", s.Warning))
	}
	if n := infoOnly(s); n > 0 {
		extra = append(extra, fmt.Sprintf("%d info", n))
	}
	if len(extra) > 0 {
		c += " (" + strings.Join(extra, ", ") + ")"
	}
	return c
}

// infoOnly counts INFO checks whose id is not just a request/response log entry.
func infoOnly(s *confScenario) int {
	n := 0
	for _, c := range s.Checks {
		if c.Status == "INFO" && c.ID != "server-info" && !strings.HasPrefix(c.ID, "incoming-") && !strings.HasPrefix(c.ID, "outgoing-") {
			n++
		}
	}
	return n
}

func conformanceTable(direct, via *confRun) string {
	names := append([]string(nil), direct.Order...)
	for _, n := range via.Order {
		if _, ok := direct.Scenarios[n]; !ok {
			names = append(names, n)
		}
	}
	var b strings.Builder
	b.WriteString("| scenario | direct (everything-server -http, stateful) | through mcp-bridge serve (stdio child) |\n|---|---|---|\n")
	scenPass := func(r *confRun) int {
		n := 0
		for _, s := range r.Scenarios {
			if s.passes() {
				n++
			}
		}
		return n
	}
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", n, cell(direct.Scenarios[n]), cell(via.Scenarios[n]))
	}
	fmt.Fprintf(&b, "| **scenarios passing** | **%d of %d** | **%d of %d** |\n", scenPass(direct), len(direct.Order), scenPass(via), len(via.Order))
	fmt.Fprintf(&b, "| **checks ok / scored** | **%d/%d** | **%d/%d** |\n", direct.Passed, direct.Passed+direct.Failed, via.Passed, via.Passed+via.Failed)
	fmt.Fprintf(&b, "| suite wall time | %.1f s | %.1f s |\n", direct.Seconds, via.Seconds)
	var notes []string
	for _, n := range names {
		if d, v := direct.Scenarios[n], via.Scenarios[n]; d != nil && v != nil {
			notes = append(notes, downgraded(d, v)...)
		}
	}
	sort.Strings(notes)
	for _, n := range notes {
		b.WriteString("\n- " + n + "\n")
	}
	return b.String()
}
