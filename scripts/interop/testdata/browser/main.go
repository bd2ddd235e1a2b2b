//go:build interop

// Command browser is the non-interactive "browser" of the OAuth interop
// tests (mcp-bridge connect --oauth-browser PATH; $BROWSER for
// mcp-remote's opener): it fetches the URL given as its last argument and
// follows the redirects, which is what a person approving the login does
// when the authorization server redirects at once, until the loopback
// callback answers. With MCP_INTEROP_BROWSER_LOG set it appends one line
// per run to that file, so tests can count logins.
//
// A redirect target that refuses the connection is tried again for up to
// 10 s: a person takes seconds to approve, and some clients (mcp-remote
// 0.15.1) open the browser before their callback server listens.
package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"syscall"
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
	hc := &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for hops := 0; hops < 10; hops++ {
		resp, err := get(hc, u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "browser:", err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			next, err := resp.Request.URL.Parse(loc)
			if err != nil {
				fmt.Fprintln(os.Stderr, "browser: bad Location:", err)
				os.Exit(1)
			}
			u = next.String()
			continue
		}
		fmt.Fprintf(os.Stderr, "browser: landed on %s://%s%s: %d %s\n", resp.Request.URL.Scheme, resp.Request.URL.Host, resp.Request.URL.Path, resp.StatusCode, b)
		if resp.StatusCode != http.StatusOK {
			os.Exit(1)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "browser: too many redirects")
	os.Exit(1)
}

// get fetches u, trying again while the connection is refused (see the
// package comment), up to 10 s.
func get(hc *http.Client, u string) (*http.Response, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get(u)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return resp, err
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "browser: connection refused, trying again:", ue.URL)
		}
		time.Sleep(250 * time.Millisecond) // a person's pace, not synchronization
	}
}
