//go:build interop

package interop

// Running the driver clients (drivers/*.mjs) and reading the JSON summary
// each prints.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// driverResult is a driver client's run: its parsed JSON summary plus raw output.
type driverResult struct {
	Summary summary
	Stdout  string
	Stderr  string
	Exit    int
	Took    time.Duration
}

// runDriver runs scripts/interop/drivers/<script> with node and parses the
// one JSON summary it prints. The driver can reach a server over HTTP
// (--url) or spawn one over stdio (--command CMD -- ARGS); for the connect
// direction the command will be `mcp-bridge connect URL`. A driver that
// exits non-zero still has its summary parsed so the test can say why.
func runDriver(t *testing.T, script string, args ...string) *driverResult {
	t.Helper()
	r, err := execDriver(artifactDir(t), script, script, args...)
	checkDriver(t, script, args, r, err)
	return r
}

// checkDriver reports a driver run (from the test's goroutine).
func checkDriver(t *testing.T, script string, args []string, r *driverResult, err error) {
	t.Helper()
	if r != nil {
		t.Logf("%s %s: exit %d in %v", script, strings.Join(args, " "), r.Exit, r.Took.Round(time.Millisecond))
	}
	if err != nil {
		var stderr string
		if r != nil {
			stderr = tail(r.Stderr, 60)
		}
		t.Fatalf("%s: %v\nstderr:\n%s", script, err, stderr)
	}
	if !r.Summary.OK || r.Exit != 0 {
		t.Errorf("%s failed (exit %d): %s\nstderr:\n%s", script, r.Exit, r.Summary.errorText(), tail(r.Stderr, 40))
	}
}

// execDriver runs a driver, bounded by driverTimeout, saving its output in
// art as <name>.stdout.json and <name>.stderr.log. Safe to call from any
// goroutine; an error means it produced no usable summary.
func execDriver(art, name, script string, args ...string) (*driverResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driverTimeout)
	defer cancel()
	argv := append([]string{filepath.Join(env.interopDir, "drivers", script),
		"--timeout", strconv.Itoa(int((driverTimeout - 10*time.Second) / time.Millisecond))}, args...)
	cmd := groupCommand(ctx, env.node, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	runErr := cmd.Run()
	r := &driverResult{Stdout: stdout.String(), Stderr: stderr.String(), Exit: -1, Took: time.Since(t0)}
	base := strings.TrimSuffix(name, ".mjs")
	_ = os.WriteFile(filepath.Join(art, base+".stdout.json"), stdout.Bytes(), 0o644)
	_ = os.WriteFile(filepath.Join(art, base+".stderr.log"), stderr.Bytes(), 0o644)
	if cmd.ProcessState == nil {
		return r, fmt.Errorf("start: %v", runErr)
	}
	r.Exit = cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		return r, fmt.Errorf("did not finish within %v", driverTimeout)
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r.Summary); err != nil {
		return r, fmt.Errorf("printed no JSON summary (%v; exit %d)\nstdout:\n%s", err, r.Exit, tail(r.Stdout, 20))
	}
	return r, nil
}

