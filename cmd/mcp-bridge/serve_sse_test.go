package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// --sse-path: the HTTP+SSE stream is at /sse by default, moves with the
// flag (its message path next to it), and "" turns it off.
func TestServeSSEPath(t *testing.T) {
	for _, tc := range []struct {
		flags        []string
		path, announ string // announ: the endpoint event's path; "": 404
	}{
		{nil, "/sse", "/message?sessionId="},
		{[]string{"--sse-path", "/x/sse"}, "/x/sse", "/x/message?sessionId="},
		{[]string{"--sse-path", ""}, "/sse", ""},
	} {
		addr := freePort(t)
		args := append(append([]string{"serve", "--listen", addr}, tc.flags...), "--", bin["memos"])
		startBridgeProc(t, args...)
		waitReady(t, addr)
		resp, err := http.Get("http://" + addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if tc.announ == "" {
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("%v: GET %s = %d, want 404", tc.flags, tc.path, resp.StatusCode)
			}
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		var data string
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = d
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(data, tc.announ) {
			t.Errorf("%v: GET %s = %d, endpoint %q; want 200 and %s…", tc.flags, tc.path, resp.StatusCode, data, tc.announ)
		}
	}
}
