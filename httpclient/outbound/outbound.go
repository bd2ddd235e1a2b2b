// Package outbound is the one policy every HTTP request the bridge sends
// goes by: connect's requests to a remote MCP server, the OAuth client's
// discovery, registration and token requests, the gateway's remote
// entries, the resource server's metadata, key set and introspection
// fetches, and the OTLP exporter. Each of them builds its http.Client with
// [Client], so a rule added here holds for all of them.
//
// The redirect rules (docs/reliability.md, "Trust boundaries"):
//
//   - A redirect is followed only to the same origin (scheme, host and
//     port) as the request the caller made. Every request the bridge sends
//     carries a credential (a bearer token, a configured header, a client
//     secret), an MCP message, or is a fetch whose answer the bridge
//     trusts (keys, metadata): none of them may go to another origin just
//     because the server said so (RFC 6750 §5.3; the MCP authorization
//     specification forbids sending a token to anything but the resource
//     it was issued for). https to http is another origin too, so no
//     request ever leaves TLS by a redirect.
//   - A request with a body (POST) is followed only on 307 and 308, which
//     keep the method and the body. On 301, 302 and 303 net/http would
//     resend it as a GET without its body: an MCP message or a token
//     request would be lost, so that is refused.
//   - At most 10 redirects.
//
// A refused redirect ends the request with a [*RedirectError] naming the
// target (without user info, query or fragment, which may carry secrets).
package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is matched (errors.Is) by every [*RedirectError].
var ErrRedirect = errors.New("outbound: redirect refused")

// maxRedirects is net/http's own default limit.
const maxRedirects = 10

// A RedirectError reports a redirect the policy refused to follow.
type RedirectError struct {
	Status int    // the 3xx status of the redirecting response (0 if unknown)
	From   string // the redirecting URL, redacted (see [Redact])
	To     string // the redirect target, redacted
	Reason string // why it was refused
}

func (e *RedirectError) Error() string {
	status := "a redirect"
	if e.Status != 0 {
		status = fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("outbound: %s from %s to %s not followed: %s", status, e.From, e.To, e.Reason)
}

// Is makes errors.Is(err, ErrRedirect) true.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }

// Client returns a copy of hc (nil: a zero http.Client, on
// http.DefaultTransport) whose redirects follow the policy. Transport,
// Jar and Timeout are kept; a CheckRedirect of hc's own runs after the
// policy has allowed a hop. The copy shares hc's Transport, so closing
// idle connections on either closes them on both.
func Client(hc *http.Client) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	own := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := CheckRedirect(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		return nil
	}
	return &c
}

// CheckRedirect is the policy as an http.Client.CheckRedirect.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	first, prev := via[0], via[len(via)-1]
	refuse := func(reason string) error {
		e := &RedirectError{From: Redact(prev.URL), To: Redact(req.URL), Reason: reason}
		if req.Response != nil {
			e.Status = req.Response.StatusCode
		}
		return e
	}
	switch {
	case len(via) >= maxRedirects:
		return refuse(fmt.Sprintf("more than %d redirects", maxRedirects))
	case prev.URL.Scheme == "https" && req.URL.Scheme != "https":
		return refuse("it leaves https")
	case !SameOrigin(first.URL, req.URL):
		return refuse("it leads to another origin than " + Origin(first.URL) + " (credentials and MCP messages stay with the origin they were configured for)")
	case prev.Method != req.Method:
		return refuse(fmt.Sprintf("it would turn the %s into a %s without its body (only 307 and 308 keep them)", prev.Method, req.Method))
	}
	return nil
}

// Origin is u's scheme://host:port, lowercased, with the scheme's default
// port made explicit, so that https://a.example and https://A.example:443
// are one origin.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// SameOrigin reports whether a and b have one origin.
func SameOrigin(a, b *url.URL) bool { return Origin(a) == Origin(b) }

// Redact renders u without user info, query and fragment: any of them may
// carry a credential (a password, an api_key parameter), and an error or
// a log line may reach someone who must not see it.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// RedactString is [Redact] for a URL string; what does not parse is
// replaced as a whole.
func RedactString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	return Redact(u)
}

// LoopbackHost reports whether host (a name or an IP literal, no port) is
// this machine's loopback as any resolver sees it: "localhost" or a
// loopback IP. It is the one rule of the binary's "plain http only on
// loopback" and "a loopback listener" checks.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
