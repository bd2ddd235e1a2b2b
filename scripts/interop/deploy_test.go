//go:build interop

package interop

// Three `mcp-bridge serve` replicas behind the load balancer configurations
// shipped in examples/deploy (HAProxy and nginx from Debian's packages):
// the conformance suite through each, 2025 sessions that keep their
// replica, and a rolling restart under a 2026-07-28 client's load.
//
// The test renders each shipped file with the ports of this run (the three
// 10.0.0.1x:8080 replica addresses and the balancer's own listen address)
// and runs the balancer on it; nothing else in the file changes.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	replicaCount = 3
	// shippedListen and shippedReplicas are the addresses the shipped
	// configurations name, replaced by local ones when rendered.
	shippedListen = "0.0.0.0:8080"
	// restartDrainDelay is the replicas' --drain-delay in the rolling
	// restart: longer than the shipped HAProxy health check takes to see
	// /readyz fail (inter 1s x fall 2).
	restartDrainDelay = "3s"
	lbRouteTimeout    = 30 * time.Second // a restarted replica back in the balancer's rotation
	stickyClients     = 32
)

var shippedReplicas = []string{"10.0.0.11:8080", "10.0.0.12:8080", "10.0.0.13:8080"}

// replica is one `mcp-bridge serve --replica-id rN`, restartable on the same
// address.
type replica struct {
	id     string
	addr   string
	flags  []string
	child  []string
	b      *bridge
	starts int
}

// startReplicas starts replicaCount replicas r1..r3 on free loopback ports
// and waits until each is ready. Cleanup stops them and checks each shut
// down cleanly (see bridge.shutdown).
func startReplicas(t *testing.T, child []string, flags ...string) []*replica {
	t.Helper()
	var rs []*replica
	for i := 1; i <= replicaCount; i++ {
		r := &replica{id: fmt.Sprintf("r%d", i), flags: flags, child: child}
		p, err := onFreePort(t, func(_ int, addr string) (*proc, error) {
			r.addr = addr
			p := r.launch(t)
			return p, r.b.waitReady()
		})
		if err != nil {
			t.Fatalf("replica %s did not become ready: %v\nlog:\n%s", r.id, err, tail(p.log(), 60))
		}
		t.Cleanup(func() { r.b.shutdown(t) })
		rs = append(rs, r)
	}
	return rs
}

func (r *replica) launch(t *testing.T) *proc {
	t.Helper()
	r.starts++
	argv := []string{env.bridge, "serve", "--listen", r.addr, "--log-level", "debug", "--shutdown-timeout", shutdownTimeout, "--replica-id", r.id}
	argv = append(append(append(argv, r.flags...), "--"), r.child...)
	p := startProc(t, "mcp-bridge "+r.id, filepath.Join(artifactDir(t), fmt.Sprintf("%s-%d.log", r.id, r.starts)), env.interopDir, argv...)
	r.b = &bridge{proc: p, base: "http://" + r.addr, URL: "http://" + r.addr + "/mcp"}
	return p
}

// restart stops the replica with SIGTERM (its drain sequence runs), checks
// that it exited cleanly, and starts it again on the same address.
func (r *replica) restart(t *testing.T) {
	t.Helper()
	old := r.b
	old.shutdown(t)
	r.launch(t)
	if err := r.b.waitReady(); err != nil {
		t.Fatalf("replica %s did not come back on %s: %v\nlog:\n%s", r.id, r.addr, err, tail(r.b.log(), 40))
	}
}

// needTool finds a load balancer's binary. scripts/test.sh installs HAProxy
// and nginx from Debian's packages when they are missing; CI must never skip
// these tests, elsewhere they are skipped with the reason.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not installed (scripts/test.sh installs it: apt-get install haproxy nginx)", name)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must not skip the examples/deploy tests", msg)
	}
	t.Skipf("SKIPPED: %s; outside CI the examples/deploy %s test is skipped", msg, name)
	return ""
}

