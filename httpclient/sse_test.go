package httpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
)

func TestPostSSEParsing(t *testing.T) {
	stream := strings.Join([]string{
		": comment before anything\r\n\r\n",
		"id: prime-1\r\ndata:\r\n\r\n", // priming event: id, empty data
		"retry: 1500\r\n\r\n",
		"event: message\r\nid: 2\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata:  \"method\":\"x\"}\r\n\r\n", // CRLF, two data lines, second keeps one space
		"\n\n\n",                                 // stray blank lines
		"event: unknown\n\n",                     // unknown name, no data: skipped
		"event: custom\ndata: c\n\n",             // unknown name with data: returned
		"data:no-space\rdata\r\r",                // CR line endings, "data" without colon
		"id: bad\x00id\nretry: 12x\ndata: d\n\n", // NUL id and non-digit retry are ignored
		"data: e\n: inline comment\nfoo: bar\ndata: f\n\n",
		"data: trailing event without blank line",
	}, "")
	srv := newServer(t, sseHandler(stream))
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	want := []string{
		"{\"jsonrpc\":\"2.0\",\n \"method\":\"x\"}",
		"c",
		"no-space\n",
		"d",
		"e\nf",
		"trailing event without blank line",
	}
	if got := mustReadAll(t, resp); !slices.Equal(got, want) {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
	if resp.LastEventID() != "2" {
		t.Errorf("LastEventID = %q, want 2", resp.LastEventID())
	}
	if resp.RetryDelay() != 1500*time.Millisecond {
		t.Errorf("RetryDelay = %v, want 1.5s", resp.RetryDelay())
	}
}

// TestPostSSETinyWrites sends every event one byte per flushed write and
// sends the next event only after the client has returned the previous one,
// so any reader that waits for more data than it needs deadlocks here.
func TestPostSSETinyWrites(t *testing.T) {
	events := []string{
		"id: 1\ndata: lf\n\n",
		"data: crlf\r\n\r\n",
		"data: cr\r\r",
		"data: crlf-lf\r\n\n",
		"data: lf-crlf\n\r\n",
		": ping\n\ndata: after-comment\n\n",
	}
	want := []string{"lf", "crlf", "cr", "crlf-lf", "lf-crlf", "after-comment"}
	ack := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		f.Flush()
		for _, ev := range events {
			for i := 0; i < len(ev); i++ {
				if _, err := w.Write([]byte{ev[i]}); err != nil {
					return
				}
				f.Flush()
			}
			select {
			case <-ack:
			case <-r.Context().Done():
				return
			}
		}
	})
	c := newClient(t, srv.URL)
	resp, err := c.Post(context.Background(), []byte(reqBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	type result struct {
		msg string
		err error
	}
	for i, w := range want {
		ch := make(chan result, 1)
		go func() {
			msg, err := resp.Next()
			ch <- result{string(msg), err}
		}()
		res := waitFor(t, ch, "event "+w)
		if res.err != nil || res.msg != w {
			t.Fatalf("event %d = %q, %v; want %q", i, res.msg, res.err, w)
		}
		ack <- struct{}{}
	}
	if _, err := resp.Next(); err != io.EOF {
		t.Errorf("Next at the end = %v, want io.EOF", err)
	}
}

func TestParseEvent(t *testing.T) {
	tests := []struct {
		block, data, event, id, rest string
		hasData, hasID               bool
		retry                        time.Duration
	}{
		{block: "data: a", data: "a", hasData: true},
		{block: "data:a", data: "a", hasData: true},
		{block: "data:  a", data: " a", hasData: true},
		{block: "data", hasData: true},
		{block: "data:", hasData: true},
		{block: "data\ndata", data: "\n", hasData: true},
		{block: "data: a\ndata: b\r\ndata: c\rdata: d", data: "a\nb\nc\nd", hasData: true},
		{block: "event: x\nid: 7\nretry: 250", event: "x", id: "7", hasID: true, retry: 250 * time.Millisecond},
		{block: "id:", hasID: true},
		{block: "id: a\x00b"},
		{block: "retry:", retry: 0},
		{block: "retry: -1"},
		{block: ": comment\n:\nDATA: upper\nunknown field: data: x"},
		{block: "data: a\n\rdata: b", data: "a", hasData: true, rest: "data: b"},
		{block: "\ndata: b", rest: "data: b"},
	}
	for _, tt := range tests {
		var buf []byte
		ev, rest, _ := parseEvent([]byte(tt.block), &buf)
		if string(ev.data) != tt.data || ev.hasData != tt.hasData || string(ev.event) != tt.event ||
			string(ev.id) != tt.id || ev.hasID != tt.hasID || ev.retry != tt.retry || string(rest) != tt.rest {
			t.Errorf("parseEvent(%q) = data %q/%v event %q id %q/%v retry %v rest %q", tt.block,
				ev.data, ev.hasData, ev.event, ev.id, ev.hasID, ev.retry, rest)
		}
	}
}

func TestParseEventReusesBuffer(t *testing.T) {
	block := []byte("data: a\ndata: b")
	var buf []byte
	parseEvent(block, &buf)
	allocs := testing.AllocsPerRun(100, func() {
		parseEvent([]byte("id: 1\nevent: message\ndata: single line"), &buf)
		parseEvent(block, &buf)
	})
	if allocs != 0 {
		t.Errorf("parseEvent allocates %v times per run, want 0", allocs)
	}
}

func TestParseRetry(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "1": time.Millisecond, "3000": 3 * time.Second,
		"99999999999999999999999": maxRetryMillis * time.Millisecond,
	} {
		if got, ok := parseRetry([]byte(in)); !ok || got != want {
			t.Errorf("parseRetry(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", " 1", "1 ", "+1", "-1", "1.5", "1e3"} {
		if _, ok := parseRetry([]byte(in)); ok {
			t.Errorf("parseRetry(%q) accepted", in)
		}
	}
}

// TestFillReaderDoesNotWithhold feeds the framer through a pipe one byte at
// a time and expects each event as soon as its terminator is written.
func TestFillReaderDoesNotWithhold(t *testing.T) {
	for _, term := range []string{"\n\n", "\r\r", "\r\n\r\n", "\r\n\n", "\n\r\n"} {
		pr, pw := io.Pipe()
		er := sse.NewEventStreamReader(&fillReader{r: pr}, 1<<20)
		written := make(chan struct{})
		go func() {
			defer pw.Close()
			for _, ev := range []string{"data: one" + term, "data: two" + term} {
				for i := 0; i < len(ev); i++ {
					if _, err := pw.Write([]byte{ev[i]}); err != nil {
						return
					}
				}
				if _, ok := <-written; !ok {
					return
				}
			}
		}()
		for _, want := range []string{"data: one", "data: two"} {
			got := make(chan string, 1)
			go func() {
				raw, err := er.ReadEvent()
				if err != nil {
					got <- "error: " + err.Error()
					return
				}
				got <- string(raw)
			}()
			if g := waitFor(t, got, "event after "+strconvQuote(term)); g != want {
				t.Errorf("terminator %q: event = %q, want %q", term, g, want)
			}
			written <- struct{}{}
		}
		close(written)
		pr.Close()
	}
}

func strconvQuote(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", `\r`), "\n", `\n`)
}

func TestMayEndEvent(t *testing.T) {
	yes := []string{"\n", "\rabc", "ab\n\ncd", "ab\r\rcd", "ab\n\rcd", "x\r\n\r\n"}
	no := []string{"", "abc", "ab\ncd", "ab\r\ncd", "a\rb\nc"}
	for _, s := range yes {
		if !mayEndEvent([]byte(s)) {
			t.Errorf("mayEndEvent(%q) = false", s)
		}
	}
	for _, s := range no {
		if mayEndEvent([]byte(s)) {
			t.Errorf("mayEndEvent(%q) = true", s)
		}
	}
}

// refEvents is an independent, line-by-line reading of the WHATWG rules: the
// non-empty data of every event in block, and the last id.
func refEvents(block string) (msgs []string, lastID string, hasID bool) {
	var lines []string
	var cur strings.Builder
	for i := 0; i < len(block); i++ {
		switch c := block[i]; c {
		case '\r':
			if i+1 < len(block) && block[i+1] == '\n' {
				i++
			}
			fallthrough
		case '\n':
			lines = append(lines, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	lines = append(lines, "") // the framer's terminator
	var data []string
	for _, line := range lines {
		if line == "" {
			if d := strings.Join(data, "\n"); d != "" {
				msgs = append(msgs, d)
			}
			data = nil
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "data":
			data = append(data, value)
		case "id":
			if !strings.Contains(value, "\x00") {
				lastID, hasID = value, true
			}
		}
	}
	return msgs, lastID, hasID
}

// parseBlock runs parseEvent over block the way Response.Next does.
func parseBlock(block []byte) (msgs []string, lastID string, hasID bool) {
	var buf []byte
	for rest := block; len(rest) > 0; {
		var ev sseEvent
		ev, rest, _ = parseEvent(rest, &buf)
		if ev.hasID {
			lastID, hasID = string(ev.id), true
		}
		if len(ev.data) > 0 {
			msgs = append(msgs, string(ev.data))
		}
	}
	return msgs, lastID, hasID
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		"data: a", "data: a\ndata: b", "data:a\r\ndata:b\rdata", "id: 1\ndata:", ": c\nevent: x\ndata: y",
		"retry: 100\nid\ndata:  z", "data: a\n\rdata: b", "\r\n\ndata: q", "id: \x00\ndata: n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		msgs, id, hasID := parseBlock(block)
		wantMsgs, wantID, wantHasID := refEvents(string(block))
		if !slices.Equal(msgs, wantMsgs) || id != wantID || hasID != wantHasID {
			t.Fatalf("block %q:\n got %q id %q/%v\nwant %q id %q/%v", block, msgs, id, hasID, wantMsgs, wantID, wantHasID)
		}
	})
}

// chunkReader returns at most n bytes per Read, and sometimes nothing; at
// the end it returns err, or io.EOF if err is nil.
type chunkReader struct {
	data []byte
	n    int
	i    int
	err  error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	r.i++
	if r.i%5 == 0 {
		return 0, nil
	}
	m := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[m:]
	return m, nil
}

// streamMessages reads body as the Next of an SSE Response does. Unlike
// newResponse it does not add a fillReader; pass one as fill to use it.
func streamMessages(t testing.TB, body io.Reader, fill *fillReader, maxEvent int) ([]string, error) {
	t.Helper()
	if fill != nil {
		body = fill
	}
	r := &Response{Kind: KindSSE, method: "GET", ctx: context.Background(), maxEvent: maxEvent,
		frames: &framer{events: sse.NewEventStreamReader(body, maxEvent), fill: fill}}
	return readAll(t, r)
}

func FuzzSSEStream(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\nid: 1\rdata: c\r\r: x\n\n"), uint8(1), uint16(64))
	f.Add([]byte("data: "+strings.Repeat("y", 300)+"\n\ndata: z"), uint8(7), uint16(100))
	f.Add([]byte("\n\r\n\r\r\n\n\r"), uint8(2), uint16(8))
	f.Add([]byte("data: a\r\n\r"), uint8(3), uint16(50))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, limit uint16) {
		maxEvent := int(limit%4096) + 1
		n := int(chunk%13) + 1
		// Reference: the plain framer reading large chunks.
		want, wantErr := streamMessages(t, bytes.NewReader(stream), nil, maxEvent)
		if wantErr != io.EOF && !errors.Is(wantErr, ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", wantErr)
		}
		// Same bytes in tiny reads through fillReader must give the same events.
		got, err := streamMessages(t, nil, &fillReader{r: &chunkReader{data: stream, n: n}}, maxEvent)
		if !slices.Equal(got, want) {
			t.Fatalf("fillReader changed the events:\n got %q\nwant %q", got, want)
		}
		if errors.Is(err, ErrEventTooLarge) != errors.Is(wantErr, ErrEventTooLarge) || (err == io.EOF) != (wantErr == io.EOF) {
			t.Fatalf("errors differ: %v vs %v", err, wantErr)
		}
		// A broken body gives the same events except a final unterminated one,
		// and reports the break rather than a clean end.
		broken, err := streamMessages(t, nil, &fillReader{r: &chunkReader{data: stream, n: n, err: io.ErrUnexpectedEOF}}, maxEvent)
		if len(broken) > len(want) || len(want)-len(broken) > 1 || !slices.Equal(broken, want[:len(broken)]) {
			t.Fatalf("broken body: got %q, want a prefix of %q missing at most the last", broken, want)
		}
		if wantErr == io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("broken body ended with %v", err)
		}
		terminated := bytes.HasSuffix(stream, []byte("\n\n")) || bytes.HasSuffix(stream, []byte("\r\r")) ||
			bytes.HasSuffix(stream, []byte("\n\r\n"))
		if wantErr == io.EOF && terminated && len(broken) != len(want) {
			t.Fatalf("broken body after a complete event lost messages: %q vs %q", broken, want)
		}
	})
}

