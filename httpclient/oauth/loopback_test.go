package oauth

import (
	"context"
	"net/http"
	"testing"
)

// A callback without the login's state is refused (400) and the login
// keeps waiting; the one with it completes the wait; a replay gets 409.
func TestLoopbackState(t *testing.T) {
	l, err := listenLoopback(0, "good-state")
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	get := func(q string) int {
		resp, err := hc.Get(l.redirectURI() + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("code=evil&state=forged"); c != http.StatusBadRequest {
		t.Errorf("forged state: %d", c)
	}
	if c := get("code=good&state=good-state"); c != http.StatusOK {
		t.Errorf("good state: %d", c)
	}
	q, err := l.wait(context.Background())
	if err != nil || q.Get("code") != "good" {
		t.Fatalf("wait: %v %v", q, err)
	}
	if c := get("code=again&state=good-state"); c != http.StatusConflict {
		t.Errorf("replay: %d", c)
	}
}
