package negative

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/harn-conform/conform/internal/openapi"
)

// shape is what the generator needs to know of one schema node of the
// document, with $refs followed and allOf merged: the JSON types it
// allows, an object's members, and the bounds of a value.
type shape struct {
	types    map[string]bool // "object", "array", "string", "integer", "number", "boolean", "null"; empty: any
	props    map[string]map[string]any
	required []string
	closed   bool // additionalProperties: false
	open     bool // an object that takes members it does not name (additionalProperties absent or true)
	enum     []any
	items    map[string]any
	format   string
	pattern  string
	min, max *float64
	minLen   *int
	maxLen   *int
	alts     []map[string]any // anyOf/oneOf alternatives
}

// any reports whether the node constrains nothing (JsonValue).
func (s shape) any() bool {
	return len(s.types) == 0 && len(s.props) == 0 && len(s.alts) == 0 && s.enum == nil
}

func (s shape) allows(t string) bool {
	if len(s.types) == 0 {
		return true
	}
	if s.types[t] {
		return true
	}
	return t == "integer" && s.types["number"]
}

// shapeOf resolves a schema of the document.
func shapeOf(d *openapi.Doc, raw map[string]any) shape {
	s := shape{types: map[string]bool{}, props: map[string]map[string]any{}}
	s.merge(d, raw, 0)
	if len(s.props) > 0 && len(s.types) == 0 {
		s.types["object"] = true
	}
	if len(s.types) == 0 && len(s.alts) > 0 {
		// The types of the alternatives (anyOf [MessageInput, JsonObject]
		// is an object).
		for _, a := range s.alts {
			as := shapeOf(d, a)
			if len(as.types) == 0 {
				s.types = map[string]bool{}
				break
			}
			for t := range as.types {
				s.types[t] = true
			}
		}
	}
	if s.types["object"] && !s.closed {
		s.open = true
	}
	sort.Strings(s.required)
	return s
}

func (s *shape) merge(d *openapi.Doc, raw map[string]any, depth int) {
	if depth > 16 {
		return
	}
	raw = d.Deref(raw)
	if raw == nil {
		return
	}
	switch t := raw["type"].(type) {
	case string:
		s.types[t] = true
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok {
				s.types[n] = true
			}
		}
	}
	if ps, ok := raw["properties"].(map[string]any); ok {
		for k, v := range ps {
			if m, ok := v.(map[string]any); ok {
				s.props[k] = m
			}
		}
	}
	if rs, ok := raw["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && !contains(s.required, n) {
				s.required = append(s.required, n)
			}
		}
	}
	if ap, ok := raw["additionalProperties"].(bool); ok && !ap {
		s.closed = true
	}
	if e, ok := raw["enum"].([]any); ok {
		s.enum = e
	}
	if c, ok := raw["const"]; ok {
		s.enum = []any{c}
	}
	if it, ok := raw["items"].(map[string]any); ok {
		s.items = it
	}
	if f, ok := raw["format"].(string); ok {
		s.format = f
	}
	if p, ok := raw["pattern"].(string); ok {
		s.pattern = p
	}
	s.min = num(raw["minimum"], s.min)
	s.max = num(raw["maximum"], s.max)
	s.minLen = integer(raw["minLength"], s.minLen)
	s.maxLen = integer(raw["maxLength"], s.maxLen)
	if all, ok := raw["allOf"].([]any); ok {
		for _, a := range all {
			if m, ok := a.(map[string]any); ok {
				s.merge(d, m, depth+1)
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := raw[k].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					s.alts = append(s.alts, m)
				}
			}
		}
	}
}

// branch picks the alternative of an anyOf/oneOf that describes v: the one
// whose discriminator ("type" member fixed by an enum) v carries, else the
// first object alternative that names members when v is an object, else
// the first whose type fits v. ok is false when none does.
func (s shape) branch(d *openapi.Doc, v any) (shape, bool) {
	var cands []shape
	for _, a := range s.alts {
		cands = append(cands, shapeOf(d, a))
	}
	if m, ok := v.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			for _, c := range cands {
				if p, ok := c.props["type"]; ok && enumHas(shapeOf(d, p).enum, t) {
					return c, true
				}
			}
		}
		for _, c := range cands {
			if len(c.props) > 0 {
				return c, true
			}
		}
	}
	for _, c := range cands {
		if c.allows(jsonType(v)) {
			return c, true
		}
	}
	return shape{}, false
}

func enumHas(e []any, s string) bool {
	for _, x := range e {
		if x == s {
			return true
		}
	}
	return false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func num(v any, old *float64) *float64 {
	switch n := v.(type) {
	case json.Number:
		if f, err := n.Float64(); err == nil {
			return &f
		}
	case float64:
		return &n
	}
	return old
}

func integer(v any, old *int) *int {
	if f := num(v, nil); f != nil {
		i := int(*f)
		return &i
	}
	return old
}

// jsonType is the JSON Schema type of a decoded value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case float64, int:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}
