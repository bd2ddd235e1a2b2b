package serve

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// holdStream opens a held progress call from a raw TCP client (the child
// answers it on "release") and waits until it has left net/http.
func holdStream(t *testing.T, b *testBridge) net.Conn {
	t.Helper()
	u, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hold","arguments":{},` +
		strings.Replace(modernMeta, `"io.modelcontextprotocol/clientInfo"`, `"progressToken":"p","io.modelcontextprotocol/clientInfo"`, 1) + `}}`
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: hold\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, len(call), call)
	waitFor(t, "the held call to leave net/http", func() bool { return b.streams.Detached() == 1 })
	return c
}

// readUntil reads c until what it read contains want n times, or fails.
func readUntil(t *testing.T, c net.Conn, got []byte, want string, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 4096)
	for bytes.Count(got, []byte(want)) < n {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q: %v after %.500q", want, err, got)
		}
		got = append(got, buf[:n]...)
	}
	return got
}

// A stream served by events, with no goroutine of its own, still gets the
// shared clock's keepalives (turning an undecided response into SSE), then
// its result and the end of its chunked body.
func TestEventStreamKeepalive(t *testing.T) {
	b := startBridge(t, Config{Command: testChild(), Keepalive: 20 * time.Millisecond})
	c := holdStream(t, b)
	got := readUntil(t, c, nil, ": keepalive\n\n", 2)
	if !bytes.Contains(got, []byte("text/event-stream")) || !bytes.Contains(got, []byte("Connection: close")) {
		t.Fatalf("head %q", got)
	}
	if resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"release","arguments":{},`+modernMeta+`}}`,
		modernHeaders("tools/call", "release")); resp.StatusCode != 200 {
		t.Fatalf("release: %d %s", resp.StatusCode, body)
	}
	got = readUntil(t, c, got, "released", 1)
	readUntil(t, c, got, "\r\n0\r\n\r\n", 1)
	c.Close()
	waitFor(t, "the stream to end", func() bool { return b.streams.Detached() == 0 })
}

// A client that goes away from a waiting stream served by events ends it:
// the call is cancelled at the child (no longer in flight) and the stream
// is released.
func TestEventStreamClientGone(t *testing.T) {
	b := startBridge(t, Config{Command: testChild()})
	c := holdStream(t, b)
	if n := b.lim.Inflight(); n != 1 {
		t.Fatalf("%d calls in flight, want the held one", n)
	}
	c.Close()
	waitFor(t, "the stream to end", func() bool { return b.streams.Detached() == 0 })
	waitFor(t, "the call to be abandoned", func() bool { return b.lim.Inflight() == 0 })
}