func TestSSEStreamSeeds(t *testing.T) {
	// Keeps the fuzz helpers honest when the fuzzer is not run.
	msgs, err := streamMessages(t, nil, &fillReader{r: &chunkReader{data: []byte("data: a\n\ndata: b"), n: 1}}, 64)
	if err != io.EOF || !slices.Equal(msgs, []string{"a", "b"}) {
		t.Errorf("got %q, %v", msgs, err)
	}
}

// A body that now and then returns (0, nil) between one-byte chunks is slow,
// not stuck: filling one large buffer takes hundreds of empty reads in all but
// never many in a row, and must not end as io.ErrNoProgress (found by
// FuzzSSEStream in CI).
func TestFillReaderCountsOnlyConsecutiveEmptyReads(t *testing.T) {
	event := "data: " + strings.Repeat("x", 3000) + "\n\n"
	msgs, err := streamMessages(t, nil, &fillReader{r: &chunkReader{data: []byte(event), n: 1}}, 4096)
	if err != io.EOF || len(msgs) != 1 || len(msgs[0]) != 3000 {
		t.Fatalf("got %d messages, %v", len(msgs), err)
	}
	// Many empty reads in a row are still no progress.
	stuck := &fillReader{r: readerFunc(func([]byte) (int, error) { return 0, nil })}
	if _, err := stuck.Read(make([]byte, 8)); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("stuck body: %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
