//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/load"
)

// sessionsCmd measures how long a new 2025 session takes from its
// initialize to its first answers: the initialize result, then the first
// tools/call result (initialize, notifications/initialized, tools/call in
// a row, as a host that calls at once does). Sessions run one after the
// other, -gap apart (a host starting now and then, which is what
// --warm-children is for); each is deleted after its call.
//
//	loadgen sessions -url http://127.0.0.1:8080/mcp -n 20 -tool echo -args '{"message":"hi"}' [-- mcp-bridge serve ...]
//
// With a COMMAND (the bridge), it is started, its /readyz awaited and
// -settle waited before the first session.
func sessionsCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sessions", flag.ExitOnError)
	u := fs.String("url", "", "the MCP endpoint")
	n := fs.Int("n", 20, "sessions")
	gap := fs.Duration("gap", 2*time.Second, "pause between sessions")
	settle := fs.Duration("settle", 5*time.Second, "with COMMAND: wait this long after /readyz before the first session")
	tool := fs.String("tool", "echo", "the tool the first call calls")
	targs := fs.String("args", `{"message":"hi"}`, "its arguments (JSON)")
	out := fs.String("out", "", "write the JSON result here (default stdout)")
	logPath := fs.String("log", "", "append the started process's output here")
	fs.Parse(args)
	if *u == "" {
		return errors.New("sessions needs -url")
	}
	if cmd := fs.Args(); len(cmd) > 0 {
		p, err := load.StartProc(cmd, nil, *logPath)
		if err != nil {
			return err
		}
		defer p.Stop(5 * time.Second)
		if err := awaitReady(ctx, *u, 120*time.Second); err != nil {
			return err
		}
		time.Sleep(*settle) // pacing: let the bridge finish what it starts ahead of time
	}
	client := &http.Client{Transport: load.NewTransport(4), Timeout: 120 * time.Second}
	var initMS, callMS []float64
	for i := range *n {
		if i > 0 {
			time.Sleep(*gap) // pacing between sessions, as hosts come and go
		}
		t0 := time.Now()
		sid, err := post(ctx, client, *u, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}}`)
		if err != nil {
			return fmt.Errorf("session %d: initialize: %w", i+1, err)
		}
		t1 := time.Since(t0)
		if _, err := post(ctx, client, *u, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			return fmt.Errorf("session %d: initialized: %w", i+1, err)
		}
		if _, err := post(ctx, client, *u, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+*tool+`","arguments":`+*targs+`}}`); err != nil {
			return fmt.Errorf("session %d: tools/call: %w", i+1, err)
		}
		t2 := time.Since(t0)
		initMS = append(initMS, ms(t1))
		callMS = append(callMS, ms(t2))
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, *u, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	return emit(*out, map[string]any{
		"sessions":      *n,
		"gap_ms":        ms(*gap),
		"initialize_ms": quantiles(initMS),
		"first_call_ms": quantiles(callMS),
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func quantiles(v []float64) map[string]float64 {
	s := slices.Sorted(slices.Values(v))
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return map[string]float64{"p50": at(0.5), "p90": at(0.9), "max": s[len(s)-1], "min": s[0]}
}

// post sends one message and reads the whole answer; it returns the
// session id the answer carries.
func post(ctx context.Context, c *http.Client, u, sid, body string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 || strings.Contains(string(b), `"error":`) {
		return "", fmt.Errorf("%d %.200s", resp.StatusCode, b)
	}
	return resp.Header.Get("Mcp-Session-Id"), nil
}

// awaitReady polls the bridge's /readyz.
func awaitReady(ctx context.Context, mcp string, limit time.Duration) error {
	pu, err := url.Parse(mcp)
	if err != nil {
		return err
	}
	ready := pu.Scheme + "://" + pu.Host + "/readyz"
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond) // polling an HTTP endpoint
	}
	return fmt.Errorf("%s not ready after %v", ready, limit)
}
