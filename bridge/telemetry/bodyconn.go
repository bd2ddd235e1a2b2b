package telemetry

import (
	"bytes"
	"io"
	"net"
)

// bodyConn is the exporter's connection to a plain-HTTP collector (the
// default endpoint is http://localhost:4318: an agent beside the bridge).
// It writes a request body that is all in memory straight to the socket.
//
// Why: net/http sends a body of known length through an io.LimitedReader,
// which hides the bytes.Reader's WriteTo; the TCP connection's ReadFrom
// then falls back to io.Copy, which allocates a fresh 32 KiB buffer on
// every POST. The bridge's live heap is ~1 MB, so its collector runs at
// the runtime's 4 MB floor, and those buffers alone were ~30% of what
// tracing added to serve's allocation — one of the largest costs of
// tracing (docs/benchmarks.md). Content-Length stays as every OTLP
// exporter sends it (a chunked body would avoid the copy too, but would
// make the bridge the one OTLP exporter whose requests a proxy in front
// of a collector may not expect).
//
// Under TLS the tls.Conn writes through Write, and this never runs.
type bodyConn struct{ net.Conn }

// ReadFrom writes what r holds. When r is the exporter's body as net/http
// hands it over — a postBody inside the LimitedReader of its
// Content-Length, with nothing beyond the limit — that is one Write of its
// bytes. Anything else goes the way it would have without this type.
func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(postBody); ok && int64(b.Len()) <= lr.N {
			n, err := b.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// postBody is the body of the exporter's POST: a type of its own, so that
// bodyConn knows it (net/http unwraps a Body it wrapped itself, such as
// io.NopCloser's, only one level deep).
type postBody struct{ *bytes.Reader }

func (postBody) Close() error { return nil }

// writerOnly hides a writer's ReadFrom, so that io.Copy does not call back
// into it.
type writerOnly struct{ io.Writer }
