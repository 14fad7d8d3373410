package openapi

import (
	"net/http"
	"strings"
)

// The shapes of an operation's requests, as raw schemas of the patched
// document: what the negative pass (internal/negative) reads to generate
// malformed requests, and what a server validates its requests against.

// Param is one declared parameter of an operation.
type Param struct {
	Name, In string // in: path, query or header
	Required bool
	// Schema is the parameter's schema as the document writes it (a local
	// $ref is left for Deref); nil when it declares none.
	Schema map[string]any
}

// Params returns the operation's declared parameters (path-item ones
// included), sorted by location then name; nil for an unknown operation.
func (d *Doc) Params(opID string) []Param {
	o := d.op(opID)
	if o == nil {
		return nil
	}
	var out []Param
	for _, p := range o.params {
		q := Param{Name: p.name, In: p.in, Required: p.required}
		if p.schema != nil {
			q.Schema, _ = d.at(p.schema.url).(map[string]any)
		}
		out = append(out, q)
	}
	return out
}

// RequestSchema returns the schema of the operation's JSON request body,
// as the document writes it, and whether it has one.
func (d *Doc) RequestSchema(opID string) (map[string]any, bool) {
	o := d.op(opID)
	if o == nil {
		return nil, false
	}
	for _, m := range sortedMedia(o.body) {
		if m.json && m.schema != nil {
			s, ok := d.at(m.schema.url).(map[string]any)
			return s, ok
		}
	}
	return nil, false
}

// Deref follows a schema's local $ref chain ("#/components/schemas/X") and
// returns the schema it ends at; a schema without $ref is returned as is,
// and nil when the chain is broken or too long.
func (d *Doc) Deref(s map[string]any) map[string]any {
	for range 16 {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		frag, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil // the receipt schema and other resources are not request shapes
		}
		s, _ = d.at(docURL + "#" + frag).(map[string]any)
		if s == nil {
			return nil
		}
	}
	return nil
}

// ValidateRequestBody judges only the body of a request to method path
// (below the protocol root): its Content-Type and its JSON against the
// operation's request schema. It returns the operation's id ("" when no
// operation matches, and then no violations: an unknown route is not a body
// problem). A server can use it to refuse what the document declares
// invalid; the violations are sorted by pointer.
func (d *Doc) ValidateRequestBody(method, path string, header http.Header, body []byte) (string, []Violation) {
	method = strings.ToUpper(method)
	o, _ := d.match(method, path)
	if o == nil {
		return "", nil
	}
	return o.ID, d.validateBody(o, method+" "+cutQuery(path), header, body)
}

// ValidateOperationBody is ValidateRequestBody for the operation with the
// given id (nil for an unknown one).
func (d *Doc) ValidateOperationBody(opID string, header http.Header, body []byte) []Violation {
	o := d.op(opID)
	if o == nil {
		return nil
	}
	return d.validateBody(o, o.Method+" "+o.Template, header, body)
}

func (d *Doc) validateBody(o *op, label string, header http.Header, body []byte) []Violation {
	x := exchange{kind: KindRequest, label: label, opID: o.ID}
	if !o.HasBody {
		return nil
	}
	if len(body) == 0 {
		if o.BodyRequired {
			return []Violation{x.violation("", "", "the operation requires a request body", "")}
		}
		return nil
	}
	ct := header.Get("Content-Type")
	m := pickMedia(o.body, ct)
	if m == nil {
		v := x.violation("", "", "request Content-Type "+quoteCT(ct)+" is not one the operation takes ("+mediaList(o.body)+")", "")
		v.Keyword = "contentType"
		return []Violation{v}
	}
	if m.schema == nil {
		return nil
	}
	s, err := d.compiled(m.schema)
	if err != nil {
		return []Violation{documentDefect(x, err)}
	}
	return finish(d.checkJSON(x, s, body))
}

func quoteCT(ct string) string {
	if ct == "" {
		return "(none)"
	}
	return `"` + bound(ct, 80) + `"`
}

func (d *Doc) op(id string) *op {
	for _, o := range d.ops {
		if o.ID == id {
			return o
		}
	}
	return nil
}

// at returns the value of the patched document a schema URL of this
// package (docURL#/pointer) names.
func (d *Doc) at(u string) any {
	frag, ok := strings.CutPrefix(u, docURL+"#")
	if !ok {
		return nil
	}
	var ptr []string
	for _, t := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if t != "" {
			ptr = append(ptr, unescapeTok(t))
		}
	}
	return lookup(d.root, ptr)
}
