package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// An argTemplate is one element of a tool's "args": literal text and
// {param} references. "{{" and "}}" stand for literal braces.
//
// An element that is exactly "{param}" is a slot: it becomes one argv
// element per value (an array parameter gives one per item, an absent
// optional parameter none). Any other element becomes exactly one argv
// element, or none when a parameter it names is absent. A value never
// passes through a shell or a splitter, so "; rm -rf /" or "$(id)" reach
// the program as the literal text they are.
type argTemplate struct {
	parts []argPart
	slot  bool // exactly one {param} and nothing else
}

type argPart struct {
	lit   string
	param string // "" for a literal part
}

// parseArgTemplate reads one element of "args".
func parseArgTemplate(s string) (argTemplate, error) {
	var t argTemplate
	// No operating system passes a NUL inside an argument (exec would
	// fail at every call): the file is refused at load instead.
	if strings.IndexByte(s, 0) >= 0 {
		return t, errors.New("contains a NUL character")
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, argPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return t, fmt.Errorf("%q: unclosed '{' (write {{ for a literal brace)", s)
			}
			name := s[i+1 : i+end]
			if !validParamName(name) {
				return t, fmt.Errorf("%q: {%s} is not a parameter reference (letters, digits, '_' and '-'; {{ for a literal brace)", s, name)
			}
			flush()
			t.parts = append(t.parts, argPart{param: name})
			i += end
		case c == '}':
			return t, fmt.Errorf("%q: stray '}' (write }} for a literal brace)", s)
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	t.slot = len(t.parts) == 1 && t.parts[0].param != ""
	return t, nil
}

func validParamName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// params lists the parameters the template names.
func (t argTemplate) params() []string {
	var ps []string
	for _, p := range t.parts {
		if p.param != "" {
			ps = append(ps, p.param)
		}
	}
	return ps
}

// argValue is a validated argument rendered for argv.
type argValue struct {
	items []string // one per argv element (an array has several)
	array bool
}

// renderValue turns a validated JSON value into argv text: strings as
// they are, numbers as written, booleans as true/false, arrays item by
// item. Objects and null have no command-line form.
func renderValue(v any, path string) (argValue, error) {
	switch x := v.(type) {
	case []any:
		out := argValue{array: true}
		for i, e := range x {
			s, err := renderScalar(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return argValue{}, err
			}
			out.items = append(out.items, s)
		}
		return out, nil
	default:
		s, err := renderScalar(v, path)
		return argValue{items: []string{s}}, err
	}
}

func renderScalar(v any, path string) (string, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	case bool:
		s = fmt.Sprint(x)
	default:
		return "", invalid(path, "a %s cannot be a command-line argument", typeName(v))
	}
	// No operating system passes a NUL inside an argument: the program
	// would see a different (shorter) value than the one validated.
	if strings.IndexByte(s, 0) >= 0 {
		return "", invalid(path, "contains a NUL character")
	}
	return s, nil
}

// buildArgv renders the tool's argument templates with the validated
// arguments. A value that starts with '-' where it would begin an argv
// element is refused unless the parameter is in allowDashes: the program
// would read it as an option (--output=/etc/passwd, -exec) instead of the
// operand the schema describes.
func buildArgv(templates []argTemplate, args map[string]any, allowDashes []string) ([]string, error) {
	var argv []string
	for _, t := range templates {
		if t.slot {
			name := t.parts[0].param
			v, ok := args[name]
			if !ok {
				continue
			}
			val, err := renderValue(v, "arguments."+name)
			if err != nil {
				return nil, err
			}
			for _, s := range val.items {
				if err := dashCheck(s, name, allowDashes); err != nil {
					return nil, err
				}
			}
			argv = append(argv, val.items...)
			continue
		}
		var b strings.Builder
		absent := false
		for i, p := range t.parts {
			if p.param == "" {
				b.WriteString(p.lit)
				continue
			}
			v, ok := args[p.param]
			if !ok {
				absent = true
				break
			}
			s, err := renderScalar(v, "arguments."+p.param)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				if err := dashCheck(s, p.param, allowDashes); err != nil {
					return nil, err
				}
			}
			b.WriteString(s)
		}
		if !absent {
			argv = append(argv, b.String())
		}
	}
	return argv, nil
}

func dashCheck(s, name string, allow []string) error {
	if strings.HasPrefix(s, "-") && !slices.Contains(allow, name) {
		return invalid("arguments."+name, "a value starting with '-' is refused here: the program would read it as an option (the tools file can allow it with \"allowDashes\")")
	}
	return nil
}
