package connect

import "github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"

// warnings are the log lines a remote can provoke once per message.
type warnings struct {
	badMessage ratelog.Limiter // not a JSON-RPC message (not JSON: bridge/remote's)
	refused    ratelog.Limiter // a server request answered on the host's behalf
	undeclared ratelog.Limiter // input asked for that the host did not declare
}
