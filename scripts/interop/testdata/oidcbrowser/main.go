//go:build interop

// Command oidcbrowser is the scripted browser of the node-oidc-provider
// interop test (mcp-bridge connect --oauth-browser PATH): given the
// authorization URL as its last argument it does what a person does —
// follows the redirects with cookies, fills in and submits the provider's
// sign-in form (any login and password: the provider's development
// interactions accept them) and its consent form, and follows the final
// redirect to connect's loopback callback. With MCP_INTEROP_BROWSER_LOG
// set it appends one line per run to that file, so tests can count
// logins. It exits 0 once the callback answered 200, 1 otherwise.
//
// With --user-code CODE before the URL it approves a device authorization
// (RFC 8628) instead: the URL is the verification URI, CODE goes into the
// provider's user code form, the confirmation, sign-in and consent forms
// follow, and it exits 0 once the provider shows its success page.
package main

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

var (
	formRE  = regexp.MustCompile(`(?is)<form[^>]*\baction="([^"]*)"[^>]*>(.*?)</form>`)
	inputRE = regexp.MustCompile(`(?is)<input\b([^>]*)>`)
	attrRE  = regexp.MustCompile(`(?is)\b(name|value)="([^"]*)"`)
)

// userCode is the device grant's user code (--user-code), "" for a login
// through the authorization endpoint.
var userCode string

func main() {
	if len(os.Args) == 4 && os.Args[1] == "--user-code" {
		userCode = os.Args[2]
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: oidcbrowser URL")
		os.Exit(2)
	}
	if p := os.Getenv("MCP_INTEROP_BROWSER_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
		}
	}
	if err := browse(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "oidcbrowser:", err)
		os.Exit(1)
	}
}

func browse(start string) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	u, err := url.Parse(start)
	if err != nil {
		return err
	}
	method, form := http.MethodGet, url.Values(nil)
	for hop := 0; hop < 30; hop++ {
		var resp *http.Response
		if method == http.MethodPost {
			resp, err = hc.PostForm(u.String(), form)
		} else {
			resp, err = hc.Get(u.String())
		}
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			if u, err = u.Parse(loc); err != nil {
				return err
			}
			method, form = http.MethodGet, nil
			continue
		}
		if u.Hostname() == "127.0.0.1" && u.Path == "/callback" {
			fmt.Fprintf(os.Stderr, "oidcbrowser: callback answered %d: %s\n", resp.StatusCode, strings.TrimSpace(string(b)))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("the callback answered %d", resp.StatusCode)
			}
			return nil
		}
		if userCode != "" && resp.StatusCode == http.StatusOK && strings.Contains(string(b), "Sign-in Success") {
			fmt.Fprintln(os.Stderr, "oidcbrowser: the device authorization was approved")
			return nil
		}
		m := formRE.FindSubmatch(b)
		if resp.StatusCode != http.StatusOK || m == nil {
			return fmt.Errorf("%s %s: %d, no form to submit: %.600s", method, u.Redacted(), resp.StatusCode, b)
		}
		action, err := u.Parse(html.UnescapeString(string(m[1])))
		if err != nil {
			return err
		}
		form = url.Values{}
		for _, in := range inputRE.FindAllSubmatch(m[2], -1) {
			var name, value string
			for _, a := range attrRE.FindAllSubmatch(in[1], -1) {
				if strings.EqualFold(string(a[1]), "name") {
					name = html.UnescapeString(string(a[2]))
				} else {
					value = html.UnescapeString(string(a[2]))
				}
			}
			switch name {
			case "":
				continue
			case "login":
				value = "interop-user"
			case "password":
				value = "interop-password"
			case "user_code":
				if value == "" {
					value = userCode
				}
			}
			form.Set(name, value)
		}
		fmt.Fprintf(os.Stderr, "oidcbrowser: submitting the %q form\n", form.Get("prompt"))
		u, method = action, http.MethodPost
	}
	return fmt.Errorf("too many steps")
}