// renderShipped reads examples/deploy/<rel> and puts this run's addresses
// in place of the shipped ones; every shipped address must be there.
func renderShipped(t *testing.T, rel, listen string, rs []*replica) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.root, "examples", "deploy", rel))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	pairs := []string{shippedListen, listen}
	for i, r := range rs {
		pairs = append(pairs, shippedReplicas[i], r.addr)
	}
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("examples/deploy/%s no longer names %s: update the test's shipped addresses", rel, pairs[i])
		}
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// balancer is a running load balancer in front of the replicas.
type balancer struct {
	name string
	URL  string // http://127.0.0.1:PORT/mcp
	p    *proc
}

type balancerKind struct {
	name  string
	start func(t *testing.T, rs []*replica) *balancer
}

var balancers = []balancerKind{{"haproxy", startHAProxy}, {"nginx", startNginx}}

func startHAProxy(t *testing.T, rs []*replica) *balancer {
	t.Helper()
	bin := needTool(t, "haproxy")
	art := artifactDir(t)
	return startBalancer(t, "haproxy", func(attempt int, addr string) []string {
		cfg := filepath.Join(art, fmt.Sprintf("haproxy-%d.cfg", attempt))
		writeFile(t, cfg, renderShipped(t, "haproxy/haproxy.cfg", addr, rs))
		return []string{bin, "-db", "-f", cfg}
	})
}

