package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// probe is the test program (testdata/probe), built once.
var probe string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exec-test")
	if err != nil {
		panic(err)
	}
	probe = filepath.Join(dir, "probe")
	if runtime.GOOS == "windows" {
		probe += ".exe"
	}
	if out, err := osexec.Command("go", "build", "-o", probe, "./testdata/probe").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build probe: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// toolsFile writes a tools file whose "command": "PROBE" entries name the
// probe, and loads it with env as exec's environment.
func toolsFile(t *testing.T, body string, env map[string]string) *Tools {
	t.Helper()
	q, _ := json.Marshal(probe)
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(body, `"PROBE"`, string(q))), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A client drives a Server in-process through pipes, as a host would.
type client struct {
	t    *testing.T
	in   *io.PipeWriter
	msgs chan map[string]any
	done chan error
	log  *syncBuffer

	mu     sync.Mutex
	notifs []map[string]any
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServer(t *testing.T, ts *Tools) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, msgs: make(chan map[string]any, 1000), done: make(chan error, 1), log: &syncBuffer{}}
	srv := New(ts, Options{Logger: zerolog.New(c.log), DrainGrace: 10 * time.Second})
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("server wrote a non-JSON line: %q", sc.Text())
				continue
			}
			c.msgs <- m
		}
		io.Copy(io.Discard, outR)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after stdin closed")
		}
		outR.Close()
		<-readerDone
		if t.Failed() {
			t.Logf("server log:\n%s", c.log.String())
		}
	})
	return c
}

func (c *client) send(msg string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, msg+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// response waits for the response with id, keeping notifications.
func (c *client) response(id string, wait time.Duration) map[string]any {
	c.t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case m := <-c.msgs:
			if _, ok := m["method"]; ok {
				c.mu.Lock()
				c.notifs = append(c.notifs, m)
				c.mu.Unlock()
				continue
			}
			got, _ := json.Marshal(m["id"])
			if string(got) == id {
				return m
			}
			c.t.Errorf("unexpected message %v", m)
		case <-timer.C:
			c.t.Fatalf("no response to id %s within %v", id, wait)
			return nil
		}
	}
}

const legacyInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// modernMeta is the 2026-07-28 envelope.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// legacyClient is a client after the 2025 handshake.
func legacyClient(t *testing.T, ts *Tools) *client {
	c := startServer(t, ts)
	c.send(legacyInit)
	if r := c.response("0", 10*time.Second); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// callTool sends tools/call (legacy) and returns the response.
func (c *client) callTool(id int, name, args string, wait time.Duration) map[string]any {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args))
	return c.response(fmt.Sprint(id), wait)
}

// structured returns a result's structuredContent.
func structuredOf(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	res, _ := r["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("no structuredContent in %v", r)
	}
	return sc
}
