package serve

import (
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// writeError answers a request with a JSON-RPC error and an HTTP status.
// (The answers a child sends go through bridge/stream's Responder.)
func writeError(w http.ResponseWriter, status int, id []byte, code int, msg string, data []byte) {
	body := wire.ErrorResponse(id, code, msg, data)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
