// Package openapi is the suite's traffic oracle: it loads the protocol's
// published OpenAPI 3.1 document (fixtures/openapi, vendored byte for byte),
// corrects its known defects in one place (patches.go, ledger in
// fixtures/openapi/PATCHES.md), and judges every request the suite sends and
// every response a target returns against it. Each response violation names
// the requirement of the registry it breaks (reqmap.go), so a shape defect
// anywhere in the suite's traffic is reported under the right id even when no
// spec was looking at that field.
//
// # Why not kin-openapi
//
// getkin/kin-openapi v0.152.0 (the newest release when this was written) does
// load this 3.1 document, and with openapi3filter it accepts type arrays with
// "null", enforces const and follows an external $ref to the receipt schema.
// It was measured and not used, for four reasons:
//
//   - Its 3.1 validation is github.com/santhosh-tekuri/jsonschema/v6, the
//     JSON Schema 2020-12 engine this module already uses, driven per call:
//     every response re-marshals the operation's schema and compiles it
//     anew. One Task response cost 3.9 ms, 1.4 MB and 18,200 allocations
//     there, against 48 µs, 25 KB and 413 allocations here, on the same
//     machine: the same engine with each schema compiled once
//     (BenchmarkValidateResponse).
//   - A schema that refers to components and uses no 2020-12-only keyword
//     (most of this document) is then judged by its older OpenAPI 3.0
//     validator instead, so two engines with different semantics judge
//     different responses; with MultiError on, that validator reported one of
//     an Event's three defects.
//   - Its errors do not name the component schema that failed (the 3.1 path
//     rewrites component references to anonymous $defs), and the oracle maps
//     violations to requirement ids by component.
//   - It adds a router and YAML stack (gorilla/mux, oasdiff/yaml, go-openapi)
//     for a routing problem of 70 fixed templates.
//
// OpenAPI 3.1 schemas are JSON Schema 2020-12 (plus annotation-only keywords
// such as discriminator and externalDocs), so this package compiles the
// document itself as a 2020-12 resource, with formats asserted, and routes
// with a small template matcher. Validation is deterministic (violations are
// sorted by JSON pointer) and never panics on hostile input
// (FuzzValidateResponse).
package openapi

import (
	"bytes"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	openapidoc "github.com/harn-conform/conform/fixtures/openapi"
	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/jsonv"
)

// docURL names the OpenAPI document inside the schema compiler; nothing is
// fetched from it.
const docURL = "https://conform.invalid/openapi/openapi.json"

// receiptSchema is the project's receipt-2026-04-25 JSON Schema (its $id),
// which patch receipt-component puts in place of the OpenAPI Receipt.
const (
	receiptSchemaFile = "receipt-2026-04-25.schema.json"
	receiptSchemaURL  = "https://conform.invalid/schemas/" + receiptSchemaFile
)

// Operation describes one operation of the document, as the suite needs it
// to address and probe the target.
type Operation struct {
	ID       string // operationId, e.g. "getTask"
	Method   string // upper case, e.g. "GET"
	Template string // path template below the protocol root, e.g. "/v1/tasks/{task_id}/events"
	// Public: the operation overrides the document's bearer requirement with
	// `security: []` (discovery, agent card, and the local server's health,
	// version and openapi.json routes).
	Public bool
	// Idempotent: the operation takes an Idempotency-Key header parameter.
	Idempotent bool
	// Versioned: the operation declares the required
	// Harn-Agents-Protocol-Version header (every non-public operation does).
	Versioned bool
	// Success lists the declared 2xx statuses, ascending (201 for creates, 202
	// for submits and replays, 204 for deletes).
	Success []int
	// HasBody: the operation declares a request body; BodyRequired: a
	// request without one is malformed.
	HasBody, BodyRequired bool
	// Stream: the success response is text/event-stream. WebSocket: the path
	// also takes WebSocket upgrades (x-websocket-path).
	Stream, WebSocket bool
	// PathParams and QueryParams name the declared parameters, in template
	// order and alphabetically.
	PathParams, QueryParams []string
	// LocalServer marks routes the later OpenAPI revision added for Harn's
	// local server (health, version, openapi.json, runtime, capabilities,
	// tools, workspace files, permission requests). The narrative spec's REST
	// surface does not name them, so a conformant target may leave them out
	// (404, 405 or 501); one it serves is judged (EXT-HOST-001 for the
	// permission requests, EXT-LOCAL-001 for the others: reqmap.go).
	LocalServer bool
	// Extension marks an operation this project adds to the document
	// (PATCHES.md, "Additions"), not one of the published document.
	Extension bool
}

