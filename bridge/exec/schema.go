package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The inputSchema validator implements a small subset of JSON Schema
// (draft 2020-12 meaning), enough to describe command-line arguments:
//
//	type                  "string" "integer" "number" "boolean" "array" "object" "null", or a list of them
//	properties, required  on objects
//	additionalProperties  false, true or a schema
//	items                 one schema for every element
//	minItems, maxItems    on arrays
//	enum                  a list of allowed values
//	minimum, maximum      inclusive bounds on numbers
//	minLength, maxLength  in Unicode code points
//	pattern               an RE2 regular expression (Go regexp), unanchored as in JSON Schema
//
// and the annotations title, description, default, examples, $schema and
// x-mcp-header, which do not constrain. A schema using any other keyword
// is refused when the tools file loads: a keyword the validator skipped
// would be a check the file's author believes in and nothing enforces.
// Nesting is limited to maxSchemaDepth, so validation is bounded by the
// schema, not by the input.

const (
	maxSchemaDepth = 16
	maxPatternLen  = 1024
)

var annotationKeywords = []string{"title", "description", "default", "examples", "$schema", "x-mcp-header"}

type schema struct {
	types      []string // nil: any type
	properties map[string]*schema
	required   []string
	addlFalse  bool
	addl       *schema
	items      *schema
	minItems   *int
	maxItems   *int
	enum       []any
	minimum    *float64
	maximum    *float64
	minLength  *int
	maxLength  *int
	pattern    *regexp.Regexp
}

// compileSchema reads a schema object; raw must be a JSON object.
func compileSchema(raw json.RawMessage) (*schema, error) {
	return compileAt(raw, "inputSchema", 0)
}

func compileAt(raw json.RawMessage, path string, depth int) (*schema, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d", path, maxSchemaDepth)
	}
	var kw map[string]json.RawMessage
	if err := decodeStrict(raw, &kw); err != nil || kw == nil {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	s := &schema{}
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kw[k]
		p := path + "." + k
		var err error
		switch k {
		case "type":
			err = s.readTypes(v)
		case "properties":
			var props map[string]json.RawMessage
			if err = decodeStrict(v, &props); err != nil || props == nil {
				return nil, fmt.Errorf("%s: want an object of schemas", p)
			}
			s.properties = make(map[string]*schema, len(props))
			for name, ps := range props {
				if s.properties[name], err = compileAt(ps, p+"."+name, depth+1); err != nil {
					return nil, err
				}
			}
		case "required":
			if err = decodeStrict(v, &s.required); err != nil {
				return nil, fmt.Errorf("%s: want a list of names", p)
			}
		case "additionalProperties":
			switch string(bytes.TrimSpace(v)) {
			case "false":
				s.addlFalse = true
			case "true":
			default:
				if s.addl, err = compileAt(v, p, depth+1); err != nil {
					return nil, err
				}
			}
		case "items":
			if s.items, err = compileAt(v, p, depth+1); err != nil {
				return nil, err
			}
		case "minItems":
			s.minItems, err = readCount(v)
		case "maxItems":
			s.maxItems, err = readCount(v)
		case "minLength":
			s.minLength, err = readCount(v)
		case "maxLength":
			s.maxLength, err = readCount(v)
		case "minimum":
			s.minimum, err = readFloat(v)
		case "maximum":
			s.maximum, err = readFloat(v)
		case "enum":
			if err = decodeStrict(v, &s.enum); err != nil || len(s.enum) == 0 {
				return nil, fmt.Errorf("%s: want a non-empty list", p)
			}
		case "pattern":
			var re string
			if err = decodeStrict(v, &re); err != nil {
				break
			}
			if len(re) > maxPatternLen {
				return nil, fmt.Errorf("%s: longer than %d bytes", p, maxPatternLen)
			}
			if s.pattern, err = regexp.Compile(re); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		default:
			if !slices.Contains(annotationKeywords, k) {
				return nil, fmt.Errorf("%s: keyword not supported by exec's validator (see docs/exec.md for the subset)", p)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return s, nil
}

var schemaTypes = []string{"string", "integer", "number", "boolean", "array", "object", "null"}

func (s *schema) readTypes(v json.RawMessage) error {
	var one string
	if decodeStrict(v, &one) == nil {
		s.types = []string{one}
	} else if err := decodeStrict(v, &s.types); err != nil || len(s.types) == 0 {
		return fmt.Errorf("want a type name or a list of them")
	}
	for _, t := range s.types {
		if !slices.Contains(schemaTypes, t) {
			return fmt.Errorf("unknown type %q", t)
		}
	}
	return nil
}

func readCount(v json.RawMessage) (*int, error) {
	var n int
	if err := decodeStrict(v, &n); err != nil || n < 0 {
		return nil, fmt.Errorf("want a non-negative integer")
	}
	return &n, nil
}

func readFloat(v json.RawMessage) (*float64, error) {
	var f float64
	if err := decodeStrict(v, &f); err != nil {
		return nil, fmt.Errorf("want a number")
	}
	return &f, nil
}

// decodeStrict decodes one JSON value with numbers kept as json.Number.
func decodeStrict(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

// A validationError is the reason arguments were refused; it goes back to
// the client as the message of a -32602 error.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

func invalid(path, format string, args ...any) error {
	return &validationError{path + ": " + fmt.Sprintf(format, args...)}
}

// validate checks v (decoded with json.Number) against s.
func (s *schema) validate(v any, path string) error {
	if s.types != nil && !slices.ContainsFunc(s.types, func(t string) bool { return hasType(v, t) }) {
		return invalid(path, "want %s, got %s", strings.Join(s.types, " or "), typeName(v))
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return equalJSON(e, v) }) {
		return invalid(path, "not one of the allowed values")
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.minLength != nil && n < *s.minLength {
			return invalid(path, "shorter than %d characters", *s.minLength)
		}
		if s.maxLength != nil && n > *s.maxLength {
			return invalid(path, "longer than %d characters", *s.maxLength)
		}
		if s.pattern != nil && !s.pattern.MatchString(x) {
			return invalid(path, "does not match the pattern %q", s.pattern.String())
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return invalid(path, "not a representable number")
		}
		if s.minimum != nil && f < *s.minimum {
			return invalid(path, "%s is less than the minimum %v", x, *s.minimum)
		}
		if s.maximum != nil && f > *s.maximum {
			return invalid(path, "%s is greater than the maximum %v", x, *s.maximum)
		}
	case []any:
		if s.minItems != nil && len(x) < *s.minItems {
			return invalid(path, "fewer than %d items", *s.minItems)
		}
		if s.maxItems != nil && len(x) > *s.maxItems {
			return invalid(path, "more than %d items", *s.maxItems)
		}
		if s.items != nil {
			for i, e := range x {
				if err := s.items.validate(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				return invalid(path, "missing required property %q", r)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := s.properties[k]; ok {
				if err := ps.validate(x[k], path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch {
			case s.addlFalse:
				return invalid(path, "unknown property %q", k)
			case s.addl != nil:
				if err := s.addl.validate(x[k], path+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		return t == "number" || t == "integer" && isInteger(x)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if isInteger(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// isInteger: JSON Schema counts 1.0 as an integer. Integers beyond ±2^53
// are refused, as they would not survive a client's float64.
func isInteger(n json.Number) bool {
	const maxSafe = 1<<53 - 1
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return -maxSafe <= i && i <= maxSafe
	}
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafe
}

// equalJSON compares two decoded JSON values; numbers by value.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, e1 := x.Float64()
		fy, e2 := y.Float64()
		return e1 == nil && e2 == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
