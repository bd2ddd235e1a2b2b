package exec

import _ "embed"

// ToolsFileSchema is the JSON Schema of a tools file (docs/exec.md),
// printed by 'mcp-bridge exec --print-schema' for editors. It stays in
// the validator's own subset, so a test checks the recipes against it.
//
//go:embed tools.schema.json
var ToolsFileSchema []byte
