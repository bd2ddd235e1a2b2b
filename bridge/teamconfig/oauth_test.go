package teamconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Issue 26: OAuth settings per remote entry, under the entry or under
// mcpBridge.servers.<name>, the secret from the environment.
func TestParseOAuthConfig(t *testing.T) {
	const file = `{"mcpServers": {
	  "a": {"url": "https://a.example/mcp", "oauth": {"clientId": "${CID}", "clientSecret": "${CSECRET}", "scopes": ["read", "write"], "callbackPort": 8765, "timeout": "2m"}},
	  "b": {"url": "https://b.example/mcp"},
	  "c": {"url": "https://c.example/mcp", "oauth": {}},
	  "plain": {"url": "https://p.example/mcp"}
	},
	"mcpBridge": {"servers": {"b": {"oauth": {"grant": "device_code"}, "tools": {"deny": ["x"]}}}}}`
	cfg, err := Parse([]byte(file), env("CID", "client-1", "CSECRET", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	want := &OAuth{ClientID: "client-1", ClientSecret: "s3cret", Scopes: []string{"read", "write"}, Grant: GrantAuthorizationCode, CallbackPort: 8765, Timeout: OAuthTimeout(2 * time.Minute)}
	if got := cfg.Servers["a"].OAuth; !reflect.DeepEqual(got, want) {
		t.Errorf("a.OAuth = %+v, want %+v", got, want)
	}
	if got := cfg.Servers["b"].OAuth; got == nil || got.Grant != GrantDeviceCode || cfg.Servers["b"].Options.Tools == nil {
		t.Errorf("b.OAuth = %+v, options %+v", got, cfg.Servers["b"].Options)
	}
	if got := cfg.Servers["c"].OAuth; got == nil || got.Grant != GrantAuthorizationCode {
		t.Errorf("c.OAuth = %+v: {} turns OAuth on with the defaults", got)
	}
	if got := cfg.Servers["plain"].OAuth; got != nil {
		t.Errorf("plain.OAuth = %+v: no oauth, no OAuth", got)
	}
}

// Every refusal names the entry (and the field) it is about.
func TestParseOAuthConfigErrors(t *testing.T) {
	remote := func(name, oauth string) string {
		return `{"mcpServers": {"ok": {"url": "https://ok.example/mcp"}, "` + name + `": {"url": "https://x.example/mcp", "oauth": ` + oauth + `}}}`
	}
	for _, c := range []struct{ file, want string }{
		{remote("ent1", `{"grant": "implicit"}`), `mcpServers.ent1.oauth.grant "implicit"`},
		{remote("ent2", `{"clientSecret": "x"}`), "mcpServers.ent2.oauth: clientSecret needs clientId"},
		{remote("ent3", `{"clientID": "x"}`), `mcpServers.ent3.oauth: unknown field "clientID"`},
		{remote("ent4", `{"callbackPort": 70000}`), "mcpServers.ent4.oauth.callbackPort 70000"},
		{remote("ent5", `{"resource": "https://r/", "noResource": true}`), "mcpServers.ent5.oauth: resource and noResource contradict"},
		{remote("ent6", `{"grant": "client_credentials", "clientId": "c"}`), "mcpServers.ent6.oauth: grant client_credentials needs clientId and clientSecret"},
		{remote("ent7", `{"clientId": "c", "clientSecret": "${NOPE}"}`), "mcpServers.ent7.oauth.clientSecret: environment variable NOPE is not set"},
		{remote("ent8", `{"timeout": "forever"}`), `oauth.timeout "forever"`},
		{remote("ent9", `{"scopes": ["a b"]}`), `mcpServers.ent9.oauth.scopes: "a b" is not one scope`},
		{remote("ent10", `"yes"`), "mcpServers.ent10.oauth must be a JSON object"},
		{`{"mcpServers": {"loc": {"command": "x", "oauth": {}}}}`, `mcpServers.loc.oauth: OAuth is for a "url" entry`},
		{`{"mcpServers": {"hdr": {"url": "https://h/mcp", "headers": {"authorization": "Bearer t"}, "oauth": {}}}}`, "mcpServers.hdr.oauth: the entry's headers carry a static Authorization"},
		{`{"mcpServers": {"two": {"url": "https://t/mcp", "oauth": {}}}, "mcpBridge": {"servers": {"two": {"oauth": {}}}}}`, "mcpBridge.servers.two.oauth: mcpServers.two has its own"},
		{`{"mcpServers": {"sec": {"url": "https://t/mcp"}}, "mcpBridge": {"servers": {"sec": {"oauth": {"grant": "x"}}}}}`, `mcpBridge.servers.sec.oauth.grant "x"`},
	} {
		_, err := Parse([]byte(c.file), env())
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n  error %v\n  want one containing %q", c.file, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

// A disabled entry's oauth is kept unexpanded, its variables unchecked.
func TestParseOAuthConfigDisabled(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"off": {"url": "https://o/mcp", "disabled": true, "oauth": {"clientId": "c", "clientSecret": "${UNSET}"}}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Servers["off"].OAuth; o == nil || o.ClientSecret != "${UNSET}" {
		t.Errorf("off.OAuth = %+v", o)
	}
}
