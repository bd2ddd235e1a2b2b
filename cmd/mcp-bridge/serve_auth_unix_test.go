//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --auth-token-file: names are the principals in the logs, tokens never
// are; SIGHUP re-reads the file (a removed token stops working, an added
// one starts); a world-readable file is warned about.
func TestServeTokenFile(t *testing.T) {
	const ta, tb = "tok-alice-Zx81", "tok-bob-Qw27"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# team\nalice:"+ta+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	url := "http://" + addr + "/mcp"
	p := startBridgeProc(t, "serve", "--listen", addr, "--auth-token-file", file, "--child-per", "principal", "--", bin["memos"])
	waitReady(t, addr)
	hdr := func(tok string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + tok}
		for k, v := range modernHdr {
			h[k] = v
		}
		return h
	}
	if code, body := status(url, initRequest, map[string]string{"Authorization": "Bearer " + ta}); code != 200 {
		t.Fatalf("alice: %d %s", code, body)
	}
	if code, _ := status(url, modernList, hdr(tb)); code != 401 {
		t.Fatalf("bob before he is added: %d", code)
	}
	os.WriteFile(file, []byte("bob:"+tb+"\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _ := status(url, modernList, hdr(tb)); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's token not accepted after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
	if code, _ := status(url, modernList, hdr(ta)); code != 401 {
		t.Errorf("alice after her token was removed: %d", code)
	}
	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t, 30*time.Second)
	logs := p.stderr.String()
	for _, want := range []string{`"principal":"alice"`, `"principal":"bob"`, "token file re-read", "readable by other users"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	if strings.Contains(logs, ta) || strings.Contains(logs, tb) {
		t.Error("a token is in the logs")
	}
}
