package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A ParamBinding is one tool parameter that a tool's inputSchema mirrors
// into an Mcp-Param-{Header} request header with "x-mcp-header".
type ParamBinding struct {
	Header string   // the {Name} of Mcp-Param-{Name}
	Path   []string // the chain of properties keys from the schema root
	Type   string   // "string", "integer" or "boolean"
}

// ToolBindings extracts the x-mcp-header bindings of one tool's inputSchema
// and checks them against the spec's constraints (server/tools
// §x-mcp-header). A non-nil error means the tool definition is invalid and,
// per streamable-http §Schema extension, a client "MUST exclude the invalid
// tool from the result of tools/list".
func ToolBindings(inputSchema []byte) ([]ParamBinding, error) {
	if len(bytes.TrimSpace(inputSchema)) == 0 || !bytes.Contains(inputSchema, []byte("x-mcp-header")) {
		return nil, nil // the common case: nothing to mirror
	}
	var root any
	if err := json.Unmarshal(inputSchema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %w", err)
	}
	var out []ParamBinding
	seen := map[string]bool{}
	var walk func(node any, path []string, reachable bool) error
	walk = func(node any, path []string, reachable bool) error {
		switch n := node.(type) {
		case []any:
			for _, e := range n {
				if err := walk(e, path, false); err != nil {
					return err
				}
			}
		case map[string]any:
			if h, ok := n["x-mcp-header"]; ok {
				if !reachable || len(path) == 0 {
					return fmt.Errorf("x-mcp-header at %q is not statically reachable through properties", strings.Join(path, "."))
				}
				b, err := binding(h, n, path)
				if err != nil {
					return err
				}
				if seen[strings.ToLower(b.Header)] {
					return fmt.Errorf("x-mcp-header %q is not unique", b.Header)
				}
				seen[strings.ToLower(b.Header)] = true
				out = append(out, b)
			}
			for k, v := range n {
				switch k {
				case "properties":
					props, ok := v.(map[string]any)
					if !ok {
						continue
					}
					for name, sub := range props {
						p := append(append([]string(nil), path...), name)
						if err := walk(sub, p, reachable); err != nil {
							return err
						}
					}
				case "x-mcp-header", "const", "default", "examples", "enum":
					// Values, not schemas: an "x-mcp-header" key inside them is data.
				default:
					if err := walk(v, path, false); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := walk(root, nil, true); err != nil {
		return nil, err
	}
	return out, nil
}

func binding(h any, schema map[string]any, path []string) (ParamBinding, error) {
	name, ok := h.(string)
	if !ok || name == "" {
		return ParamBinding{}, fmt.Errorf("x-mcp-header at %q must be a non-empty string", strings.Join(path, "."))
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			return ParamBinding{}, fmt.Errorf("x-mcp-header %q is not an HTTP token", name)
		}
	}
	typ := ""
	switch t := schema["type"].(type) {
	case string:
		typ = t
	case []any:
		for _, e := range t {
			if s, _ := e.(string); s != "null" {
				if typ != "" {
					return ParamBinding{}, fmt.Errorf("x-mcp-header %q on a property with several types", name)
				}
				typ = s
			}
		}
	}
	switch typ {
	case "string", "integer", "boolean":
	default:
		return ParamBinding{}, fmt.Errorf("x-mcp-header %q on a property of type %q (only string, integer, boolean)", name, typ)
	}
	return ParamBinding{Header: name, Path: path, Type: typ}, nil
}

// isTchar reports RFC 9110 §5.6.2 token characters.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ParamValues returns, for each binding, the header value its argument
// calls for (already converted per §Value encoding, but not yet
// Base64-encoded), or ok=false when the argument is absent or null and the
// header must be omitted.
func ParamValues(arguments []byte, bindings []ParamBinding) (vals []string, present []bool, err error) {
	vals = make([]string, len(bindings))
	present = make([]bool, len(bindings))
	if len(bindings) == 0 || len(bytes.TrimSpace(arguments)) == 0 {
		return vals, present, nil
	}
	dec := json.NewDecoder(bytes.NewReader(arguments))
	dec.UseNumber()
	var args any
	if err := dec.Decode(&args); err != nil {
		return nil, nil, err
	}
	for i, b := range bindings {
		v := args
		for _, k := range b.Path {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			// The map holds what every decoder agrees on (escapes decoded,
			// the last duplicate); a Go server would also take "Region" for
			// "region", so a header checked against one while the tool
			// reads the other must not pass.
			for other := range obj {
				if other != k && (sameKey(other, k) || strings.EqualFold(other, k)) {
					return nil, nil, fmt.Errorf("%w: argument %q also spelled %q", ErrAmbiguous, k, other)
				}
			}
			v = obj[k]
		}
		switch x := v.(type) {
		case nil:
		case string:
			vals[i], present[i] = x, true
		case bool:
			vals[i], present[i] = strconv.FormatBool(x), true
		case json.Number:
			vals[i], present[i] = x.String(), true
		default:
			// An object or array where a primitive was declared: mirror its
			// JSON so a server still sees a (mismatching) value.
			b, _ := json.Marshal(x)
			vals[i], present[i] = string(b), true
		}
	}
	return vals, present, nil
}

// SameParamValue compares a decoded header value with the body's value for
// a binding, numerically for integers ("servers SHOULD compare the header
// value and the body value numerically rather than as strings").
func SameParamValue(typ, header, body string) bool {
	if header == body {
		return true
	}
	if typ != "integer" {
		return false
	}
	h, err1 := strconv.ParseFloat(header, 64)
	b, err2 := strconv.ParseFloat(body, 64)
	return err1 == nil && err2 == nil && h == b && !math.IsNaN(h)
}