// localServerOps are the operations of the later revision's local server
// (see Operation.LocalServer).
var localServerOps = map[string]bool{
	"getHealth": true, "getVersion": true, "getOpenApiDocument": true, "getRuntime": true,
	"listCapabilities": true, "listTools": true, "getTool": true, "readWorkspaceFile": true,
	"writeWorkspaceFile": true, "listPermissionRequests": true, "listTaskPermissionRequests": true,
	"respondPermissionRequest": true,
}

// Doc is the loaded, patched and compiled document. It is immutable and safe
// for concurrent use.
type Doc struct {
	ops       []*op               // sorted by Template, then Method
	byMethod  map[string][]*op    // candidates for Match
	comps     map[string]*compSch // compiled component schemas, by name, on demand
	compiler  *jsonschema.Compiler
	compMu    sync.Mutex
	errorEnv  *jsonschema.Schema // components/schemas/ErrorResponse
	errorResp *response          // a response whose content is the error envelope
	root      map[string]any     // the patched document
}

type op struct {
	Operation
	segs      []string // template segments; "" stands for a parameter
	params    []*param
	body      map[string]*media // request body media types
	responses map[string]*response
}

type param struct {
	name, in string
	required bool
	typ      string // the schema's type: integer, number, boolean or string
	schema   *lazySchema
}

type response struct {
	key     string            // "200", "4XX", "DEFAULT"
	content map[string]*media // by media type, lower case
}

type media struct {
	typ    string // media type, lower case
	json   bool
	schema *lazySchema // nil for non-JSON media
}

// lazySchema is a schema of the document compiled on first use: a run
// touches a fraction of the operations, and compiling every schema up
// front was a fifth of a short run's CPU. TestEverySchemaCompiles keeps
// the vendored document's schemas compilable.
type lazySchema struct {
	url string
	s   *jsonschema.Schema
	err error
	ok  bool // compiled (s or err is set)
}

// compiled compiles l once. The compiler is not safe for concurrent use:
// compMu serialises it.
func (d *Doc) compiled(l *lazySchema) (*jsonschema.Schema, error) {
	d.compMu.Lock()
	defer d.compMu.Unlock()
	if !l.ok {
		l.s, l.err = d.compiler.Compile(l.url)
		l.ok = true
	}
	return l.s, l.err
}

type compSch struct {
	s   *jsonschema.Schema
	err error
}

var (
	defaultOnce sync.Once
	defaultDoc  *Doc
	defaultErr  error
)

// Default returns the document loaded once per process.
func Default() (*Doc, error) {
	defaultOnce.Do(func() { defaultDoc, defaultErr = Load() })
	return defaultDoc, defaultErr
}

// Load parses the embedded document and applies the patches of
// PATCHES.md; the schemas an operation uses compile on first use. An error means the vendored file
// or a patch is broken, never the target.
func Load() (*Doc, error) { return load(nil) }

// load is Load with the patches skip names left out (tests show each patch
// is needed).
func load(skip map[string]bool) (*Doc, error) {
	root, err := parseDoc(openapidoc.JSON)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := applyPatches(root, skip); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(docURL, root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	rb, err := schemas.FS.ReadFile(receiptSchemaFile)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	rdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rb))
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", receiptSchemaFile, err)
	}
	if err := c.AddResource(receiptSchemaURL, rdoc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	d := &Doc{byMethod: map[string][]*op{}, comps: map[string]*compSch{}, compiler: c, root: root}
	b := builder{d: d, c: c, root: root}
	if err := b.build(); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if d.errorEnv, err = d.component("ErrorResponse"); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	d.errorResp = &response{key: "DEFAULT", content: map[string]*media{
		"application/json": {typ: "application/json", json: true, schema: &lazySchema{s: d.errorEnv, ok: true}}}}
	return d, nil
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: only the embedded documents are available", url)
}

// parseDoc decodes the document's JSON form (openapidoc.JSON, generated
// from the vendored YAML) to the values the schema compiler and the patches
// work on: numbers as json.Number.
func parseDoc(j []byte) (map[string]any, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, fmt.Errorf("parsing openapi.json: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.json is not an object")
	}
	return m, nil
}

// component compiles components/schemas/<name> once.
func (d *Doc) component(name string) (*jsonschema.Schema, error) {
	d.compMu.Lock()
	defer d.compMu.Unlock()
	if c, ok := d.comps[name]; ok {
		return c.s, c.err
	}
	s, err := d.compiler.Compile(docURL + "#" + pointerURL("components", "schemas", name))
	d.comps[name] = &compSch{s, err}
	return s, err
}

// Operations returns every operation, sorted by template then method.
func (d *Doc) Operations() []Operation {
	out := make([]Operation, len(d.ops))
	for i, o := range d.ops {
		out[i] = o.public()
	}
	return out
}

func (o *op) public() Operation {
	p := o.Operation
	p.Success = append([]int(nil), o.Success...)
	p.PathParams = append([]string(nil), o.PathParams...)
	p.QueryParams = append([]string(nil), o.QueryParams...)
	return p
}

