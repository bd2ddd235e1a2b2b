package exec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func textOf(r map[string]any) string {
	res, _ := r["result"].(map[string]any)
	items, _ := res["content"].([]any)
	var parts []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		if s, ok := m["text"].(string); ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

func errorOf(r map[string]any) (code float64, msg string) {
	e, _ := r["error"].(map[string]any)
	if e == nil {
		return 0, ""
	}
	code, _ = e["code"].(float64)
	msg, _ = e["message"].(string)
	return code, msg
}

const argvTools = `{"tools": {
  "echo_args": {"command": "PROBE", "args": ["argv", "{word}", "--", "{rest}"],
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}, "rest": {"type": "array", "items": {"type": "string"}}}, "required": ["word"]}},
  "echo_dashes": {"command": "PROBE", "args": ["argv", "{word}"], "allowDashes": ["word"],
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}},
  "echo_embedded": {"command": "PROBE", "args": ["argv", "--name={word}", "{{literal}}", "-n", "{count}"],
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}, "count": {"type": "integer", "minimum": 0}}}}
}}`

// Shell syntax in an argument reaches the program as the literal text of
// one argv element, whatever it is; a value that would read as an option
// is refused in a positional slot unless the file allows it.
func TestInjectionStaysLiteral(t *testing.T) {
	c := legacyClient(t, toolsFile(t, argvTools, nil))
	hostile := []string{"; rm -rf /", "$(id)", "`id`", "a\nb", "x && touch /tmp/pwned", "| cat /etc/passwd", "*", "~", "'\"", "${HOME}", "a b\tc", "{word}", "%PATH%", "é 日本", ""}
	for i, h := range hostile {
		args, _ := json.Marshal(map[string]any{"word": h, "rest": []string{h, "second " + h}})
		r := c.callTool(i+1, "echo_args", string(args), 30*time.Second)
		sc := structuredOf(t, r)
		var got []string
		if err := json.Unmarshal([]byte(sc["stdout"].(string)), &got); err != nil {
			t.Fatalf("%q: probe output %q: %v", h, sc["stdout"], err)
		}
		if want := []string{"argv", h, "--", h, "second " + h}; fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
			t.Errorf("%q reached the program as %q, want %q", h, got, want)
		}
	}
	// An option in a positional slot, alone or in an array: refused before anything runs.
	for i, args := range []string{`{"word": "--output=/etc/passwd"}`, `{"word": "ok", "rest": ["fine", "-rf"]}`, `{"word": "-"}`} {
		r := c.callTool(100+i, "echo_args", args, 30*time.Second)
		if code, msg := errorOf(r); code != -32602 || !strings.Contains(msg, "starting with '-'") {
			t.Errorf("%s: %v, want -32602 refusing the dash", args, r)
		}
	}
	// ... unless the file says so; then it is still one literal element.
	r := c.callTool(200, "echo_dashes", `{"word": "--output=/etc/passwd"}`, 30*time.Second)
	if got := structuredOf(t, r)["stdout"]; got != `["argv","--output=/etc/passwd"]`+"\n" {
		t.Errorf("allowed dash value: program got %q", got)
	}
	// Embedded references: one element each, dropped when the parameter is absent.
	r = c.callTool(201, "echo_embedded", `{"word": "a b; c", "count": 3}`, 30*time.Second)
	if got := structuredOf(t, r)["stdout"]; got != `["argv","--name=a b; c","{literal}","-n","3"]`+"\n" {
		t.Errorf("embedded: program got %q", got)
	}
	r = c.callTool(202, "echo_embedded", `{}`, 30*time.Second)
	if got := structuredOf(t, r)["stdout"]; got != `["argv","{literal}","-n"]`+"\n" {
		t.Errorf("absent optional: program got %q", got)
	}
}

