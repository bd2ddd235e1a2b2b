package translate

import (
	"encoding/json"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// unknownServer stands in for a peer that sent no serverInfo, which both
// an InitializeResult and a DiscoverResult's _meta must carry.
var unknownServer = []byte(`{"name":"mcp-bridge remote","version":"unknown"}`)

// InitializeOf reads a 2025 initialize request: its protocolVersion, and
// its capabilities and clientInfo, raw and copied (nil unless objects).
func InitializeOf(init *wire.Message) (version string, caps, info []byte) {
	if init == nil || !init.Params.Present() {
		return "", nil, nil
	}
	version, _ = wire.StringField(init.Raw, init.Params, "protocolVersion")
	if sp, ok := wire.Field(init.Raw, init.Params, "capabilities"); ok && init.Raw[sp.Start] == '{' {
		caps = append([]byte(nil), init.Bytes(sp)...)
	}
	if sp, ok := wire.Field(init.Raw, init.Params, "clientInfo"); ok && init.Raw[sp.Start] == '{' {
		info = append([]byte(nil), init.Bytes(sp)...)
	}
	return version, caps, info
}

// DiscoverFromInitialize builds the server/discover result a 2026-07-28
// peer gets from a legacy peer's InitializeResult (the result object): "a
// DiscoverResult lists supportedVersions, capabilities, instructions, and
// serverInfo in _meta". It is a cacheable result, so it carries cache
// hints: ttlMs 0 (a legacy server says nothing about freshness) and
// "private" (a session's answer is the session's; server/utilities/caching).
// Task capabilities are withheld (tasks.go: a face that translates tasks
// adds them back with TasksToModern).
func DiscoverFromInitialize(init []byte) []byte {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions *string         `json:"instructions"`
	}
	json.Unmarshal(init, &r)
	b := wire.AppendString([]byte(`{"resultType":"complete","supportedVersions":[`), Modern)
	b = append(append(b, `],"capabilities":`...), withoutTaskCaps(object(r.Capabilities))...)
	if r.Instructions != nil {
		b = wire.AppendString(append(b, `,"instructions":`...), *r.Instructions)
	}
	b = append(b, `,"ttlMs":0,"cacheScope":"private","_meta":{"`+wire.MetaServerInfo+`":`...)
	return append(append(b, objectOr(r.ServerInfo, unknownServer)...), "}}"...)
}

// InitializeFromDiscover builds the InitializeResult a legacy peer gets
// from a modern peer's DiscoverResult (the result object), at version.
// Task capabilities are withheld, as in DiscoverFromInitialize
// (TasksToLegacy).
func InitializeFromDiscover(discover []byte, version string) []byte {
	var r struct {
		Capabilities json.RawMessage            `json:"capabilities"`
		Instructions *string                    `json:"instructions"`
		Meta         map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(discover, &r)
	b := wire.AppendString([]byte(`{"protocolVersion":`), version)
	b = append(append(b, `,"capabilities":`...), withoutTaskCaps(object(r.Capabilities))...)
	b = append(append(b, `,"serverInfo":`...), objectOr(r.Meta[wire.MetaServerInfo], unknownServer)...)
	if r.Instructions != nil {
		b = wire.AppendString(append(b, `,"instructions":`...), *r.Instructions)
	}
	return append(b, '}')
}

// object returns b if it is a JSON object, else {}.
func object(b json.RawMessage) []byte { return objectOr(b, []byte("{}")) }

func objectOr(b json.RawMessage, or []byte) []byte {
	if len(b) == 0 || b[0] != '{' {
		return or
	}
	return b
}