// Operation returns the operation with the given operationId.
func (d *Doc) Operation(id string) (Operation, bool) {
	for _, o := range d.ops {
		if o.ID == id {
			return o.public(), true
		}
	}
	return Operation{}, false
}

// Match finds the operation for a method and a path below the protocol root
// (the base URL's prefix already stripped, escaped as sent, e.g.
// "/v1/tasks/task_1/events"). A query string on path is ignored. A literal
// segment beats a parameter ("/v1/events/stream" is streamEvents, not
// getEvent), as OpenAPI requires.
func (d *Doc) Match(method, path string) (Operation, bool) {
	o, _ := d.match(method, path)
	if o == nil {
		return Operation{}, false
	}
	return o.public(), true
}

// match returns the operation and its path parameter values (unescaped).
func (d *Doc) match(method, path string) (*op, map[string]string) {
	segs, ok := splitPath(path)
	if !ok {
		return nil, nil
	}
	var best *op
	for _, o := range d.byMethod[strings.ToUpper(method)] {
		if len(o.segs) != len(segs) || !o.fits(segs) {
			continue
		}
		if best == nil || o.moreLiteral(best) {
			best = o
		}
	}
	if best == nil {
		return nil, nil
	}
	vals := map[string]string{}
	j := 0
	for i, s := range best.segs {
		if s == "" {
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				v = segs[i]
			}
			if j < len(best.PathParams) {
				vals[best.PathParams[j]] = v
			}
			j++
		}
	}
	return best, vals
}

// methodsFor lists the methods declared for a path, for "unmatched" messages.
func (d *Doc) methodsFor(path string) []string {
	segs, ok := splitPath(path)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, o := range d.ops {
		if len(o.segs) == len(segs) && o.fits(segs) && !seen[o.Method] {
			seen[o.Method] = true
			out = append(out, o.Method)
		}
	}
	sort.Strings(out)
	return out
}

func splitPath(path string) ([]string, bool) {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	return strings.Split(path[1:], "/"), true
}

