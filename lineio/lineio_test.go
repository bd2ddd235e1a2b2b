package lineio

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

func readAll(t *testing.T, r *Reader) (lines []string, errs []error) {
	t.Helper()
	for {
		line, err := r.Read()
		if err == io.EOF {
			return lines, errs
		}
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, ErrTooLong) {
				lines = append(lines, "<too long>")
				continue
			}
			return lines, errs
		}
		lines = append(lines, string(line))
	}
}

func TestReaderFraming(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
		err  error
	}{
		{"lf", "a\nb\n", 0, []string{"a", "b"}, nil},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b"}, nil},
		{"blank lines skipped", "\n\r\na\n\n", 0, []string{"a"}, nil},
		{"inner cr kept", "a\rb\n", 0, []string{"a\rb"}, nil},
		{"missing final newline", "a\nb", 0, []string{"a"}, io.ErrUnexpectedEOF},
		{"too long then ok", "aaaaa\nbb\n", 3, []string{"<too long>", "bb"}, nil},
		{"limit is inclusive", "aaa\naaa\r\n", 3, []string{"aaa", "aaa"}, nil},
		{"long line over bufio buffer", strings.Repeat("x", 200<<10) + "\nok\n", 100 << 10, []string{"<too long>", "ok"}, nil},
		{"big line under limit", strings.Repeat("y", 300<<10) + "\n", 0, []string{strings.Repeat("y", 300<<10)}, nil},
		{"too long at eof", strings.Repeat("z", 100<<10), 10, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, errs := readAll(t, NewReader(strings.NewReader(tt.in), tt.max))
			if strings.Join(lines, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines = %.80q, want %.80q", lines, tt.want)
			}
			var last error
			if len(errs) > 0 {
				last = errs[len(errs)-1]
			}
			if tt.err != nil && !errors.Is(last, tt.err) {
				t.Errorf("last error = %v, want %v", last, tt.err)
			}
			if tt.err == nil && last != nil && !errors.Is(last, ErrTooLong) {
				t.Errorf("unexpected error %v", last)
			}
		})
	}
}

func TestTooLongErrorDetails(t *testing.T) {
	r := NewReader(strings.NewReader("123456\r\nok\n"), 4)
	_, err := r.Read()
	var tl *TooLongError
	if !errors.As(err, &tl) || tl.Limit != 4 || tl.Size != 6 || string(tl.Head) != "123456" || string(tl.Tail) != "123456" {
		t.Fatalf("Read() err = %#v, want TooLongError{Limit:4, Size:6, Head:123456}", err)
	}
	line, err := r.Read()
	if err != nil || string(line) != "ok" {
		t.Fatalf("Read() after skip = %q, %v; want \"ok\"", line, err)
	}
}

