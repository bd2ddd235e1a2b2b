package exec

import (
	"strings"
	"testing"
)

func TestSchemaSubset(t *testing.T) {
	s, err := compileSchema([]byte(`{"type": "object", "properties": {
	  "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 2},
	  "n": {"type": ["integer", "null"], "enum": [1, 2.0, null]},
	  "opt": {"type": "object", "properties": {"x": {"type": "boolean"}}, "additionalProperties": {"type": "string"}}},
	  "title": "t", "description": "d", "x-mcp-header": "X"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want string // "" = valid
	}{
		{`{"tags": ["a"], "n": 2}`, ""},
		{`{"n": 1.0}`, ""},
		{`{"n": null}`, ""},
		{`{"n": 3}`, "arguments.n: not one of the allowed values"},
		{`{"tags": []}`, "fewer than 1 items"},
		{`{"tags": ["a", "b", "c"]}`, "more than 2 items"},
		{`{"tags": [""]}`, "arguments.tags[0]: shorter than 1"},
		{`{"tags": [1]}`, "arguments.tags[0]: want string, got integer"},
		{`{"opt": {"x": true, "y": "s"}}`, ""},
		{`{"opt": {"y": 1}}`, "arguments.opt.y: want string"},
		{`{"n": 9007199254740993}`, "want integer or null"},
		{`{"tags": ["日本"]}`, ""},
	} {
		var v any
		if err := decodeStrict([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		err := s.validate(v, "arguments")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	deep := strings.Repeat(`{"items":`, maxSchemaDepth+2) + `{}` + strings.Repeat(`}`, maxSchemaDepth+2)
	if _, err := compileSchema([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("a schema nested %d deep: %v", maxSchemaDepth+2, err)
	}
}
