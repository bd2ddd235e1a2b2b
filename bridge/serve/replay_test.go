package serve

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one event of a raw SSE body.
type sseEvent struct{ id, data string }

// readSSE sends the events of body to ch (priming events included) until
// it ends.
func readSSE(body interface{ Read([]byte) (int, error) }, ch chan<- sseEvent) {
	defer close(ch)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	var any bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if any {
				ch <- ev
			}
			ev, any = sseEvent{}, false
		case strings.HasPrefix(line, "id: "):
			ev.id, any = line[4:], true
		case strings.HasPrefix(line, "data: "):
			ev.data, any = line[6:], true
		case strings.HasPrefix(line, "data:"):
			any = true
		}
	}
}

func openSSE(t *testing.T, ctx context.Context, method, url, body string, hdr map[string]string) (*http.Response, chan sseEvent) {
	t.Helper()
	req := mcpRequest(ctx, method, url, body, hdr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan sseEvent, 64)
	go readSSE(resp.Body, ch)
	t.Cleanup(func() { resp.Body.Close() })
	return resp, ch
}

// A 2025 client whose POST stream breaks after the first progress event
// resumes with GET + Last-Event-ID and receives every remaining progress
// event and the result, each once, with ids that name the stream.
func TestResumeBrokenPostStream(t *testing.T) {
	for _, mode := range []SessionMode{SessionPerSession, SessionShared} {
		t.Run(string(mode), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := startBridge(t, Config{SessionMode: mode}, bins["memos"], "-modern=false", "-step-delay", "50ms")
			sid := legacyInit(t, b.URL, "", "2025-11-25")
			hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
			pctx, pcancel := context.WithCancel(ctx)
			resp, ch := openSSE(t, pctx, http.MethodPost, b.URL,
				`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":6},"_meta":{"progressToken":"p"}}}`, hdr)
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q", ct)
			}
			prime := <-ch
			if prime.data != "" || !strings.HasSuffix(prime.id, "_0") {
				t.Fatalf("first event %+v, want a priming event (id, empty data)", prime)
			}
			var first sseEvent
			for first = range ch {
				if strings.Contains(first.data, "notifications/progress") {
					break
				}
			}
			if first.id == "" || !strings.HasPrefix(first.id, strings.TrimSuffix(prime.id, "0")) {
				t.Fatalf("progress event %+v has no id of the stream %s", first, prime.id)
			}
			pcancel() // the POST stream breaks

			resumed := time.Now()
			_, rch := openSSE(t, ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": sid, "Last-Event-ID": first.id})
			progress := map[string]bool{}
			var result string
			for ev := range rch {
				if !strings.HasPrefix(ev.id, strings.TrimSuffix(prime.id, "0")) {
					t.Errorf("resumed event %+v does not name the stream", ev)
				}
				switch {
				case strings.Contains(ev.data, "notifications/progress"):
					if progress[ev.data] || ev.data == first.data {
						t.Errorf("progress delivered twice: %s", ev.data)
					}
					progress[ev.data] = true
				case strings.Contains(ev.data, `"id":5`):
					result = ev.data
				}
			}
			if len(progress) != 5 || !strings.Contains(result, `"result"`) {
				t.Fatalf("after resuming: %d progress events (want the 5 remaining), result %q", len(progress), result)
			}
			t.Logf("resumed after %s: %d progress events and the result in %s", first.id, len(progress), time.Since(resumed).Round(time.Millisecond))
		})
	}
}

