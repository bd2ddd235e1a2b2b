package lineio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
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
	if !errors.As(err, &tl) || tl.Limit != 4 || tl.Size != 6 {
		t.Fatalf("Read() err = %#v, want TooLongError{Limit:4, Size:6}", err)
	}
	line, err := r.Read()
	if err != nil || string(line) != "ok" {
		t.Fatalf("Read() after skip = %q, %v; want \"ok\"", line, err)
	}
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
	f.Add([]byte("xxxxxxxx\r\r\nyy\n"), 3)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max > 1<<20 {
			max = 1 << 20
		}
		r := NewReader(iotest.HalfReader(bytes.NewReader(in)), max)
		limit := max
		if limit <= 0 {
			limit = DefaultMaxLineSize
		}
		// The lines the input holds, terminated ones only.
		var want [][]byte
		segs := bytes.Split(in, []byte("\n"))
		for _, l := range segs[:len(segs)-1] {
			if l = bytes.TrimSuffix(l, []byte("\r")); len(l) > 0 {
				want = append(want, l)
			}
		}
		for k := 0; ; k++ {
			line, err := r.Read()
			if err != nil && !errors.Is(err, ErrTooLong) {
				if k != len(want) {
					t.Fatalf("ended (%v) after %d of %d lines", err, k, len(want))
				}
				return
			}
			if k >= len(want) {
				t.Fatalf("line %d: more lines than the input holds", k)
			}
			w := want[k]
			var tl *TooLongError
			if errors.As(err, &tl) {
				n := min(len(w), PeekSize)
				if len(w) <= limit || tl.Size != int64(len(w)) || !bytes.Equal(tl.Head, w[:n]) || !bytes.Equal(tl.Tail, w[len(w)-n:]) {
					t.Fatalf("line %d (%d bytes, limit %d) skipped as %d bytes, head %q, tail %q", k, len(w), limit, tl.Size, tl.Head, tl.Tail)
				}
				continue
			}
			if !bytes.Equal(line, w) {
				t.Fatalf("line %d = %q, want %q", k, line, w)
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

// A skipped line's ends are kept, however the line arrives: in one read,
// a byte at a time (the "\r\n" split across reads), or much larger than
// the buffer.
func TestTooLongErrorKeepsEnds(t *testing.T) {
	line := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "%d,", i)
		}
		return b.String()[:n]
	}
	for _, tc := range []struct {
		name  string
		size  int
		limit int
	}{
		{"shorter than a peek", 100, 10},
		{"between one and two peeks", PeekSize + 100, 10},
		{"in the buffer", 3 * PeekSize, 2 * PeekSize},
		{"past the buffer", 500 << 10, 70 << 10},
	} {
		for _, term := range []string{"\n", "\r\n"} {
			for _, oneByte := range []bool{false, true} {
				if oneByte && tc.size > 64<<10 {
					continue
				}
				l := line(tc.size)
				var in io.Reader = strings.NewReader(l + term + "ok\n")
				if oneByte {
					in = iotest.OneByteReader(in)
				}
				r := NewReader(in, tc.limit)
				_, err := r.Read()
				var tl *TooLongError
				if !errors.As(err, &tl) {
					t.Fatalf("%s: err = %v", tc.name, err)
				}
				n := min(tc.size, PeekSize)
				if tl.Size != int64(tc.size) || string(tl.Head) != l[:n] || string(tl.Tail) != l[len(l)-n:] {
					t.Errorf("%s %q one byte %v: size %d head %.20q... tail ...%.20q", tc.name, term, oneByte, tl.Size, tl.Head, tl.Tail[max(0, len(tl.Tail)-20):])
				}
				if next, err := r.Read(); err != nil || string(next) != "ok" {
					t.Errorf("%s: next line %q, %v", tc.name, next, err)
				}
			}
		}
	}
}