// A line longer than the buffer (skipped in pieces) still reports its
// first and last HeadSize bytes: a caller finds the request's id there.
func TestTooLongErrorHeadOfSkippedLine(t *testing.T) {
	const limit = 100 << 10
	for _, n := range []int{3 * limit, 3*limit + 7, limit + 1} {
		for _, eol := range []string{"\n", "\r\n"} {
			line := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"` + strings.Repeat("x", n) + `"},"id2":7}`
			// iotest.OneByteReader would take minutes; pieces of odd size
			// make the tail cross the reader's fills.
			r := NewReader(&chunked{s: line + eol + "ok\n", n: 4093}, limit)
			_, err := r.Read()
			var tl *TooLongError
			if !errors.As(err, &tl) || tl.Size != int64(len(line)) || string(tl.Head) != line[:HeadSize] || string(tl.Tail) != line[len(line)-HeadSize:] {
				t.Fatalf("n=%d %q: Read() err = %v (head %.40q, tail ...%q), want the line's first and last %d bytes", n, eol, err, tl.Head, tl.Tail[max(0, len(tl.Tail)-40):], HeadSize)
			}
			if l, err := r.Read(); err != nil || string(l) != "ok" {
				t.Fatalf("Read() after skip = %q, %v", l, err)
			}
		}
	}
}

// chunked reads s in pieces of at most n bytes.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

// An over-long line costs a buffer of the limit, not the next doubling
// past it (64 MiB for the default 32 MiB limit).
func TestReaderBufferStopsAtLimit(t *testing.T) {
	const limit = 100 << 10
	for _, line := range []string{strings.Repeat("x", limit), strings.Repeat("x", limit) + "\r", strings.Repeat("x", 3*limit)} {
		r := NewReader(strings.NewReader(line+"\nok\n"), limit)
		lines, _ := readAll(t, r)
		if len(lines) != 2 || lines[1] != "ok" {
			t.Fatalf("lines = %.20q", lines)
		}
		if len(line) == limit && lines[0] != line {
			t.Errorf("a line of exactly the limit was not returned whole")
		}
		if cap(r.buf) > limit+2 {
			t.Errorf("buffer grew to %d bytes for a limit of %d", cap(r.buf), limit)
		}
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a\nb", "a\r", "\n"} {
		if err := w.Write([]byte(bad)); !errors.Is(err, ErrEmbeddedNewline) {
			t.Errorf("Write(%q) = %v, want ErrEmbeddedNewline", bad, err)
		}
	}
	if got := buf.String(); got != "{\"a\":1}\n" {
		t.Errorf("output = %q", got)
	}
}

// countingWriter records each Write call.
type countingWriter struct {
	mu     sync.Mutex
	writes []string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, string(p))
	c.mu.Unlock()
	return len(p), nil
}

// Concurrent writers: every message arrives whole, never interleaved with
// another, and batching never needs more Writes than messages.
func TestWriterConcurrent(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriter(cw)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			small := bytes.Repeat([]byte{byte('a' + g)}, 1000)
			big := bytes.Repeat([]byte{byte('A' + g)}, bigMessage+10)
			for i := range 100 {
				msg := small
				if i%10 == 0 {
					msg = big
				}
				if err := w.Write(msg); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(cw.writes) > 800+80 { // a big message may cost one extra Write
		t.Errorf("%d writes for 800 messages", len(cw.writes))
	}
	lines := strings.Split(strings.TrimSuffix(strings.Join(cw.writes, ""), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d messages out, want 800", len(lines))
	}
	for _, l := range lines {
		if strings.Count(l, l[:1]) != len(l) || (len(l) != 1000 && len(l) != bigMessage+10) {
			t.Fatalf("split or interleaved message: %.20q... (%d bytes)", l, len(l))
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n++; f.n > 1 {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func TestWriterErrorsStick(t *testing.T) {
	w := NewWriter(&failWriter{})
	if err := w.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.Write([]byte("two")); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Write after a failure = %v, want the failure", err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	msgs := []string{`{"id":1}`, `{"text":"a\\nb"}`, strings.Repeat("q", 1<<20)}
	for _, m := range msgs {
		if err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	lines, errs := readAll(t, NewReader(&buf, 0))
	if len(errs) != 0 || strings.Join(lines, "|") != strings.Join(msgs, "|") {
		t.Fatalf("round trip mismatch: errs=%v", errs)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"), 4)
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\r\n"), 0)
	f.Add([]byte("xxxxxxxxxxxxxxxxx"), 3)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max > 1<<20 {
			max = 1 << 20
		}
		r := NewReader(bytes.NewReader(in), max)
		limit := max
		if limit <= 0 {
			limit = DefaultMaxLineSize
		}
		total := 0
		for {
			line, err := r.Read()
			if err != nil {
				var tl *TooLongError
				if errors.As(err, &tl) {
					if len(tl.Head) > HeadSize || !bytes.Contains(in, tl.Head) || len(tl.Tail) > HeadSize || !bytes.Contains(in, tl.Tail) {
						t.Fatalf("head %q or tail %q is no part of the input (or over %d bytes)", tl.Head, tl.Tail, HeadSize)
					}
					continue
				}
				return
			}
			if len(line) == 0 || len(line) > limit {
				t.Fatalf("bad line length %d (limit %d)", len(line), limit)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line contains newline: %q", line)
			}
			total += len(line)
			if total > len(in) {
				t.Fatalf("read more bytes than input")
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	msg := append(bytes.Repeat([]byte("x"), 200), '\n')
	in := bytes.Repeat(msg, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	rd := bytes.NewReader(in)
	r := NewReader(rd, 0)
	for b.Loop() {
		rd.Reset(in)
		r.Reset(rd)
		for {
			if _, err := r.Read(); err != nil {
				break
			}
		}
	}
}

func BenchmarkWriter(b *testing.B) {
	msg := bytes.Repeat([]byte("x"), 200)
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg) + 1))
	for b.Loop() {
		_ = w.Write(msg)
	}
}

// slowDiscard is a pipe stand-in: each Write costs a little, so writers
// queue up behind the flusher as they do behind a real pipe.
type slowDiscard struct{}

func (slowDiscard) Write(p []byte) (int, error) {
	for i := 0; i < 200; i++ {
		_ = bytes.IndexByte(p, 0)
	}
	return len(p), nil
}

// BenchmarkWriterContended measures 1,024 goroutines writing at once, the
// shape of connect's stdout at 1,024 calls in flight.
func BenchmarkWriterContended(b *testing.B) {
	msg := bytes.Repeat([]byte("x"), 200)
	w := NewWriter(slowDiscard{})
	b.ReportAllocs()
	b.SetParallelism(512) // × GOMAXPROCS goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = w.Write(msg)
		}
	})
}