// startNginx runs the shipped server block inside a minimal main
// configuration of the test's own (pid file, logs and temp paths in the
// artifacts directory), as a conf.d include would be.
func startNginx(t *testing.T, rs []*replica) *balancer {
	t.Helper()
	bin := needTool(t, "nginx")
	art := artifactDir(t)
	return startBalancer(t, "nginx", func(attempt int, addr string) []string {
		dir := filepath.Join(art, fmt.Sprintf("nginx-%d", attempt))
		if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "mcp-bridge.conf"), renderShipped(t, "nginx/mcp-bridge.conf", addr, rs))
		main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 1024; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/tmp/body;
    proxy_temp_path %[1]s/tmp/proxy;
    fastcgi_temp_path %[1]s/tmp/fastcgi;
    uwsgi_temp_path %[1]s/tmp/uwsgi;
    scgi_temp_path %[1]s/tmp/scgi;
    include %[1]s/mcp-bridge.conf;
}
`, dir)
		writeFile(t, filepath.Join(dir, "nginx.conf"), main)
		return []string{bin, "-e", "stderr", "-p", dir, "-c", filepath.Join(dir, "nginx.conf")}
	})
}

func startBalancer(t *testing.T, name string, argv func(attempt int, addr string) []string) *balancer {
	t.Helper()
	art := artifactDir(t)
	lb := &balancer{name: name}
	p, err := onFreePort(t, func(attempt int, addr string) (*proc, error) {
		lb.URL = "http://" + addr + "/mcp"
		p := startProc(t, name, filepath.Join(art, fmt.Sprintf("%s-%d.log", name, attempt)), art, argv(attempt, addr)...)
		return p, waitPort(p, addr)
	})
	if err != nil {
		t.Fatalf("%s did not start: %v\nlog:\n%s", name, err, tail(p.log(), 40))
	}
	lb.p = p
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log (%s):\n%s", name, p.logPath, tail(p.log(), 40))
		}
	})
	t.Logf("%s at %s", name, lb.URL)
	return lb
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replicaOf names the replica the balancer sent a 2026-07-28 request to
// (the Mcp-Bridge-Replica response header), "" if it failed.
func replicaOf(url string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return resp.Header.Get("Mcp-Bridge-Replica")
}

// waitRouted waits until the balancer sends requests to replica id again.
func waitRouted(t *testing.T, lb *balancer, id string) time.Duration {
	t.Helper()
	t0 := time.Now()
	for replicaOf(lb.URL) != id {
		if time.Since(t0) > lbRouteTimeout {
			t.Fatalf("%s did not route to the restarted replica %s within %v", lb.name, id, lbRouteTimeout)
		}
		time.Sleep(pollInterval) // polling another process's state
	}
	return time.Since(t0)
}

// The conformance suite's server scenarios through each balancer in front
// of three replicas (everything-server children) pass every scenario they
// pass against one bridge.
func TestDeployConformanceThroughBalancers(t *testing.T) {
	single := startBridge(t, serveOpts{Child: []string{env.everything}})
	base := runConformance(t, "one-bridge", single.URL)
	rs := startReplicas(t, []string{env.everything})
	labels := []string{"one mcp-bridge serve"}
	runs := []*confRun{base}
	for _, k := range balancers {
		t.Run(k.name, func(t *testing.T) {
			lb := k.start(t, rs)
			via := runConformance(t, k.name, lb.URL)
			compareConformance(t, base, via, "three replicas behind the shipped "+k.name+" configuration")
			labels = append(labels, "3 replicas behind "+k.name)
			runs = append(runs, via)
		})
	}
	table := conformanceTableN(labels, runs)
	t.Logf("conformance 0.1.16 server scenarios (suite %q) through the shipped balancer configurations, %d CPUs, %s:\n%s",
		conformanceSuite, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), table)
	writeFile(t, filepath.Join(artifactDir(t), "conformance-table.md"), table)
}

// 32 TS SDK v1 clients (2025 sessions with memos children), all at once in
// one driver process, through each balancer: every response of a session
// comes from the replica that minted its id (the Mcp-Bridge-Replica header
// of every response against the prefix of the session id), and the
// sessions spread over all three replicas.
func TestDeployStickySessions(t *testing.T) {
	rs := startReplicas(t, []string{env.memos})
	for _, k := range balancers {
		t.Run(k.name, func(t *testing.T) {
			lb := k.start(t, rs)
			args := []string{"--url", lb.URL, "--clients", strconv.Itoa(stickyClients),
				"--call", "memo_list_memos", "--args", `{"pageSize":1}`, "--calls", "3"}
			r := runDriver(t, "ts-v1-sessions.mjs", args...)
			var res struct {
				Clients []struct {
					OK        bool   `json:"ok"`
					Error     string `json:"error"`
					SessionID string `json:"sessionId"`
					HTTP      struct {
						SessionIDs []string       `json:"sessionIds"`
						Replicas   map[string]int `json:"replicas"`
						Statuses   map[string]int `json:"statuses"`
					} `json:"http"`
				} `json:"clients"`
			}
			if raw, ok := r.Summary.Steps["sessions"]; !ok || json.Unmarshal(raw, &res) != nil || len(res.Clients) != stickyClients {
				t.Fatalf("the driver summary has no result for %d clients: %s", stickyClients, tail(r.Stdout, 5))
			}
			perReplica := map[string]int{}
			responses := 0
			for i, c := range res.Clients {
				if !c.OK {
					t.Errorf("client %d failed: %s", i, c.Error)
					continue
				}
				if len(c.HTTP.SessionIDs) != 1 || c.HTTP.SessionIDs[0] != c.SessionID {
					t.Errorf("client %d: session ids %q on the wire, %q at the end: want one", i, c.HTTP.SessionIDs, c.SessionID)
					continue
				}
				owner, _, _ := strings.Cut(c.SessionID, ".")
				n := 0
				for _, v := range c.HTTP.Replicas {
					n += v
				}
				responses += n
				if len(c.HTTP.Replicas) != 1 || c.HTTP.Replicas[owner] == 0 {
					t.Errorf("client %d: session %s (minted by %s) was answered by %v, want %s only", i, c.SessionID, owner, c.HTTP.Replicas, owner)
				}
				perReplica[owner]++
			}
			for _, rep := range rs {
				if perReplica[rep.id] == 0 {
					t.Errorf("%s gave no session to %s (sessions per replica: %v)", k.name, rep.id, perReplica)
				}
			}
			t.Logf("%s: %d concurrent TS v1 sessions, %d HTTP responses, each session answered by its own replica only; sessions per replica %v; %v",
				k.name, stickyClients, responses, perReplica, r.Took.Round(time.Millisecond))
		})
	}
}

// A rolling restart behind each balancer: while a TS SDK v2 client pinned to
// 2026-07-28 calls memo_list_memos without pause, each replica in turn gets
// SIGTERM (--drain-delay: /readyz 503, still serving, then stops) and is
// started again once gone, and the next waits until the balancer routes to
// the restarted one. No call may fail.
func TestDeployRollingRestart(t *testing.T) {
	rs := startReplicas(t, []string{env.memos}, "--drain-delay", restartDrainDelay)
	for _, k := range balancers {
		t.Run(k.name, func(t *testing.T) {
			lb := k.start(t, rs)
			art := artifactDir(t)
			until, started := filepath.Join(art, "loop.stop"), filepath.Join(art, "loop.started")
			os.Remove(until) // left by an earlier run in a kept artifacts directory
			os.Remove(started)
			args := []string{"--url", lb.URL, "--expect-version", "2026-07-28",
				"--loop-call", "memo_list_memos", "--loop-args", `{"pageSize":1}`,
				"--loop-until", until, "--loop-started", started}
			type outcome struct {
				r   *driverResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				r, err := execDriver(art, "ts-v2-loop", "ts-v2-client.mjs", args...)
				done <- outcome{r, err}
			}()
			stopLoop := func() outcome {
				writeFile(t, until, "stop\n")
				return <-done
			}
			waitStarted := time.Now().Add(readyTimeout)
			for {
				if _, err := os.Stat(started); err == nil {
					break
				}
				select {
				case o := <-done:
					checkDriver(t, "ts-v2-client.mjs", args, o.r, o.err)
					t.Fatal("the calling client ended before its first call succeeded")
				default:
				}
				if time.Now().After(waitStarted) {
					stopLoop()
					t.Fatalf("the calling client made no successful call within %v", readyTimeout)
				}
				time.Sleep(pollInterval) // polling a file another process writes
			}
			t0 := time.Now()
			var steps []string
			for _, r := range rs {
				ts := time.Now()
				r.restart(t)
				back := waitRouted(t, lb, r.id)
				steps = append(steps, fmt.Sprintf("%s: down and up %v, routed again after %v", r.id,
					(time.Since(ts)-back).Round(time.Millisecond), back.Round(time.Millisecond)))
			}
			restartTook := time.Since(t0)
			o := stopLoop()
			checkDriver(t, "ts-v2-client.mjs", args, o.r, o.err)
			var loop struct {
				Calls  int               `json:"calls"`
				Failed int               `json:"failed"`
				Errors []json.RawMessage `json:"errors"`
			}
			if raw, ok := o.r.Summary.Steps["loop"]; !ok || json.Unmarshal(raw, &loop) != nil {
				t.Fatalf("the driver summary has no loop step: %s", o.r.Stdout)
			}
			if loop.Failed != 0 {
				t.Errorf("%d of %d calls failed during the rolling restart behind %s; first errors: %s", loop.Failed, loop.Calls, k.name, loop.Errors)
			}
			if loop.Calls < 10 {
				t.Errorf("only %d calls during the rolling restart: not under load", loop.Calls)
			}
			t.Logf("%s rolling restart of %d replicas in %v (--drain-delay %s): %d calls, %d failed; answered by %v\n  %s",
				k.name, len(rs), restartTook.Round(time.Millisecond), restartDrainDelay, loop.Calls, loop.Failed,
				o.r.Summary.Wire.HTTP.Replicas, strings.Join(steps, "\n  "))
		})
	}
}

// lbPost POSTs body through the balancer with extra headers; it returns the
// status, the response headers and the body.
func lbPost(t *testing.T, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	code, h, b, err := tryPost(url, body, hdr)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return code, h, b
}

func tryPost(url, body string, hdr map[string]string) (int, http.Header, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), nil
}

// A 2025 session whose replica drains keeps working through each balancer
// until it ends: after the drain delay the replica refuses new work (its
// /readyz has said 503 since SIGTERM) and HAProxy has marked it DOWN, yet
// the session's requests still reach it (HAProxy: option persist; nginx:
// the id's prefix); once the
// client deletes the session the replica exits, and a new session goes to
// another replica.
func TestDeployDrainKeepsSession(t *testing.T) {
	rs := startReplicas(t, []string{env.memos}, "--drain-delay", "1s", "--shutdown-timeout", "60s")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"drain","version":"1"}}}`
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memo_list_memos","arguments":{"pageSize":1}}}`
	for _, k := range balancers {
		t.Run(k.name, func(t *testing.T) {
			lb := k.start(t, rs)
			for _, r := range rs {
				waitRouted(t, lb, r.id) // every replica in rotation, the one restarted by the last subtest too
			}
			code, h, body := lbPost(t, lb.URL, initialize, nil)
			sid := h.Get("Mcp-Session-Id")
			if code != 200 || sid == "" {
				t.Fatalf("initialize through %s: %d %s", k.name, code, body)
			}
			var r *replica
			for _, x := range rs {
				if x.id == h.Get("Mcp-Bridge-Replica") {
					r = x
				}
			}
			if r == nil {
				t.Fatalf("initialize answered by %q, not a replica", h.Get("Mcp-Bridge-Replica"))
			}
			sess := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
			lbPost(t, lb.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess)

			_ = r.b.cmd.Process.Signal(syscall.SIGTERM)
			// Past the drain delay the replica refuses new work itself.
			deadline := time.Now().Add(lbRouteTimeout)
			for {
				// A kept-alive connection the draining replica closed fails
				// once (err); the next attempt dials afresh.
				c, _, _, err := tryPost(r.b.URL, `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
					map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
				if c == http.StatusServiceUnavailable {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s still takes new work %v after SIGTERM (status %d, %v)", r.id, lbRouteTimeout, c, err)
				}
				time.Sleep(pollInterval) // polling another process's state
			}
			if k.name == "haproxy" {
				// Its health check has taken the replica out of rotation:
				// only option persist still sends the session there.
				for !strings.Contains(lb.p.log(), "Server mcp_bridge/"+r.id+" is DOWN") {
					if time.Now().After(deadline) {
						t.Fatalf("haproxy did not mark draining %s DOWN within %v", r.id, lbRouteTimeout)
					}
					time.Sleep(pollInterval) // polling another process's log
				}
			}
			for i := 0; i < 3; i++ {
				code, h, body := lbPost(t, lb.URL, call, sess)
				if code != 200 || h.Get("Mcp-Bridge-Replica") != r.id || !strings.Contains(body, "memos/") {
					t.Errorf("call %d of the session on draining %s through %s: %d from %q: %s", i, r.id, k.name, code, h.Get("Mcp-Bridge-Replica"), body)
				}
			}
			code, h, _ = lbPost(t, lb.URL, initialize, nil)
			if code != 200 || h.Get("Mcp-Bridge-Replica") == r.id {
				t.Errorf("a new session through %s while %s drains: %d from %q, want 200 from another replica", k.name, r.id, code, h.Get("Mcp-Bridge-Replica"))
			}
			// Both sessions end: the replicas wait for open ones on SIGTERM.
			for _, id := range []string{h.Get("Mcp-Session-Id"), sid} {
				req, _ := http.NewRequest(http.MethodDelete, lb.URL, nil)
				req.Header.Set("Mcp-Session-Id", id)
				if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
					t.Fatalf("DELETE %s through %s: %v %v", id, k.name, resp, err)
				} else {
					resp.Body.Close()
				}
			}
			select {
			case <-r.b.done:
			case <-time.After(stopTimeout):
				t.Fatalf("%s did not exit within %v of its last session's end", r.id, stopTimeout)
			}
			t.Logf("%s: a session on draining %s served 3 calls after the drain delay; %s exited once it was deleted", k.name, r.id, r.id)
			r.restart(t)
		})
	}
}
