package child

import (
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Each tools/list page is filtered on its own; only its tools array
// changes (nextCursor and every other byte stay), and a page that hides
// nothing passes as the child wrote it.
func TestFilterToolsPage(t *testing.T) {
	c := &Conn{filter: func(name string) bool { return !strings.HasPrefix(name, "secret_") }}
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"secret_x","d":1},{"name":"b"}],"nextCursor":"p2"}}`: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"p2"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"secret_only"}],"nextCursor":"p3"}}`:                              `{"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"p3"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"tools":[ {"name":"a"} ]}}`:                                                        `{"jsonrpc":"2.0","id":3,"result":{"tools":[ {"name":"a"} ]}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}`:                                                          `{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}`,
	} {
		var m wire.Message
		if err := wire.Parse([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		if got := string(c.filterTools(&m).Raw); got != want {
			t.Errorf("filterTools(%s)\n= %s\nwant %s", in, got, want)
		}
	}
}
