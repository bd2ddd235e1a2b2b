package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// browserCommand is the command that opens url: cmd (the URL appended as
// its last argument), else $BROWSER (its first entry; "%s" replaced by the
// URL, else the URL appended), else the platform's opener.
func browserCommand(cmd []string, url string) []string {
	if len(cmd) > 0 {
		return append(append([]string(nil), cmd...), url)
	}
	if b := os.Getenv("BROWSER"); b != "" {
		first, _, _ := strings.Cut(b, string(os.PathListSeparator))
		f := strings.Fields(first)
		if len(f) > 0 {
			replaced := false
			for i, a := range f {
				if strings.Contains(a, "%s") {
					f[i] = strings.ReplaceAll(a, "%s", url)
					replaced = true
				}
			}
			if !replaced {
				f = append(f, url)
			}
			return f
		}
	}
	switch runtime.GOOS {
	case "darwin":
		return []string{"open", url}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", url}
	}
	return []string{"xdg-open", url}
}

// browsers runs browser commands and reaps them. A browser may run long
// after the login (a $BROWSER that is the browser itself), so the login
// does not wait for it; close waits a bounded time.
type browsers struct {
	wg sync.WaitGroup
}

// open starts argv with its output on w (never the MCP stdout) and
// without the process's secrets in its environment.
func (b *browsers) open(argv []string, w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = w, w
	c.Env = browserEnv(os.Environ())
	if err := c.Start(); err != nil {
		return fmt.Errorf("oauth: starting the browser %q: %w", argv[0], err)
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = c.Wait()
	}()
	return nil
}

// browserEnv drops variables that hold this program's secrets.
func browserEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "MCP_BRIDGE_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// errBrowserStillRunning reports browser commands that outlived close's wait.
var errBrowserStillRunning = errors.New("oauth: a browser command is still running")

// close waits up to d for the browser commands to exit.
func (b *browsers) close(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errBrowserStillRunning
	case <-ctx.Done():
		return ctx.Err()
	}
}
