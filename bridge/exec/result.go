package exec

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// outputSchema describes structuredContent, the same for every tool.
var outputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"exitCode":{"type":"integer","description":"the program's exit status; -1 when it was stopped by a signal, timed out or did not start"},` +
	`"stdout":{"type":"string","description":"standard output, at most maxOutput bytes (base64 when stdoutEncoding says so)"},` +
	`"stderr":{"type":"string","description":"standard error, at most maxOutput bytes (base64 when stderrEncoding says so)"},` +
	`"durationMs":{"type":"integer","description":"wall time of the execution in milliseconds"},` +
	`"truncated":{"type":"boolean","description":"stdout or stderr was longer than maxOutput and was cut"},` +
	`"timedOut":{"type":"boolean","description":"the tool's timeout ended the program"},` +
	`"stdoutEncoding":{"type":"string","enum":["base64"],"description":"present when stdout was not UTF-8"},` +
	`"stderrEncoding":{"type":"string","enum":["base64"],"description":"present when stderr was not UTF-8"}` +
	`},"required":["exitCode","stdout","stderr","durationMs","truncated"]}`)

type content struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	Resource *resource `json:"resource,omitempty"`
}

type resource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Blob     string `json:"blob"`
}

type structured struct {
	ExitCode       int    `json:"exitCode"`
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	DurationMs     int64  `json:"durationMs"`
	Truncated      bool   `json:"truncated"`
	TimedOut       bool   `json:"timedOut,omitempty"`
	StdoutEncoding string `json:"stdoutEncoding,omitempty"`
	StderrEncoding string `json:"stderrEncoding,omitempty"`
}

type callResult struct {
	ResultType        string          `json:"resultType,omitempty"`
	Content           []content       `json:"content"`
	StructuredContent structured      `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// text returns a captured stream as text, or base64 when it is not UTF-8.
// A cut may have split the last character: up to three trailing bytes of
// an incomplete sequence are dropped before the check.
func text(c *capture) (s string, binary bool) {
	b := c.buf
	if c.truncated() {
		for i := 0; i < 3 && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(c.buf), true
}

// result builds the tools/call result of an execution: the output as text
// content (stdout, then stderr when there is any; base64 resource content
// for output that is not UTF-8), notes on truncation, timeout and exit
// status, and the same facts as structuredContent. A non-zero exit is a
// tool error (isError), which the model sees, not a protocol error.
func (o outcome) result(tool string) callResult {
	r := callResult{StructuredContent: structured{
		ExitCode:   o.exitCode,
		DurationMs: o.duration.Milliseconds(),
		Truncated:  o.stdout.truncated() || o.stderr.truncated(),
		TimedOut:   o.timedOut,
	}}
	if o.startErr != nil {
		r.IsError = true
		r.Content = []content{{Type: "text", Text: "exec: " + tool + " did not start: " + o.startErr.Error()}}
		return r
	}
	streams := []struct {
		name string
		c    *capture
		dst  *string
		enc  *string
	}{
		{"stdout", o.stdout, &r.StructuredContent.Stdout, &r.StructuredContent.StdoutEncoding},
		{"stderr", o.stderr, &r.StructuredContent.Stderr, &r.StructuredContent.StderrEncoding},
	}
	for i, st := range streams {
		s, binary := text(st.c)
		*st.dst = s
		if binary {
			*st.enc = "base64"
		}
		if i == 1 && st.c.total == 0 {
			continue // stderr only when the program wrote some
		}
		switch {
		case binary:
			r.Content = append(r.Content, content{Type: "resource", Resource: &resource{
				URI: "exec://" + tool + "/" + st.name, MimeType: "application/octet-stream", Blob: s}})
		case i == 0:
			r.Content = append(r.Content, content{Type: "text", Text: s})
		default:
			r.Content = append(r.Content, content{Type: "text", Text: "stderr:\n" + s})
		}
		if st.c.truncated() {
			r.Content = append(r.Content, content{Type: "text", Text: fmt.Sprintf(
				"[%s truncated: %d of %d bytes kept (maxOutput)]", st.name, len(st.c.buf), st.c.total)})
		}
	}
	switch {
	case o.timedOut:
		r.IsError = true
		r.Content = append(r.Content, content{Type: "text", Text: fmt.Sprintf(
			"[timed out after %d ms: the program and everything it started were stopped]", o.duration.Milliseconds())})
	case o.exitCode != 0:
		r.IsError = true
		r.Content = append(r.Content, content{Type: "text", Text: fmt.Sprintf("[exit code %d]", o.exitCode)})
	}
	return r
}
