package httpclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-bridge/mcp-bridge/httpclient/outbound"
)

var (
	// ErrNoStream reports that the server answered a GET with 405 Method Not
	// Allowed: it offers no standalone SSE stream (2025-11-25 transports
	// §Listening for Messages from the Server) or is a 2026-07-28 server,
	// which has no GET at all. Callers treat it as "nothing to listen to".
	ErrNoStream = errors.New("httpclient: server offers no SSE stream (405)")

	// ErrEventTooLarge reports an SSE event or a JSON body larger than
	// [Client.MaxEventSize]. For SSE it also wraps bufio.ErrTooLong. The
	// stream cannot continue after it, because the framer has discarded input.
	ErrEventTooLarge = errors.New("httpclient: SSE event exceeds the size limit")

	// ErrUnexpectedContentType is matched (with errors.Is) by every
	// [*ContentTypeError].
	ErrUnexpectedContentType = errors.New("httpclient: unexpected content type")

	// ErrClosed is returned by [Response.Next] after [Response.Close].
	ErrClosed = errors.New("httpclient: response closed")
)

// statusBodyLimit is how much of an error response body a StatusError keeps.
const statusBodyLimit = 64 << 10

// drainLimit bounds how much more of an unwanted body is read so that the
// connection can go back to the pool; beyond it the connection is dropped.
const drainLimit = 256 << 10

// A StatusError reports a response with a status outside 2xx (for a GET,
// also 405 is reported as [ErrNoStream] instead). For 429 and 503 it is the
// error of the last attempt once retries are exhausted.
type StatusError struct {
	Method     string      // "POST", "GET" or "DELETE"
	URL        string      // the endpoint without query, fragment or password
	StatusCode int         // the HTTP status code
	Header     http.Header // the response headers (WWW-Authenticate, Retry-After, ...)
	Body       []byte      // the first 64 KiB of the response body

	// Hint, if set, says what the status may mean and what to try (a 404
	// to the POST of a server that may speak the legacy HTTP+SSE
	// transport). Error appends it.
	Hint string
}

// Error returns "httpclient: METHOD URL: CODE TEXT: body excerpt", where the
// excerpt is the first 200 bytes of the body folded onto one line.
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("httpclient: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.URL)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	if ex := excerpt(e.Body, 200); ex != "" {
		b.WriteString(": ")
		b.WriteString(ex)
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteByte(')')
	}
	return b.String()
}

// excerpt folds the first n bytes of body onto one line for error messages.
func excerpt(body []byte, n int) string {
	if len(body) > n {
		body = body[:n]
		// Do not cut a UTF-8 sequence in half.
		for len(body) > 0 && !utf8.Valid(body[max(0, len(body)-utf8.UTFMax):]) {
			body = body[:len(body)-1]
		}
	}
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(body), "?"))
	return strings.Join(strings.Fields(s), " ")
}

// newStatusError keeps the start of resp's body, drains a bounded rest so
// the connection can be reused, and closes the body.
func newStatusError(method, endpoint string, resp *http.Response) *StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyLimit))
	discard(resp.Body)
	return &StatusError{
		Method:     method,
		URL:        endpoint,
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		Body:       body,
	}
}

// discard drains up to drainLimit bytes of body and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	_ = body.Close()
}

// A ContentTypeError reports a 2xx response with a body whose media type is
// neither application/json nor text/event-stream (for a GET: not
// text/event-stream). It matches [ErrUnexpectedContentType].
type ContentTypeError struct {
	Method      string // "POST" or "GET"
	StatusCode  int    // the 2xx status
	ContentType string // the Content-Type header as received, "" if absent
}

func (e *ContentTypeError) Error() string {
	return fmt.Sprintf("httpclient: %s: unexpected content type %q in a %d response", e.Method, e.ContentType, e.StatusCode)
}

// Is makes errors.Is(err, ErrUnexpectedContentType) true.
func (e *ContentTypeError) Is(target error) bool { return target == ErrUnexpectedContentType }

// safeURL renders endpoint for errors and logs: user info, query and
// fragment are dropped because any of them may carry a credential.
func safeURL(endpoint string) string { return outbound.RedactString(endpoint) }