func (o *op) fits(segs []string) bool {
	for i, s := range o.segs {
		if s == "" {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if s != segs[i] {
			return false
		}
	}
	return true
}

// moreLiteral reports whether o has a literal segment where other has a
// parameter, at the first position where they differ in kind.
func (o *op) moreLiteral(other *op) bool {
	for i := range o.segs {
		a, b := o.segs[i] != "", other.segs[i] != ""
		if a != b {
			return a
		}
	}
	return false
}

// --- building -------------------------------------------------------------------

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type builder struct {
	d    *Doc
	c    *jsonschema.Compiler
	root map[string]any
}

func (b *builder) build() error {
	paths, _ := b.root["paths"].(map[string]any)
	if len(paths) == 0 {
		return fmt.Errorf("document has no paths")
	}
	globalSec, _ := b.root["security"].([]any)
	ids := map[string]bool{}
	for tmpl, pv := range paths {
		item, ok := pv.(map[string]any)
		if !ok {
			return fmt.Errorf("paths[%s] is not an object", tmpl)
		}
		for _, m := range methods {
			ov, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			o, err := b.operation(tmpl, m, item, ov, len(globalSec) > 0)
			if err != nil {
				return fmt.Errorf("%s %s: %w", strings.ToUpper(m), tmpl, err)
			}
			if ids[o.ID] {
				return fmt.Errorf("duplicate operationId %s", o.ID)
			}
			ids[o.ID] = true
			b.d.ops = append(b.d.ops, o)
			b.d.byMethod[o.Method] = append(b.d.byMethod[o.Method], o)
		}
	}
	sort.Slice(b.d.ops, func(i, j int) bool {
		a, c := b.d.ops[i], b.d.ops[j]
		if a.Template != c.Template {
			return a.Template < c.Template
		}
		return a.Method < c.Method
	})
	return nil
}

func (b *builder) operation(tmpl, method string, item, ov map[string]any, secured bool) (*op, error) {
	o := &op{responses: map[string]*response{}}
	o.ID, _ = ov["operationId"].(string)
	if o.ID == "" {
		return nil, fmt.Errorf("no operationId")
	}
	o.Method = strings.ToUpper(method)
	o.Template = tmpl
	o.LocalServer = localServerOps[o.ID]
	o.Extension, _ = ov["x-conform-extension"].(bool)
	o.WebSocket, _ = ov["x-websocket-path"].(bool)
	o.Public = !secured
	if sec, ok := ov["security"].([]any); ok {
		o.Public = len(sec) == 0
	}
	segs, ok := splitPath(tmpl)
	if !ok {
		return nil, fmt.Errorf("template does not start with /")
	}
	var pathNames []string
	for _, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			o.segs = append(o.segs, "")
			pathNames = append(pathNames, s[1:len(s)-1])
		} else {
			o.segs = append(o.segs, s)
		}
	}
	o.PathParams = pathNames

	opPtr := []string{"paths", tmpl, method}
	seen := map[string]bool{}
	addParams := func(list []any, base []string) error {
		for i, pv := range list {
			p, ptr, err := b.resolve(pv, append(append([]string(nil), base...), "parameters", strconv.Itoa(i)))
			if err != nil {
				return err
			}
			name, _ := p["name"].(string)
			in, _ := p["in"].(string)
			key := in + ":" + strings.ToLower(name)
			if name == "" || seen[key] {
				continue // an operation-level parameter overrides a path-level one
			}
			seen[key] = true
			pr := &param{name: name, in: in}
			pr.required, _ = p["required"].(bool)
			if sch, ok := p["schema"].(map[string]any); ok {
				pr.typ, _ = sch["type"].(string)
				pr.schema = &lazySchema{url: docURL + "#" + pointerURL(append(ptr, "schema")...)}
			}
			o.params = append(o.params, pr)
			switch {
			case in == "header" && strings.EqualFold(name, "Idempotency-Key"):
				o.Idempotent = true
			case in == "header" && strings.EqualFold(name, "Harn-Agents-Protocol-Version"):
				o.Versioned = pr.required
			case in == "query":
				o.QueryParams = append(o.QueryParams, name)
			}
		}
		return nil
	}
	// Operation parameters first, so that they override path-item ones.
	if list, ok := ov["parameters"].([]any); ok {
		if err := addParams(list, opPtr); err != nil {
			return nil, err
		}
	}
	if list, ok := item["parameters"].([]any); ok {
		if err := addParams(list, []string{"paths", tmpl}); err != nil {
			return nil, err
		}
	}
	sort.Strings(o.QueryParams)
	sort.Slice(o.params, func(i, j int) bool {
		if o.params[i].in != o.params[j].in {
			return o.params[i].in < o.params[j].in
		}
		return o.params[i].name < o.params[j].name
	})

	if rb, ok := ov["requestBody"]; ok {
		body, ptr, err := b.resolve(rb, append(opPtr, "requestBody"))
		if err != nil {
			return nil, err
		}
		o.HasBody = true
		o.BodyRequired, _ = body["required"].(bool)
		if o.body, err = b.content(body, ptr); err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
	}

	resps, _ := ov["responses"].(map[string]any)
	for key, rv := range resps {
		r, ptr, err := b.resolve(rv, append(opPtr, "responses", key))
		if err != nil {
			return nil, err
		}
		resp := &response{key: strings.ToUpper(key)}
		if resp.content, err = b.content(r, ptr); err != nil {
			return nil, fmt.Errorf("response %s: %w", key, err)
		}
		if _, ok := resp.content["text/event-stream"]; ok && strings.HasPrefix(key, "2") {
			o.Stream = true
		}
		o.responses[resp.key] = resp
		if n, err := strconv.Atoi(key); err == nil && n >= 200 && n < 300 {
			o.Success = append(o.Success, n)
		}
	}
	sort.Ints(o.Success)
	return o, nil
}

// content compiles the schemas of a request body or response object.
func (b *builder) content(obj map[string]any, ptr []string) (map[string]*media, error) {
	cv, _ := obj["content"].(map[string]any)
	out := map[string]*media{}
	for mt, mv := range cv {
		m := &media{typ: strings.ToLower(mt), json: isJSON(mt)}
		mo, _ := mv.(map[string]any)
		if _, ok := mo["schema"].(map[string]any); ok && m.json {
			m.schema = &lazySchema{url: docURL + "#" + pointerURL(append(append([]string(nil), ptr...), "content", mt, "schema")...)}
		}
		out[m.typ] = m
	}
	return out, nil
}

// resolve follows a local $ref (components/parameters, responses,
// requestBodies) and returns the object and its pointer.
func (b *builder) resolve(v any, ptr []string) (map[string]any, []string, error) {
	for range 8 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s is not an object", "/"+strings.Join(ptr, "/"))
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, ptr, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, nil, fmt.Errorf("unsupported $ref %q", ref)
		}
		ptr = nil
		for _, t := range strings.Split(ref[2:], "/") {
			ptr = append(ptr, jsonv.Untoken(t))
		}
		v = lookup(b.root, ptr)
	}
	return nil, nil, fmt.Errorf("$ref chain too long at %s", "/"+strings.Join(ptr, "/"))
}

func lookup(root any, ptr []string) any {
	v := root
	for _, t := range ptr {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[t]
	}
	return v
}

// pointerURL renders JSON pointer tokens as a URL fragment.
func pointerURL(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(jsonv.Token(t)))
	}
	return b.String()
}

func isJSON(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(mt))
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = strings.TrimSpace(mt[:i])
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
