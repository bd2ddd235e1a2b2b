package aggregate

import (
	"bufio"
	"context"
	"io"
	"sync"
	"testing"
	"time"
)

// SetServers adding a server while a session shuts down: the late start
// is refused once shutdown joins the starts, instead of adding to a group
// being waited on (a sync.WaitGroup there is Add racing Wait: -race
// reports it, or the runtime panics "WaitGroup is reused").
func TestSetServersRacingShutdown(t *testing.T) {
	alpha, beta := newPipeServer("alpha", nil), newPipeServer("beta", nil)
	textTool(alpha.srv, "alpha", "a")
	textTool(beta.srv, "beta", "b")
	as, bs := alpha.server("alpha"), beta.server("beta")
	h := newHarness(t, Config{Servers: []Server{as}, JoinTimeout: 2 * time.Second})
	for range 20 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- h.agg.Run(context.Background(), inR, outW)
			outW.Close()
		}()
		rc := &rawClient{t: t, w: inW, rd: bufio.NewReader(outR)}
		rc.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		rc.next() // initialize answered: servers added now start late
		go io.Copy(io.Discard, rc.rd)
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 50 {
				servers := []Server{as}
				if i%2 == 0 {
					servers = append(servers, bs)
				}
				if err := h.agg.SetServers(servers, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
		inW.Close()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Fatal("the session did not end")
		}
		wg.Wait()
		outR.Close()
	}
}