// summary is the JSON a driver prints (see drivers/lib/common.mjs).
type summary struct {
	Driver string `json:"driver"`
	OK     bool   `json:"ok"`
	Errors []struct {
		Step    string          `json:"step"`
		Name    string          `json:"name"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"errors"`
	Transport       string                         `json:"transport"`
	ProtocolVersion string                         `json:"protocolVersion"`
	Era             string                         `json:"era"`
	Server          struct{ Name, Version string } `json:"server"`
	Steps           map[string]json.RawMessage     `json:"steps"`
	Handled         struct {
		Sampling    []json.RawMessage `json:"sampling"`
		Elicitation []struct {
			Fields  int    `json:"fields"`
			Message string `json:"message"`
		} `json:"elicitation"`
		Roots         int            `json:"roots"`
		Notifications map[string]int `json:"notifications"` // v2: change notifications by method
	} `json:"handled"`
	// Child is the stdio server the driver launched (--command), e.g.
	// mcp-bridge connect, and how it ended after the driver closed its stdin.
	Child *childExit `json:"child"`
	Wire  struct {
		Messages map[string]int `json:"messages"`
		Sent     map[string]int `json:"sent"`
		Acked    map[string]int `json:"acked"`
		Progress int            `json:"progress"`
		// ProgressByToken counts notifications/progress by token (JSON text).
		ProgressByToken map[string]int `json:"progressByToken"`
		ByStream        map[string]int `json:"byStream"` // "GET notifications/message" -> count
		HTTP            struct {
			Requests               map[string]int `json:"requests"`
			Statuses               map[string]int `json:"statuses"`
			ContentTypes           map[string]int `json:"contentTypes"`
			SessionIDs             []string       `json:"sessionIds"`
			ProtocolVersionHeaders []string       `json:"protocolVersionHeaders"`
			Replicas               map[string]int `json:"replicas"` // Mcp-Bridge-Replica values -> responses
		} `json:"http"`
	} `json:"wire"`
}

func (s *summary) errorText() string {
	if len(s.Errors) == 0 {
		return "no step error recorded"
	}
	var parts []string
	for _, e := range s.Errors {
		parts = append(parts, fmt.Sprintf("[%s] %s: %s (code %s)", e.Step, e.Name, e.Message, e.Code))
	}
	return strings.Join(parts, "; ")
}

// childExit is how a stdio server launched by a driver ended: the SDKs'
// close() ends its stdin, waits 2 s, sends SIGTERM, waits 2 s, sends
// SIGKILL. Exit code 0 with no signal is a clean exit (at stdin EOF, or on
// the SIGTERM, which mcp-bridge handles by exiting 0).
type childExit struct {
	PID                   int      `json:"pid"`
	Exited                bool     `json:"exited"`
	ExitCode              *int     `json:"exitCode"`
	Signal                *string  `json:"signal"`
	ExitAfterStdinCloseMs *float64 `json:"exitAfterStdinCloseMs"`
}

func (c *childExit) String() string {
	if c == nil {
		return "no child recorded"
	}
	s := fmt.Sprintf("pid %d", c.PID)
	switch {
	case !c.Exited:
		s += " had not exited when the driver finished"
	case c.Signal != nil:
		s += " was killed by " + *c.Signal
	case c.ExitCode != nil:
		s += fmt.Sprintf(" exited %d", *c.ExitCode)
	}
	if c.ExitAfterStdinCloseMs != nil {
		s += fmt.Sprintf(" %.0f ms after its stdin was closed", *c.ExitAfterStdinCloseMs)
	}
	return s
}

func (c *childExit) clean() bool {
	return c != nil && c.Exited && c.Signal == nil && c.ExitCode != nil && *c.ExitCode == 0
}

// Step result shapes (a step's JSON also has ok and ms).
type (
	stepBase    struct{ OK bool }
	connectStep struct {
		stepBase
		ProtocolVersion string `json:"protocolVersion"`
		SessionID       string `json:"sessionId"`
		Discover        *struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"discover"`
	}
	listStep struct {
		stepBase
		Count int      `json:"count"`
		Names []string `json:"names"`
	}
	callStep struct {
		stepBase
		Tool              string          `json:"tool"`
		Text              string          `json:"text"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	progressEvents []struct {
		Progress float64  `json:"progress"`
		Total    *float64 `json:"total"`
	}
	progressCall struct {
		OnProgress int            `json:"onprogress"`
		Events     progressEvents `json:"events"`
		Text       string         `json:"text"`
	}
	progressStep struct {
		stepBase
		progressCall                // the first call
		Tool         string         `json:"tool"`
		Wire         int            `json:"wire"`  // all calls
		Calls        []progressCall `json:"calls"` // with --progress-concurrency > 1
	}
	rootsStep struct {
		stepBase
		HandlerCalls int            `json:"handlerCalls"`
		ByStream     map[string]int `json:"byStream"` // before the tool call
		Text         string         `json:"text"`
	}
	loggingStep struct {
		stepBase
		Received int `json:"received"`
		OnStream int `json:"onStream"`
	}
	roundTripStep struct {
		stepBase
		HandlerCalls int    `json:"handlerCalls"`
		Text         string `json:"text"`
	}
	cancelStep struct {
		stepBase
		ProgressBeforeAbort int       `json:"progressBeforeAbort"`
		CancelledSent       int       `json:"cancelledSent"`
		After               *callStep `json:"after"`
		AfterAttempts       int       `json:"afterAttempts"`
	}
	listChangedStep struct {
		stepBase
		Text     string   `json:"text"`
		Received int      `json:"received"`
		Wire     int      `json:"wire"`
		Names    []string `json:"names"`
	}
	listenStep struct {
		stepBase
		HonoredFilter map[string]json.RawMessage `json:"honoredFilter"`
		Acknowledged  int                        `json:"acknowledged"`
		TriggerText   string                     `json:"triggerText"`
		Received      int                        `json:"received"`
		Wire          int                        `json:"wire"`
		Closed        string                     `json:"closed"`
	}
	discoverStep struct {
		stepBase
		SupportedVersions []string                        `json:"supportedVersions"`
		ServerInfo        *struct{ Name, Version string } `json:"serverInfo"`
	}
)

// memosStats decodes memo_debug_stats' structuredContent.
type memosStats struct{ Cancelled, InFlight, Requests int }

func afterStats(t *testing.T, c cancelStep) memosStats {
	t.Helper()
	if c.After == nil || c.After.Tool != "memo_debug_stats" {
		t.Fatalf("cancel: no memo_debug_stats result: %+v", c.After)
	}
	var st memosStats
	if err := json.Unmarshal(c.After.StructuredContent, &st); err != nil {
		t.Fatalf("memo_debug_stats: %v: %s", err, c.After.StructuredContent)
	}
	return st
}

// step decodes steps[name] into T; it fails the test if the step is missing
// or did not succeed (the driver already said why, see runDriver).
func step[T any](t *testing.T, r *driverResult, name string) T {
	t.Helper()
	var v T
	raw, ok := r.Summary.Steps[name]
	if !ok {
		t.Fatalf("driver summary has no %q step (was it selected?)", name)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("step %q: %v: %s", name, err, raw)
	}
	var b stepBase
	_ = json.Unmarshal(raw, &b)
	if !b.OK {
		t.Fatalf("step %q failed: %s", name, raw)
	}
	return v
}
