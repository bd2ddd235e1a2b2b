//go:build !windows

package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The log check of issue 21 ("the logs tell the truth"): the real binary,
// serve with examples/memos over TLS with a token file of two tokens, a
// 2025 session and a 2026-07-28 call, connect started and stopped through
// it, serve stopped; then every line of both logs is checked. Unix only:
// serve is stopped with SIGINT.
//
// NOTE for the merge: two of the false lines are fixed on other branches
// of issue 21, and this test passes only once those are merged too:
//   - "child exited" at start and child_protocol=dual-era when nothing
//     answered: the era probe (helper serve21a);
//   - "abandoning in-flight requests in_flight=0" at connect's normal stop
//     (bridge/connect, helper connect21).
//
// Each check names the false line it catches.
func TestLogsTellTheTruth(t *testing.T) {
	const ta, tb = "tok-alice-Lc42", "tok-bob-Lc97"
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokFile, []byte("alice:"+ta+"\nbob:"+tb+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := newTestCA(t)
	c1, k1 := ca.issue(t, 1)
	certFile, keyFile := writeTLSPair(t, dir, c1, k1)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	url := "https://" + addr + "/mcp"
	p := startBridgeProc(t, "serve", "--listen", addr, "--log-level", "debug", "--log-format", "json",
		"--auth-token-file", tokFile, "--tls-cert", certFile, "--tls-key", keyFile, "--", bin["memos"])
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}}}
	defer hc.CloseIdleConnections()
	waitFor(t, "HTTPS /readyz", func() bool {
		resp, err := hc.Get("https://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// A 2025 session and a 2026-07-28 call.
	postTLS := func(body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+ta)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", body, resp.StatusCode)
		}
		return resp
	}
	postTLS(initRequest, nil)
	postTLS(modernList, modernHdr)
	// Plain HTTP to the TLS port: net/http logs a TLS handshake error.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
	}
	waitFor(t, "the TLS handshake error in the log", func() bool { return strings.Contains(p.stderrString(), "TLS handshake error") })

	// connect started and stopped (its stdin ends).
	cmd := exec.Command(bin["mcp-bridge"], "connect", "--log-level", "debug", "--log-format", "json", "--ca-file", caFile, url)
	cmd.Env = append(os.Environ(), "MCP_BRIDGE_BEARER_TOKEN="+tb)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"logcheck","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n")
	var connectLog bytes.Buffer
	cmd.Stderr = &connectLog
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"id":2,"result"`) {
		t.Fatalf("connect: %v\nstdout: %s\nstderr: %s", err, out, connectLog.String())
	}

	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t, 30*time.Second)
	serveLog := p.stderrString()

	checkLogLines(t, "serve", serveLog)
	checkLogLines(t, "connect", connectLog.String())

	serveLines := jsonLines(t, "serve", serveLog)
	stopped := len(serveLines)
	for i, l := range serveLines {
		if l["message"] == "shutting down" {
			stopped = i
			break
		}
	}
	for i, l := range serveLines {
		switch {
		case l["message"] == "child exited" && i < stopped && l["session"] == nil:
			// A session's own child exits when its session ends (connect
			// deletes its session); nothing else stopped before the signal.
			t.Errorf(`serve: "child exited" before anything was stopped: %v`, l)
		case l["message"] == "mcp-bridge serving" && l["auth_tokens"] != float64(2):
			t.Errorf("serve: auth_tokens = %v with a token file of two tokens", l["auth_tokens"])
		case strings.Contains(str(l["message"]), "TLS handshake error") && l["level"] != "warn":
			t.Errorf("serve: a TLS error at level %v, want warn", l["level"])
		case l["message"] == "session started" && (str(l["client"]) == "" || str(l["protocol_version"]) == ""):
			t.Errorf("serve: a session's start does not name its client and protocol version: %v", l)
		}
	}
	if !strings.Contains(serveLog, `"client":"t"`) {
		t.Errorf("serve never logged the 2025 session's client")
	}
}

// A child that never answers is not reported as speaking both eras
// (issue 21: child_protocol=dual-era when nothing answered). Depends on
// the era probe's fix (helper serve21a): until then the probe gives up
// after 5 s and logs dual-era.
func TestLogsNoEraGuessed(t *testing.T) {
	addr := freePort(t)
	p := exec.Command(bin["mcp-bridge"], "serve", "--listen", addr, "--log-level", "debug", "--log-format", "json", "--", os.Args[0])
	p.Env = append(os.Environ(), "MCP_BRIDGE_TEST_HELPER=sleeper") // the child: this test binary, sleeping
	stderr := &lockedBuffer{}
	p.Stderr = stderr
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	defer p.Process.Kill()
	// The probe gave up after 5 s before the fix; 8 s is past that.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(stderr.String(), "child_protocol") {
		time.Sleep(50 * time.Millisecond) // polling another process's log
	}
	p.Process.Signal(os.Interrupt)
	p.Wait()
	for _, l := range jsonLines(t, "serve", stderr.String()) {
		if l["child_protocol"] == "dual-era" {
			t.Errorf("a child that never answered is reported dual-era: %v", l)
		}
	}
	checkLogLines(t, "serve", stderr.String())
}

func str(v any) string { s, _ := v.(string); return s }

// jsonLines parses a JSON log; a line that is not JSON fails the test.
func jsonLines(t *testing.T, who, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("%s: a log line that is not JSON: %q", who, line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// durationName reports whether a field name says it holds a duration: its
// last word is one of durations (took, uptime, delay ...), or it is "in",
// "after" or "age" on its own or after restart_/retry_ (bytes_in and
// not_after are not durations).
func durationName(k string) bool {
	parts := strings.Split(k, "_")
	last := parts[len(parts)-1]
	switch last {
	case "uptime", "took", "elapsed", "timeout", "delay", "wait", "interval", "backoff", "duration", "latency", "ttl", "period":
		return true
	case "in", "after", "age":
		return len(parts) == 1 || parts[len(parts)-2] == "restart" || parts[len(parts)-2] == "retry"
	}
	return false
}

// checkLogLines checks what holds for every line of every log: a level
// (not "???"); no shutdown warning about zero requests in flight; every
// duration field names its unit (a name ending in _ms) or is a Go
// duration string.
func checkLogLines(t *testing.T, who, log string) {
	t.Helper()
	levels := map[string]bool{"trace": true, "debug": true, "info": true, "warn": true, "error": true, "fatal": true, "panic": true}
	for _, l := range jsonLines(t, who, log) {
		if !levels[str(l["level"])] {
			t.Errorf("%s: a line without a level (shown as ???): %v", who, l)
		}
		if strings.Contains(str(l["message"]), "abandoning in-flight") && l["in_flight"] == float64(0) {
			t.Errorf("%s: a shutdown warning with nothing in flight: %v", who, l)
		}
		for k, v := range l {
			if !durationName(k) {
				continue
			}
			switch v := v.(type) {
			case float64:
				t.Errorf("%s: duration field %s=%v has no unit (want %s_ms or a duration string)", who, k, v, k)
			case string:
				if _, err := time.ParseDuration(v); err != nil {
					t.Errorf("%s: duration field %s=%q is not a Go duration", who, k, v)
				}
			}
		}
	}
}
