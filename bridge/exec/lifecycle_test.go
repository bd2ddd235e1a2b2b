package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Ending exec (its context: SIGTERM in the command; or its stdin, after
// DrainGrace) stops the tools still running, grandchildren included, and
// Serve returns only once they are gone.
func TestServeEndStopsTools(t *testing.T) {
	for _, how := range []string{"context", "stdin"} {
		t.Run(how, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			ts := toolsFile(t, `{"tools": {"hang": {"command": "PROBE", "args": ["spawn", "{file}"], "grace": "200ms",
			  "inputSchema": {"type": "object", "properties": {"file": {"type": "string"}}}}}}`, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inR, inW := io.Pipe()
			srv := New(ts, Options{Logger: zerolog.Nop(), DrainGrace: 300 * time.Millisecond})
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, inR, io.Discard) }()
			args, _ := json.Marshal(map[string]string{"file": pidFile})
			fmt.Fprintf(inW, "%s\n%s\n", legacyInit,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang","arguments":%s}}`, args))
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
			start := time.Now()
			if how == "context" {
				cancel()
			} else {
				inW.Close()
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Serve did not return")
			}
			t.Logf("Serve returned %v after %s ended", time.Since(start), how)
			inW.Close()
			checkGone(t, string(pids))
		})
	}
}
