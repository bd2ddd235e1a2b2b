package translate

import "github.com/mcp-bridge/mcp-bridge/bridge/wire"

// Complete returns a legacy peer's response as a 2026-07-28 peer must see
// it: under id (when id is not nil) and completed with resultType, and
// with cache hints on the cacheable methods (wire.CompleteResultEdit), in
// one copy.
func Complete(fm *wire.Message, method string, id []byte) []byte {
	edits := make([]wire.Edit, 0, 2)
	if id != nil && fm.ID.Present() {
		edits = append(edits, wire.Edit{Span: fm.ID, Value: id})
	}
	if e, ok := wire.CompleteResultEdit(fm, method); ok {
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return fm.Raw
	}
	return wire.Splice(fm.Raw, edits...)
}
