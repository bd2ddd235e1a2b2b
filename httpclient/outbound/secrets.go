package outbound

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// minSecret is the shortest value Secrets scrubs: shorter ones (a header
// "X-Debug: 1") would mangle every message they happen to occur in, and
// are not secrets anyone relies on.
const minSecret = 4

// Secrets are the values configured for one endpoint that may be
// credentials: its URL's user name, password and query values, and its
// configured header values (with the token part of "Bearer xyz" on its
// own). An answer to a client (a JSON-RPC error) goes through Scrub, so
// that a remote echoing its request back in an error body, or an error
// text quoting the URL, hands none of them to the client.
type Secrets []string

// SecretsOf collects the secrets of rawURL and h.
func SecretsOf(rawURL string, h http.Header) Secrets {
	var s Secrets
	add := func(v string) {
		if len(v) >= minSecret && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	if u, err := url.Parse(rawURL); err == nil {
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			add(u.User.String())
			// The user info as written, which may escape differently.
			if _, rest, ok := strings.Cut(rawURL, "://"); ok {
				if at := strings.LastIndexByte(rest, '@'); at >= 0 && !strings.ContainsAny(rest[:at], "/?#") {
					info := rest[:at]
					add(info)
					user, pass, _ := strings.Cut(info, ":")
					add(user)
					add(pass)
				}
			}
		}
		add(u.RawQuery)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
	}
	for _, vs := range h {
		for _, v := range vs {
			add(v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				add(strings.TrimSpace(cred)) // "Bearer TOKEN": TOKEN alone
			}
		}
	}
	// Longest first, so a value containing another is replaced whole.
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return s
}

// Scrub replaces every secret in text by "[redacted]".
func (s Secrets) Scrub(text string) string {
	for _, v := range s {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return text
}