// A program that starts a background grandchild and sleeps, both deaf to
// SIGTERM: the timeout answers an error result within timeout + 2 s, and
// no process of the group survives.
func TestTimeoutKillsTheGroup(t *testing.T) {
	c := legacyClient(t, toolsFile(t, `{"tools": {"hang": {"command": "PROBE", "args": ["spawn"], "timeout": "1s", "grace": "500ms"}}}`, nil))
	start := time.Now()
	r := c.callTool(1, "hang", `{}`, 30*time.Second)
	took := time.Since(start)
	t.Logf("timeout result after %v (timeout 1 s, grace 500 ms)", took.Round(time.Millisecond))
	// Within timeout + 2 s is the requirement; 10 s leaves a loaded machine
	// room to start and kill the group, and a missed timeout would hold the
	// call until the client's 30 s.
	if took > 10*time.Second {
		t.Errorf("timeout result after %v, want within 1s + 2s (10 s allowed under load)", took)
	}
	t.Logf("timeout 1s, grace 500ms: result after %v", took)
	res := r["result"].(map[string]any)
	sc := structuredOf(t, r)
	if res["isError"] != true || sc["timedOut"] != true || sc["exitCode"] != float64(-1) {
		t.Errorf("result %v, want isError, timedOut, exitCode -1", res)
	}
	if !strings.Contains(textOf(r), "timed out") {
		t.Errorf("no timeout note in %q", textOf(r))
	}
	checkGone(t, sc["stdout"].(string))
}

// checkGone waits (bounded) for every pid listed in s to be gone.
func checkGone(t *testing.T, s string) {
	t.Helper()
	pids := strings.Fields(s)
	if len(pids) != 2 {
		t.Fatalf("probe printed %q, want two pids", s)
	}
	if !canCheckPids {
		return
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		deadline := time.Now().Add(20 * time.Second) // a bound for a failure only: reaping on a loaded machine
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d survived", pid)
			}
			time.Sleep(20 * time.Millisecond) // polling the kernel for another process's state
		}
	}
}

// 10 MiB of output: cut at maxOutput with a note, and exec never holds
// more than the cap (allocation during the whole call measured).
func TestOutputCapped(t *testing.T) {
	c := legacyClient(t, toolsFile(t, `{"tools": {"flood": {"command": "PROBE", "args": ["flood", "10485760"], "maxOutput": "64KiB"}}}`, nil))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := c.callTool(1, "flood", `{}`, 60*time.Second)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("10 MiB of output, maxOutput 64 KiB: %d KiB allocated during the call (client side included); heap in use %d KiB after",
		alloc>>10, after.HeapInuse>>10)
	if alloc > 4<<20 {
		t.Errorf("%d bytes allocated for a call whose output is capped at 64 KiB", alloc)
	}
	sc := structuredOf(t, r)
	if len(sc["stdout"].(string)) != 64<<10 || sc["truncated"] != true {
		t.Errorf("stdout %d bytes, truncated %v; want 65536 and true", len(sc["stdout"].(string)), sc["truncated"])
	}
	if !strings.Contains(textOf(r), "[stdout truncated: 65536 of 10485760 bytes kept (maxOutput)]") {
		t.Errorf("no truncation note in the text content")
	}
	if r["result"].(map[string]any)["isError"] != false {
		t.Errorf("a truncated but successful run is an error: %v", r["result"].(map[string]any)["isError"])
	}
}

// The program's environment is what the tool lists and nothing else: a
// variable of exec's own environment is absent unless listed.
func TestEnvironmentDefaultDeny(t *testing.T) {
	t.Setenv("EXEC_TEST_UNLISTED", "do-not-leak")
	t.Setenv("EXEC_TEST_LISTED", "wanted")
	ts := toolsFile(t, `{"tools": {"env": {"command": "PROBE", "args": ["env"],
	  "env": {"FROM_EXEC": "${EXEC_TEST_LISTED}", "LITERAL": "x", "DEFAULTED": "${EXEC_TEST_NOT_SET:-fallback}"}}}}`,
		map[string]string{"EXEC_TEST_LISTED": "wanted", "EXEC_TEST_UNLISTED": "do-not-leak"})
	c := legacyClient(t, ts)
	r := c.callTool(1, "env", `{}`, 30*time.Second)
	var env map[string]string
	if err := json.Unmarshal([]byte(structuredOf(t, r)["stdout"].(string)), &env); err != nil {
		t.Fatal(err)
	}
	if _, ok := env["EXEC_TEST_UNLISTED"]; ok {
		t.Error("an unlisted variable of exec's environment reached the program")
	}
	for _, k := range []string{"PATH", "HOME"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s reached the program without being listed", k)
		}
	}
	if env["FROM_EXEC"] != "wanted" || env["LITERAL"] != "x" || env["DEFAULTED"] != "fallback" {
		t.Errorf("listed variables: %v", env)
	}
	delete(env, "SYSTEMROOT") // Go adds it on Windows, where nothing starts without it
	if len(env) != 3 {
		t.Errorf("environment %v, want exactly the three listed", env)
	}
}

