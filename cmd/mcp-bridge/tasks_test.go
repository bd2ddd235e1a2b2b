package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestTaskRequestThroughConnectAndServe: a raw 2026-07-28 tasks/get from a
// stdio host goes connect → serve → child. connect derives Mcp-Name from
// params.taskId (SEP-2663 §Streamable HTTP: Routing Headers) and serve
// checks it (a missing one is 400 -32020); the task is no one's, so serve
// answers it as not found without asking the child.
func TestTaskRequestThroughConnectAndServe(t *testing.T) {
	addr := freePort(t)
	startBridgeProc(t, "serve", "--listen", addr, "--", bin["memos"])
	waitReady(t, addr)
	cmd := exec.Command(bin["mcp-bridge"], "connect", "http://"+addr+"/mcp")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"task-1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	var resp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &resp); err != nil || resp.ID != 7 || resp.Error.Code != -32602 || resp.Error.Message != "Task not found" {
		t.Errorf("got %s (%v), want serve's -32602 Task not found", out, err)
	}
}