// A GET stream whose client lost events is resumed with Last-Event-ID:
// the connection the bridge still holds is taken over, what was written to
// it after that id is replayed, and the stream goes on under its own
// number. (The old connection stays open on purpose, as a half-open one
// would: the bridge cannot know it is dead, and the notifications have no
// other stream to go to.)
func TestResumeBrokenGetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := startBridge(t, Config{}, bins["memos"], "-modern=false", "-dynamic-tools")
	sid := legacyInit(t, b.URL, "", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	toggle := func() {
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memo_toggle_beta","arguments":{}}}`, hdr)
		if resp.StatusCode != 200 {
			t.Fatalf("toggle: %d %s", resp.StatusCode, body)
		}
	}
	_, ch := openSSE(t, ctx, http.MethodGet, b.URL, "", hdr)
	prime := <-ch
	stream := strings.TrimSuffix(prime.id, "0")
	if prime.data != "" || !strings.HasSuffix(prime.id, "_0") {
		t.Fatalf("first GET event %+v, want a priming event", prime)
	}
	toggle()
	first := <-ch
	if !strings.Contains(first.data, "notifications/tools/list_changed") || first.id != stream+"1" {
		t.Fatalf("GET event %+v, want list_changed as %s1", first, stream)
	}
	toggle() // its list_changed is "lost": the client resumes after first
	_, rch := openSSE(t, ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": sid, "Last-Event-ID": first.id})
	ev := <-rch
	if !strings.Contains(ev.data, "notifications/tools/list_changed") || ev.id != stream+"2" {
		t.Fatalf("resumed GET event %+v, want the missed list_changed as %s2", ev, stream)
	}
	for range ch { // the old connection was ended by the takeover
	}
	toggle() // and the stream goes on
	if ev := <-rch; !strings.Contains(ev.data, "notifications/tools/list_changed") || ev.id != stream+"3" {
		t.Fatalf("next event %+v, want %s3", ev, stream)
	}

	// A plain GET replaces the stream; resuming the replaced one later
	// yields what it missed (nothing here) and a live standalone stream
	// under a new number, not a stream that ends at once.
	_, nch := openSSE(t, ctx, http.MethodGet, b.URL, "", hdr)
	if p := <-nch; p.data != "" || strings.HasPrefix(p.id, stream) {
		t.Fatalf("plain GET: first event %+v", p)
	}
	for range rch {
	}
	_, och := openSSE(t, ctx, http.MethodGet, b.URL, "", map[string]string{"Mcp-Session-Id": sid, "Last-Event-ID": stream + "3"})
	for range nch { // replaced in turn
	}
	toggle()
	if ev := <-och; !strings.Contains(ev.data, "notifications/tools/list_changed") || strings.HasPrefix(ev.id, stream) || !strings.HasSuffix(ev.id, "_1") {
		t.Fatalf("resumed replaced stream: %+v, want list_changed on a fresh stream", ev)
	}
}

// Through the Handler: 2025 sessions' progress streams together keep at
// most --max-buffered in their replay logs (each log alone would keep up
// to --replay-buffer), and an ended session's log is released.
func TestReplayLogsShareMaxBuffered(t *testing.T) {
	const budget = 8 << 10
	b := startBridge(t, Config{MaxBuffered: budget, ReplayBuffer: 1 << 20}, bins["memos"], "-modern=false", "-step-delay", "1ms")
	var sids []string
	logged := 0
	for i := 0; i < 4; i++ {
		sid := legacyInit(t, b.URL, "", "2025-11-25")
		sids = append(sids, sid)
		hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
		resp, body := rawPost(t, b.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memo_export_memos","arguments":{"steps":40},"_meta":{"progressToken":"p"}}}`, hdr)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
		}
		logged += len(body)
	}
	total := b.replays.Total()
	if total > budget || total == 0 {
		t.Fatalf("the replay logs keep %d bytes together after %d bytes of streams; want (0, %d]", total, logged, budget)
	}
	t.Logf("%d bytes of SSE streams in 4 sessions; their replay logs keep %d (budget %d)", logged, total, budget)
	req := mcpRequest(context.Background(), http.MethodDelete, b.URL, "", map[string]string{"Mcp-Session-Id": sids[3], "MCP-Protocol-Version": "2025-11-25"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if after := b.replays.Total(); after >= total {
		t.Errorf("after a session ended the logs keep %d bytes, before %d", after, total)
	}
}
