package connect

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// LogToHost reaches the host only once it sent notifications/initialized
// (hostio.Host.LogNotice), as one notifications/message line.
func TestLogToHostAfterInitialized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	b, err := New(Config{URL: srv.URL, Protocol: ProtocolLegacy})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- b.Run(context.Background(), inR, outW)
		outW.Close()
	}()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
		for range lines {
		}
	}()

	if b.LogToHost("warning", "code 1") {
		t.Error("a notice was sent before the host's notifications/initialized")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	deadline := time.Now().Add(10 * time.Second)
	for !b.LogToHost("warning", "code 2") {
		if time.Now().After(deadline) {
			t.Fatal("no notice sent within 10s of notifications/initialized")
		}
		runtime.Gosched()
	}
	var m struct {
		Method string
		Params struct{ Level, Logger, Data string }
	}
	if err := json.Unmarshal([]byte(<-lines), &m); err != nil || m.Method != "notifications/message" ||
		m.Params.Level != "warning" || m.Params.Logger != "mcp-bridge" || m.Params.Data != "code 2" {
		t.Errorf("notice %+v (%v), want notifications/message from mcp-bridge with the data", m, err)
	}
}
