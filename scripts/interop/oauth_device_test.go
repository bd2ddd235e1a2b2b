//go:build interop

package interop

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// devicePrompt is what connect printed for the person: where to go and
// the code to enter there.
type devicePrompt struct{ uri, code string }

// connectDevice starts `mcp-bridge connect --oauth-grant device_code`.
// Its stderr goes to the log file, and each verification URI and user
// code it prints arrive on the channel, as a person would read them.
func (h *oauthHome) connectDevice(t *testing.T, name, url string) (*stdioHost, <-chan devicePrompt) {
	t.Helper()
	log := filepath.Join(h.art, "connect-"+name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.bridge, "connect", "--log-level", "trace", "--oauth-grant", "device_code", "--oauth-timeout", "120s", url)
	cmd.Env = h.env()
	cmd.Stderr = pw
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	prompts := make(chan devicePrompt, 4)
	go func() { // ends at connect's exit (EOF on its stderr)
		defer close(prompts)
		defer f.Close()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		var uri string
		wantURI := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = f.WriteString(line + "\n")
			switch {
			case strings.Contains(line, "open this URL on any device"):
				wantURI = true
			case wantURI && strings.TrimSpace(line) != "":
				uri, wantURI = strings.TrimSpace(line), false
			case strings.HasPrefix(line, "and enter the code: "):
				select {
				case prompts <- devicePrompt{uri: uri, code: strings.TrimPrefix(line, "and enter the code: ")}:
				default:
				}
			}
		}
	}()
	s := bufio.NewScanner(out)
	s.Buffer(nil, 1<<20)
	host := &stdioHost{cmd: cmd, in: in, out: s, log: log}
	t.Cleanup(func() {
		if !host.waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return host, prompts
}

// nextPrompt waits for connect to print a code, or for first to end.
func nextPrompt(t *testing.T, prompts <-chan devicePrompt, first <-chan error) devicePrompt {
	t.Helper()
	select {
	case p, ok := <-prompts:
		if !ok || p.uri == "" || p.code == "" {
			t.Fatalf("no verification URI and user code on connect's stderr: %+v", p)
		}
		return p
	case err := <-first:
		t.Fatalf("the first request ended before a code was shown: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no user code on connect's stderr within 60 s")
	}
	return devicePrompt{}
}

// Issue 26 (3): the device authorization grant against node-oidc-provider
// 9.13.3 with its device flow enabled, as the authorization server of
// `serve --oauth-issuer` in front of examples/memos. connect prints the
// verification URI and user code on stderr; the test reads them there and
// approves the code through the provider's own pages (user code form,
// confirmation, sign-in, consent) with the scripted browser; the host's
// first request, which waited, then succeeds, and so do tool calls. No
// browser is started by connect.
func TestOAuthDeviceCode(t *testing.T) {
	as := startOIDCProvider(t, 300*time.Second, "DEVICE_FLOW=1")
	url := serveWithIssuer(t, as)
	h := newOAuthHome(t)
	c, prompts := h.connectDevice(t, "device", url)
	first := make(chan error, 1)
	go func() { first <- c.initialize() }()

	p := nextPrompt(t, prompts, first)
	t.Logf("connect printed verification URI %s and user code %s", p.uri, p.code)
	t0 := time.Now()
	approve := exec.Command(env.oidcBrowser, "--user-code", p.code, p.uri)
	// Not h.env(): its browser log counts the browsers connect starts.
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("approving the code: %v\n%s\nprovider log:\n%s", err, out, tail(as.p.log(), 40))
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("initialize after the approval: %v\nprovider log:\n%s", err, tail(as.p.log(), 40))
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("initialize did not return within 90 s of the approval\nlog:\n%s", c.tail())
	}
	t.Logf("approval to initialize result: %d ms (connect polls every 5 s)", time.Since(t0).Milliseconds())
	if err := c.listMemos(); err != nil {
		t.Fatal(err)
	}
	if r, err := c.call("tools/call", map[string]any{"name": "memo_list_memos", "arguments": map[string]any{"pageSize": 1}}); err != nil || strings.Contains(string(r), `"isError":true`) {
		t.Fatalf("tools/call: %s %v", r, err)
	}
	s := as.stats(t)
	t.Logf("provider: registrations %d, grants %v, registered scopes %q", s.Registrations, s.Grants, s.Scopes)
	if s.Registrations != 1 || s.Grants["urn:ietf:params:oauth:grant-type:device_code"] != 1 || s.Grants["authorization_code"] != 0 {
		t.Errorf("registrations %d, grants %v; want one registration and one device_code grant", s.Registrations, s.Grants)
	}
	if n := h.browserRuns(t); n != 0 {
		t.Errorf("browser runs %d, want 0", n)
	}
	if !h.storedRefresh(t) {
		t.Errorf("no refresh token stored")
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.log)
	_, tokens := h.storedTokens(t)
	for _, tok := range tokens {
		if strings.Contains(string(b), tok) {
			t.Errorf("BRIDGE BUG: a token value appears in connect's stderr")
		}
	}
	checkLogClean(t, "mcp-bridge connect", string(b))

	// The next connect uses the stored token: no code shown.
	c2, prompts2 := h.connectDevice(t, "device-again", url)
	if err := c2.initialize(); err != nil {
		t.Fatal(err)
	}
	if err := c2.listMemos(); err != nil {
		t.Fatal(err)
	}
	if err := c2.close(); err != nil {
		t.Fatal(err)
	}
	if p, ok := <-prompts2; ok {
		t.Errorf("the second connect showed a code: %+v", p)
	}
}

// Issue 26 (3): a device code nobody approves expires (the provider's
// codes live 6 s here); connect asks for one new code, and when that one
// expires too, the host's request fails with an error saying so — no
// third code.
func TestOAuthDeviceCodeExpired(t *testing.T) {
	as := startOIDCProvider(t, 300*time.Second, "DEVICE_FLOW=1", "DEVICE_CODE_TTL=6")
	url := serveWithIssuer(t, as)
	h := newOAuthHome(t)
	c, prompts := h.connectDevice(t, "device-expired", url)
	first := make(chan error, 1)
	go func() { first <- c.initialize() }()
	p1 := nextPrompt(t, prompts, first)
	p2 := nextPrompt(t, prompts, first)
	if p1.code == p2.code {
		t.Errorf("the same user code twice: %s", p1.code)
	}
	select {
	case err := <-first:
		if err == nil || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("initialize: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("initialize did not fail within 90 s")
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	select {
	case p, ok := <-prompts:
		if ok {
			t.Errorf("a third code: %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Error("connect's stderr still open 10 s after its exit")
	}
}