// Arguments the schema refuses are -32602 with the reason, and nothing
// runs; a non-zero exit is a tool error with its exit code.
func TestSchemaViolationsAndExitCodes(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	ts := toolsFile(t, `{"tools": {
	  "strict": {"command": "PROBE", "args": ["spawn", "`+filepath.ToSlash(marker)+`", "{n}", "{mode}", "{name}"],
	    "inputSchema": {"type": "object", "additionalProperties": false, "required": ["n"], "properties": {
	      "n": {"type": "integer", "minimum": 1, "maximum": 100},
	      "mode": {"type": "string", "enum": ["fast", "slow"]},
	      "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}}}},
	  "fail": {"command": "PROBE", "args": ["exit", "3"]}}}`, nil)
	c := legacyClient(t, ts)
	for i, tc := range []struct{ args, want string }{
		{`{}`, `missing required property "n"`},
		{`{"n": "5"}`, "arguments.n: want integer, got string"},
		{`{"n": 1.5}`, "want integer, got number"},
		{`{"n": 101}`, "greater than the maximum"},
		{`{"n": 0}`, "less than the minimum"},
		{`{"n": 5, "mode": "turbo"}`, "arguments.mode: not one of the allowed values"},
		{`{"n": 5, "name": "a;b"}`, "does not match the pattern"},
		{`{"n": 5, "name": "abcdefghi"}`, "longer than 8 characters"},
		{`{"n": 5, "extra": true}`, `unknown property "extra"`},
		{`[1]`, "want object"},
	} {
		r := c.callTool(i+1, "strict", tc.args, 30*time.Second)
		if code, msg := errorOf(r); code != -32602 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %v, want -32602 with %q", tc.args, r["error"], tc.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran for arguments the schema refused")
	}
	r := c.callTool(50, "nope", `{}`, 30*time.Second)
	if code, msg := errorOf(r); code != -32602 || !strings.Contains(msg, "Unknown tool") {
		t.Errorf("unknown tool: %v", r)
	}
	r = c.callTool(51, "fail", `{}`, 30*time.Second)
	res := r["result"].(map[string]any)
	sc := structuredOf(t, r)
	if res["isError"] != true || sc["exitCode"] != float64(3) || sc["stdout"] != "to stdout\n" || sc["stderr"] != "to stderr\n" {
		t.Errorf("exit 3: %v", res)
	}
	if txt := textOf(r); !strings.Contains(txt, "to stdout") || !strings.Contains(txt, "stderr:\nto stderr") || !strings.Contains(txt, "[exit code 3]") {
		t.Errorf("text content %q", txt)
	}
}

// Output that is not UTF-8 comes back as base64 resource content.
func TestBinaryOutput(t *testing.T) {
	c := legacyClient(t, toolsFile(t, `{"tools": {"bin": {"command": "PROBE", "args": ["binary"]}}}`, nil))
	r := c.callTool(1, "bin", `{}`, 30*time.Second)
	res := r["result"].(map[string]any)
	blob := res["content"].([]any)[0].(map[string]any)
	rs, _ := blob["resource"].(map[string]any)
	want := base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00, 'a', 0x80})
	if blob["type"] != "resource" || rs["blob"] != want || rs["uri"] != "exec://bin/stdout" {
		t.Errorf("content %v, want a resource with blob %s", blob, want)
	}
	sc := structuredOf(t, r)
	if sc["stdout"] != want || sc["stdoutEncoding"] != "base64" {
		t.Errorf("structuredContent %v", sc)
	}
}

