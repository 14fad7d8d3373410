package refharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/harn-conform/conform/internal/jsonv"
)

// obj is a decoded JSON object with field accessors that name the offending
// field (as a dotted path) in their errors.
type obj struct {
	m      map[string]any
	prefix string
}

// parseObject decodes a request body that must be one JSON object. An empty
// body is an empty object when allowEmpty, an error otherwise.
func parseObject(body []byte, allowEmpty bool) (obj, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return obj{m: map[string]any{}}, nil
		}
		return obj{}, badRequest("", "request body is required, got an empty body")
	}
	if !utf8.Valid(body) {
		return obj{}, badRequest("", "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return obj{}, badRequest("", "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return obj{}, badRequest("", "malformed JSON body: trailing data after the JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, badRequest("", "request body: got %s, want a JSON object", jsonv.AKind(v))
	}
	return obj{m: m}, nil
}

func (o obj) path(name string) string {
	if o.prefix == "" {
		return name
	}
	return o.prefix + "." + name
}

func (o obj) has(name string) bool { _, ok := o.m[name]; return ok }

// str reads a string field. Absent (or null when nullable) returns "", false.
func (o obj) str(name string, required bool) (string, bool, *apiError) {
	v, ok := o.m[name]
	if !ok || v == nil {
		if required {
			return "", false, badRequest(o.path(name), "missing required field %s", o.path(name))
		}
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, badRequest(o.path(name), "field %s: got %s, want a string", o.path(name), jsonv.AKind(v))
	}
	if required && s == "" {
		return "", false, badRequest(o.path(name), "field %s: got an empty string, want a non-empty string", o.path(name))
	}
	return s, true, nil
}

// enum reads a string field that must take one of values.
func (o obj) enum(name string, required bool, values ...string) (string, bool, *apiError) {
	s, ok, err := o.str(name, required)
	if err != nil || !ok {
		return s, ok, err
	}
	for _, v := range values {
		if s == v {
			return s, true, nil
		}
	}
	return "", false, badRequest(o.path(name), "field %s: got %q, want one of %s", o.path(name), s, strings.Join(values, ", "))
}

// object reads an object field.
func (o obj) object(name string, required bool) (obj, bool, *apiError) {
	v, ok := o.m[name]
	if !ok || v == nil {
		if required {
			return obj{}, false, badRequest(o.path(name), "missing required field %s", o.path(name))
		}
		return obj{}, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, false, badRequest(o.path(name), "field %s: got %s, want an object", o.path(name), jsonv.AKind(v))
	}
	return obj{m: m, prefix: o.path(name)}, true, nil
}

// array reads an array field.
func (o obj) array(name string, required bool) ([]any, bool, *apiError) {
	v, ok := o.m[name]
	if !ok || v == nil {
		if required {
			return nil, false, badRequest(o.path(name), "missing required field %s", o.path(name))
		}
		return nil, false, nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, false, badRequest(o.path(name), "field %s: got %s, want an array", o.path(name), jsonv.AKind(v))
	}
	return a, true, nil
}

// strings reads an array of strings.
func (o obj) strings(name string) ([]string, bool, *apiError) {
	a, ok, err := o.array(name, false)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make([]string, 0, len(a))
	for i, v := range a {
		s, isStr := v.(string)
		if !isStr {
			p := fmt.Sprintf("%s[%d]", o.path(name), i)
			return nil, false, badRequest(p, "field %s: got %s, want a string", p, jsonv.AKind(v))
		}
		out = append(out, s)
	}
	return out, true, nil
}

// integer reads an integer field.
func (o obj) integer(name string, required bool) (int64, bool, *apiError) {
	v, ok := o.m[name]
	if !ok || v == nil {
		if required {
			return 0, false, badRequest(o.path(name), "missing required field %s", o.path(name))
		}
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, badRequest(o.path(name), "field %s: got %s, want an integer", o.path(name), jsonv.AKind(v))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, false, badRequest(o.path(name), "field %s: got %s, want an integer", o.path(name), n)
	}
	return i, true, nil
}

// metadata reads the optional metadata object; absent means {}.
func (o obj) metadata() (map[string]any, *apiError) {
	m, ok, err := o.object("metadata", false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return map[string]any{}, nil
	}
	return m.m, nil
}

var (
	roles        = []string{"user", "assistant", "system", "tool", "agent"}
	visibilities = []string{"public", "internal", "receipt_only"}
	partTypes    = []string{"text", "json", "tool_call", "tool_result", "artifact_ref", "file_ref", "image_ref"}
)

// messageInput validates a MessageInput {role, parts[], metadata?}.
func messageInput(o obj) (role string, parts []map[string]any, meta map[string]any, err *apiError) {
	role, _, err = o.enum("role", true, roles...)
	if err != nil {
		return
	}
	raw, _, err := o.array("parts", true)
	if err != nil {
		return
	}
	for i, v := range raw {
		p := fmt.Sprintf("%s[%d]", o.path("parts"), i)
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil, nil, badRequest(p, "field %s: got %s, want an object", p, jsonv.AKind(v))
		}
		part := obj{m: m, prefix: p}
		if err = checkPart(part); err != nil {
			return
		}
		parts = append(parts, m)
	}
	meta, err = o.metadata()
	return
}

// checkPart validates the required fields of each core part type.
func checkPart(p obj) *apiError {
	typ, _, err := p.enum("type", true, partTypes...)
	if err != nil {
		return err
	}
	if _, _, err := p.enum("visibility", true, visibilities...); err != nil {
		return err
	}
	need := func(name string) *apiError { _, _, err := p.str(name, true); return err }
	switch typ {
	case "text":
		if _, ok := p.m["text"].(string); !ok {
			return badRequest(p.path("text"), "field %s: got %s, want a string", p.path("text"), jsonv.AKind(p.m["text"]))
		}
	case "json":
		if !p.has("value") {
			return badRequest(p.path("value"), "missing required field %s", p.path("value"))
		}
	case "tool_call":
		for _, f := range []string{"tool_call_id", "name"} {
			if err := need(f); err != nil {
				return err
			}
		}
		if _, _, err := p.object("input", true); err != nil {
			return err
		}
	case "tool_result":
		if err := need("tool_call_id"); err != nil {
			return err
		}
		if !p.has("output") {
			return badRequest(p.path("output"), "missing required field %s", p.path("output"))
		}
		if _, _, err := p.enum("status", true, "ok", "error"); err != nil {
			return err
		}
	case "artifact_ref":
		return need("artifact_id")
	case "file_ref":
		if err := need("uri"); err != nil {
			return err
		}
		return need("mime_type")
	case "image_ref":
		if err := need("artifact_id"); err != nil {
			return err
		}
		return need("mime_type")
	}
	return nil
}
