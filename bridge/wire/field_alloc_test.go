package wire

import "testing"

// TestFieldDoesNotAllocate: Field and Field2 run on every traced request
// and on many message edits; one walk, no allocation.
func TestFieldDoesNotAllocate(t *testing.T) {
	raw := []byte(`{"traceparent":"x","tracestate":"y","io.modelcontextprotocol/clientInfo":{"name":"n"}}`)
	obj := Span{0, len(raw)}
	if n := testing.AllocsPerRun(100, func() { Field(raw, obj, "traceparent") }); n != 0 {
		t.Errorf("Field: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { Field2(raw, obj, "traceparent", "tracestate") }); n != 0 {
		t.Errorf("Field2: %v allocations", n)
	}
}