// With a progress token, the client hears about output while the program
// runs; the audit line names the tool, argv with secrets masked, the exit
// code and the duration.
func TestProgressAndAudit(t *testing.T) {
	ts := toolsFile(t, `{"tools": {"slow": {"command": "PROBE", "args": ["lines", "{n}", "{token}"], "secrets": ["token"],
	  "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}, "token": {"type": "string"}}}}}}`, nil)
	c := legacyClient(t, ts)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"n":5,"token":"hunter2"},"_meta":{"progressToken":"p1"}}}`)
	r := c.response("1", 30*time.Second)
	if structuredOf(t, r)["exitCode"] != float64(0) {
		t.Fatalf("result %v", r)
	}
	c.mu.Lock()
	notifs := c.notifs
	c.mu.Unlock()
	last := 0.0
	for _, n := range notifs {
		p := n["params"].(map[string]any)
		if n["method"] != "notifications/progress" || p["progressToken"] != "p1" || p["progress"].(float64) <= last {
			t.Errorf("notification %v", n)
		}
		last = p["progress"].(float64)
	}
	if len(notifs) == 0 {
		t.Error("no progress notification during a 1.5 s run with a progress token")
	}
	log := c.log.String()
	if strings.Contains(log, "hunter2") {
		t.Errorf("a secret argument reached the log: %s", log)
	}
	if !strings.Contains(log, `"tool":"slow"`) || !strings.Contains(log, `"argv":["lines","5","[REDACTED]"]`) ||
		!strings.Contains(log, `"exit_code":0`) || !strings.Contains(log, `"duration_ms":`) {
		t.Errorf("audit line missing fields: %s", log)
	}
}

// notifications/cancelled stops the program and everything it started,
// and the call gets no answer.
func TestCancellationKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	ts := toolsFile(t, `{"tools": {"hang": {"command": "PROBE", "args": ["spawn", "{file}"], "grace": "300ms",
	  "inputSchema": {"type": "object", "properties": {"file": {"type": "string"}}}}}}`, nil)
	c := legacyClient(t, ts)
	args, _ := json.Marshal(map[string]string{"file": pidFile})
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang","arguments":%s}}`, args))
	var pids []byte
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if pids, err = os.ReadFile(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program never started")
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	checkGone(t, string(pids))
	for !strings.Contains(c.log.String(), `"cancelled":true`) {
		if time.Now().After(deadline) {
			t.Fatal("no audit line for the cancelled call")
		}
		time.Sleep(20 * time.Millisecond) // polling the log the call's goroutine writes last
	}
	c.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	c.response("8", 10*time.Second) // fails on a response to 7 first
}

// A tool runs at most concurrency times at once: a call beyond that waits
// for a slot (starting nothing) and can be cancelled while it waits.
func TestConcurrencyBound(t *testing.T) {
	ts := toolsFile(t, `{"tools": {"one": {"command": "PROBE", "args": ["exit", "0"], "concurrency": 2}}}`, nil)
	tool, _ := ts.Lookup("one")
	tool.slots <- struct{}{}
	tool.slots <- struct{}{} // both slots taken, as by two running calls
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan outcome, 1)
	go func() { done <- tool.run(ctx, []string{"exit", "0"}, nil) }()
	select {
	case o := <-done:
		t.Fatalf("a third run did not wait for a slot: %+v", o)
	case <-time.After(300 * time.Millisecond): // asserting that nothing happens for a while
	}
	cancel()
	o := <-done
	if !o.cancelled || o.exitCode != -1 || o.stdout.total != 0 {
		t.Errorf("cancelled while waiting: %+v", o)
	}
	<-tool.slots
	if o := tool.run(context.Background(), []string{"exit", "0"}, nil); o.exitCode != 0 || o.cancelled {
		t.Errorf("with a free slot: %+v", o)
	}
	if len(tool.slots) != 1 {
		t.Errorf("%d slots taken after the run, want the 1 still held", len(tool.slots))
	}
}
