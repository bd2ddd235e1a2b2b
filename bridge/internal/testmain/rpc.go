package testmain

import (
	"io"
	"net/http"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Answer writes a JSON response, result, to the request whose body is
// body: what a hand-rolled remote in a test answers.
func Answer(w http.ResponseWriter, _ *http.Request, body []byte, result string) {
	var m wire.Message
	wire.Parse(body, &m)
	w.Header().Set("Content-Type", "application/json")
	w.Write(wire.ResultResponse(m.IDBytes(), []byte(result)))
}

// ReadBody returns r's body (a test's request, read whole).
func ReadBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// JSONErr writes a JSON-RPC error body with an HTTP status.
func JSONErr(w http.ResponseWriter, status int, id []byte, code int, msg, data string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var d []byte
	if data != "" {
		d = []byte(data)
	}
	w.Write(wire.ErrorResponse(id, code, msg, d))
}
