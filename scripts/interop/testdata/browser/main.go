//go:build interop

// Command browser is the non-interactive "browser" of the OAuth interop
// tests (mcp-bridge connect --oauth-browser PATH): it fetches the URL given
// as its last argument and follows the redirects, which is what a person
// approving the login does when the authorization server redirects at
// once, until the loopback callback answers. With MCP_INTEROP_BROWSER_LOG
// set it appends one line per run to that file, so tests can count logins.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: browser URL")
		os.Exit(2)
	}
	u := os.Args[len(os.Args)-1]
	if p := os.Getenv("MCP_INTEROP_BROWSER_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get(u)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	fmt.Fprintf(os.Stderr, "browser: landed on %s://%s%s: %d %s\n", resp.Request.URL.Scheme, resp.Request.URL.Host, resp.Request.URL.Path, resp.StatusCode, b)
	if resp.StatusCode != http.StatusOK {
		os.Exit(1)
	}
}
