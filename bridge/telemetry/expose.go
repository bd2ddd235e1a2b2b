package telemetry

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// contentType is the Prometheus text exposition format, version 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// ServeHTTP answers a scrape: every family that has a series, sorted by
// name, its series sorted by label values. The text is streamed through a
// small buffer (8,192 operation series are some megabytes of text: not
// held whole), gzip-compressed when the scraper accepts it.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "telemetry: /metrics takes GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Add("Vary", "Accept-Encoding")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			gz.Close()
			gz.Reset(io.Discard)
			gzipPool.Put(gz)
		}()
		out = gz
	}
	tw := writerPool.Get().(*textWriter)
	tw.w.Reset(out)
	m.write(tw)
	tw.w.Flush() // a failed write is the scraper gone: nothing to tell it
	tw.w.Reset(nil)
	writerPool.Put(tw)
}

var (
	// BestSpeed: the scrape's CPU is the bridge's, and the bytes usually
	// cross a loopback or a cluster network (8,192 series: 57 ms instead
	// of 126 at the default level).
	gzipPool = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return w
	}}
	writerPool = sync.Pool{New: func() any { return &textWriter{w: bufio.NewWriterSize(nil, 32<<10)} }}
)

// acceptsGzip reports whether an Accept-Encoding value lists gzip with a
// non-zero quality.
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		return err == nil && v > 0
	}
	return false
}

// write reads the stored families and the scrape-time ones (the watched
// Gauges, the process and the Go runtime) and writes them in name order.
func (m *metrics) write(tw *textWriter) {
	fams := slices.Concat(m.static, m.watched(), processFamilies(&m.proc), runtimeFamilies())
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for _, f := range fams {
		tw.family(f, f.series())
	}
}

// A textWriter writes families in the text format; buf is the line being
// made, cum the scratch for cumulative bucket counts.
type textWriter struct {
	w   *bufio.Writer
	buf []byte
	cum []uint64
}

// family writes f's HELP, TYPE and series; nothing when it has none
// (a metric never used does not appear).
func (t *textWriter) family(f *family, series []*child) {
	if len(series) == 0 {
		return
	}
	b := append(t.buf[:0], "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = appendHelp(b, f.help)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.kind.String()...)
	b = append(b, '\n')
	t.w.Write(b)
	for _, c := range series {
		b = b[:0]
		switch f.kind {
		case kindCounter:
			b = appendSeries(b, f, "", c, "", "")
			if c.fv != nil {
				b = appendFloat(b, *c.fv)
			} else {
				b = strconv.AppendUint(b, c.c.n.Load(), 10)
			}
			b = append(b, '\n')
		case kindGauge:
			b = appendSeries(b, f, "", c, "", "")
			b = appendFloat(b, c.g.get())
			b = append(b, '\n')
		case kindHistogram:
			var sum float64
			t.cum, sum = c.h.snapshot(t.cum)
			for i, n := range t.cum {
				b = appendSeries(b, f, "_bucket", c, "le", f.les[i])
				b = strconv.AppendUint(b, n, 10)
				b = append(b, '\n')
			}
			b = appendSeries(b, f, "_sum", c, "", "")
			b = append(appendFloat(b, sum), '\n')
			b = appendSeries(b, f, "_count", c, "", "")
			b = append(strconv.AppendUint(b, t.cum[len(t.cum)-1], 10), '\n')
		case kindSummary:
			for i, q := range c.s.quantiles {
				b = appendSeries(b, f, "", c, "quantile", strconv.FormatFloat(q, 'g', -1, 64))
				b = append(appendFloat(b, c.s.values[i]), '\n')
			}
			b = appendSeries(b, f, "_sum", c, "", "")
			b = append(appendFloat(b, c.s.sum), '\n')
			b = appendSeries(b, f, "_count", c, "", "")
			b = append(strconv.AppendUint(b, c.s.count, 10), '\n')
		}
		t.w.Write(b)
	}
	t.buf = b[:0]
}

// appendSeries appends `name{labels} ` with the extra label (le, quantile)
// last, as Prometheus prints it.
func appendSeries(b []byte, f *family, suffix string, c *child, extra, extraVal string) []byte {
	b = append(b, f.name...)
	b = append(b, suffix...)
	if len(c.values) > 0 || extra != "" {
		b = append(b, '{')
		for i, v := range c.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, f.labels[i], v)
		}
		if extra != "" {
			if len(c.values) > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, extra, extraVal)
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendHelp escapes a HELP text: the format knows \\ and \n there.
func appendHelp(b []byte, help string) []byte { return appendEscaped(b, help, false) }

// appendEscaped escapes s for the text format: backslash and newline, and
// in a label value also the double quote. Bytes that are not UTF-8 become
// U+FFFD: Prometheus rejects the whole scrape over one such label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				b = append(b, `\\`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '"' && quote:
				b = append(b, `\"`...)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// appendFloat formats v as Prometheus does: the shortest representation
// that reads back exactly, and +Inf, -Inf, NaN by those names.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
