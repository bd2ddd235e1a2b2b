package wire

import "testing"

// A batch's elements are found in place, and Rebatch writes the array
// again around them: replaced where asked, byte for byte elsewhere, the
// whitespace between them gone.
func TestBatchElementsRebatch(t *testing.T) {
	raw := []byte(" \r\n[ {\"id\":1} ,\n{\"id\":2},{\"id\":3} ]")
	if c := FirstByte(raw); c != '[' {
		t.Fatalf("FirstByte = %q", c)
	}
	elems, err := BatchElements(raw)
	if err != nil || len(elems) != 3 {
		t.Fatalf("BatchElements = %v, %v", elems, err)
	}
	if got := string(Rebatch(raw, elems, [][]byte{nil, []byte(`{"id":"two"}`), nil})); got != `[{"id":1},{"id":"two"},{"id":3}]` {
		t.Errorf("Rebatch = %s", got)
	}
	if got := string(Rebatch(raw, []Span{elems[0], elems[2]}, make([][]byte, 2))); got != `[{"id":1},{"id":3}]` {
		t.Errorf("Rebatch of two elements = %s", got)
	}
	for _, bad := range []string{"", "  ", "{}", "[", `[{"id":1}`} {
		if FirstByte([]byte(bad)) == '[' {
			if _, err := BatchElements([]byte(bad)); err == nil {
				t.Errorf("BatchElements(%q): no error", bad)
			}
		}
	}
}
