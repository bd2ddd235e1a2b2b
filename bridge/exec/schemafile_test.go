package exec

import (
	"os"
	"testing"
)

// The published schema of the tools file is in the validator's subset,
// and the documented recipes (docs/exec.md, testdata/recipes.json) both
// satisfy it and load.
func TestToolsFileSchemaAndRecipes(t *testing.T) {
	s, err := compileAt(ToolsFileSchema, "tools.schema.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/recipes.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := decodeStrict(data, &v); err != nil {
		t.Fatal(err)
	}
	if err := s.validate(v, "file"); err != nil {
		t.Errorf("recipes against the schema: %v", err)
	}
	ts, err := fakeLoader().parse(data)
	if err != nil {
		t.Fatalf("recipes: %v", err)
	}
	if len(ts.List) != 4 {
		t.Errorf("%d recipes loaded", len(ts.List))
	}
	for _, bad := range []string{`{"tools": {"t": {}}}`, `{"tools": {"t": {"command": "x", "shell": true}}}`, `{"tools": {"t": {"command": "x", "concurrency": 0}}}`} {
		var v any
		decodeStrict([]byte(bad), &v)
		if s.validate(v, "file") == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
