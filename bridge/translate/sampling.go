package translate

import (
	"encoding/json"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Sampling with tools (SEP-1577) and the elicitation modes are gated by
// sub-capabilities, which a bridge must check before it carries a server's
// request across eras: the bytes of the request and of its answer travel
// unchanged (tools, toolChoice, tool_use and tool_result content), but
// whether the peer may be asked at all depends on what it declared.

// Covers reports whether a client that declared caps may be sent the
// server-to-client request method with params — directly (2025) or in an
// input round (2026-07-28, where the server "MUST NOT" ask for what the
// clientCapabilities did not declare):
//
//   - sampling/createMessage with tools or toolChoice needs sampling.tools:
//     "Servers MUST NOT send tool-enabled sampling requests to Clients that
//     have not declared support for tool use via the sampling.tools
//     capability" (client/sampling §Tools in Sampling);
//   - elicitation/create in mode "url" needs elicitation.url, and a form
//     elicitation needs elicitation.form or an empty elicitation object
//     ("form mode only (implicit)", schema ClientCapabilities).
func Covers(caps wire.Capabilities, method string, params []byte) bool {
	if !caps.Allows(method) {
		return false
	}
	switch method {
	case "sampling/createMessage":
		var p struct {
			Tools      json.RawMessage `json:"tools"`
			ToolChoice json.RawMessage `json:"toolChoice"`
		}
		json.Unmarshal(params, &p)
		if (p.Tools == nil || string(p.Tools) == "null") && (p.ToolChoice == nil || string(p.ToolChoice) == "null") {
			return true
		}
		return hasMember(caps.Sampling, "tools")
	case "elicitation/create":
		var p struct {
			Mode string `json:"mode"`
		}
		json.Unmarshal(params, &p)
		var modes map[string]json.RawMessage
		json.Unmarshal(caps.Elicitation, &modes)
		if p.Mode == "url" {
			return modes["url"] != nil
		}
		return len(modes) == 0 || modes["form"] != nil
	}
	return true
}

// hasMember reports whether the JSON object obj has the member key.
func hasMember(obj json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	json.Unmarshal(obj, &m)
	_, ok := m[key]
	return ok
}
