package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Violation kinds.
const (
	KindUnmatched = "unmatched" // no operation of the document matches the request
	KindRequest   = "request"   // the suite's request breaks the document: a suite bug
	KindResponse  = "response"  // the target's response breaks the document
	KindDocument  = "document"  // a schema of the vendored document does not compile: a suite bug
)

// Violation is one way an exchange departs from the document.
type Violation struct {
	Kind string // KindUnmatched, KindRequest, KindResponse or KindDocument
	// Op names the exchange: "GET /v1/tasks/t1 → 200" for a response,
	// "POST /v1/tasks" for a request.
	Op string
	// OperationID is the matched operation ("getTask"), "" when unmatched.
	OperationID string
	// Pointer is the JSON pointer of the offending member in the body
	// ("/status", "/data/0/parts/1/type"); for a missing member, where it
	// should be. "" for the status, a header or parameter, or the body as a
	// whole.
	Pointer string
	// Value is the offending value as JSON, at most 200 bytes ("" when the
	// member is missing or the violation is not about a body value).
	Value   string
	Message string
	// Req is the requirement id the violation breaks (reqmap.go); "" for
	// request and unmatched violations, which are the suite's own.
	Req string
	// UndeclaredSuccess marks a 2xx the operation does not declare (a 200
	// where it declares 201 or 202): legal for an idempotent replay, which
	// the caller, not the document, can tell.
	UndeclaredSuccess bool
	// Keyword is the JSON Schema keyword a body value failed ("type",
	// "required", "enum", "minimum", "format", "pattern", "anyOf", …), ""
	// for a violation that is not about a body value (a status, a header, a
	// parameter, a body that is not JSON).
	Keyword string
	// Want holds the values an "enum" or "const" keyword allows.
	Want []any
}

// Error reads like
// `GET /v1/tasks/t1 → 200: /status = "completed": value must be one of "SUBMITTED", … (CORE-READ-004)`.
func (v Violation) Error() string {
	var b strings.Builder
	b.WriteString(v.Op)
	b.WriteString(": ")
	switch {
	case v.Pointer != "":
		b.WriteString(v.Pointer)
		if v.Value != "" {
			b.WriteString(" = " + v.Value)
		}
		b.WriteString(": ")
	case v.Value != "":
		b.WriteString("body = " + v.Value + ": ")
	}
	b.WriteString(v.Message)
	if v.Req != "" {
		b.WriteString(" (" + v.Req + ")")
	}
	return b.String()
}

const (
	maxValueBytes   = 200
	maxMessageBytes = 300
	// maxViolations bounds one call's findings (a list of 200 broken items
	// would otherwise bury the report); the cut is stated in a last one.
	maxViolations = 100
)

var printer = message.NewPrinter(language.English)

// exchange is what every violation of one call shares.
type exchange struct {
	kind, label, opID string
	status            int // 0 for requests
}

func (x exchange) violation(ptr, value, msg, req string) Violation {
	if x.kind != KindResponse {
		req = ""
	}
	return Violation{Kind: x.kind, Op: x.label, OperationID: x.opID, Pointer: ptr, Value: value, Message: bound(msg, maxMessageBytes), Req: req}
}

// --- requests ------------------------------------------------------------------

// ValidateRequest judges a request the suite sends: the operation exists,
// the bearer credential is present where the document requires one, the
// declared header and query parameters are present and valid, and the body
// is JSON that fits the operation's schema. path is below the protocol root
// and escaped as sent; header may be redacted (only the Authorization
// scheme and presence are looked at). Request violations are the suite's
// own mistakes: they carry no requirement id. A deliberate negative probe
// is not validated (see ValidateTraffic).
func (d *Doc) ValidateRequest(method, path string, query url.Values, header http.Header, body []byte) []Violation {
	method = strings.ToUpper(method)
	x := exchange{kind: KindRequest, label: method + " " + cutQuery(path)}
	o, pathVals := d.match(method, path)
	if o == nil {
		x.kind = KindUnmatched
		msg := "no operation of the OpenAPI document matches " + x.label
		if ms := d.methodsFor(path); len(ms) > 0 {
			msg += " (the path takes " + strings.Join(ms, ", ") + ")"
		}
		return []Violation{x.violation("", "", msg, "")}
	}
	x.opID = o.ID
	var out []Violation
	if !o.Public {
		scheme, cred, _ := strings.Cut(strings.TrimSpace(header.Get("Authorization")), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(cred) == "" {
			out = append(out, x.violation("", "", "no Authorization: Bearer credential on an operation that requires bearerAuth", ""))
		}
	}
	for _, p := range o.params {
		var vals []string
		switch p.in {
		case "query":
			vals = query[p.name]
		case "header":
			vals = header.Values(p.name)
		case "path":
			if v, ok := pathVals[p.name]; ok {
				vals = []string{v}
			}
		default:
			continue
		}
		if len(vals) == 0 {
			if p.required {
				out = append(out, x.violation("", "", fmt.Sprintf("%s parameter %s is required", p.in, p.name), ""))
			}
			continue
		}
		if len(vals) > 1 && p.in != "path" {
			out = append(out, x.violation("", "", fmt.Sprintf("%s parameter %s is given %d times", p.in, p.name, len(vals)), ""))
		}
		out = append(out, d.checkParam(x, p, vals[0])...)
	}
	if o.HasBody {
		switch {
		case len(body) == 0 && o.BodyRequired:
			out = append(out, x.violation("", "", "the operation requires a request body", ""))
		case len(body) > 0:
			ct := header.Get("Content-Type")
			m := pickMedia(o.body, ct)
			if m == nil {
				out = append(out, x.violation("", "", fmt.Sprintf("request Content-Type %q is not one the operation takes (%s)", ct, mediaList(o.body)), ""))
				break
			}
			if m.schema != nil {
				s, err := d.compiled(m.schema)
				if err != nil {
					out = append(out, documentDefect(x, err))
					break
				}
				out = append(out, d.checkJSON(x, s, body)...)
			}
		}
	}
	return finish(out)
}

// checkParam validates one parameter value, converted to its schema type.
func (d *Doc) checkParam(x exchange, p *param, raw string) []Violation {
	if p.schema == nil {
		return nil
	}
	schema, err := d.compiled(p.schema)
	if err != nil {
		return []Violation{documentDefect(x, err)}
	}
	desc := p.in + " parameter " + p.name
	if !strings.EqualFold(p.name, "Authorization") {
		desc += fmt.Sprintf(" (%q)", bound(raw, 80))
	}
	var v any = raw
	switch p.typ {
	case "integer", "number":
		if _, err := strconv.ParseFloat(raw, 64); err != nil {
			return []Violation{x.violation("", "", desc+": not a number", "")}
		}
		v = json.Number(raw)
	case "boolean":
		bv, err := strconv.ParseBool(raw)
		if err != nil {
			return []Violation{x.violation("", "", desc+": not a boolean", "")}
		}
		v = bv
	}
	var out []Violation
	for _, l := range flatten(schema, v) {
		out = append(out, x.violation("", "", desc+": "+l.msg, ""))
	}
	return out
}

// --- responses -----------------------------------------------------------------

// ValidateResponse judges a target's response to method path (below the
// protocol root, as sent):
//
//   - A declared status is validated against its response; a 4xx or 5xx
//     that is not declared falls to `default`, and without one to the
//     ErrorResponse component (every error is the error envelope). An
//     undeclared error status is itself a violation only if the operation
//     declares error responses explicitly and has no `default`.
//   - A 2xx or 3xx the operation does not declare is a violation (ruling 4:
//     success codes come from the document), reported under the
//     operation's requirement; a 2xx body is still checked against the
//     operation's success schema when there is exactly one. `default` never
//     covers a success status: in this document every `default` is the
//     error envelope.
//   - Bodies declared as application/json must be JSON with a JSON
//     Content-Type and fit the schema; other media types (text/event-stream,
//     application/octet-stream) are not body-checked, but an event stream
//     served with another Content-Type is a violation. 1xx is not judged.
//   - A path no operation matches is judged only when it is an error (its
//     body must be the error envelope); ValidateRequest reports the
//     unmatched request.
func (d *Doc) ValidateResponse(method, path string, status int, header http.Header, body []byte) []Violation {
	return d.validateResponse(method, path, status, header, body, true)
}

func (d *Doc) validateResponse(method, path string, status int, header http.Header, body []byte, checkBody bool) []Violation {
	method = strings.ToUpper(method)
	x := exchange{kind: KindResponse, label: fmt.Sprintf("%s %s → %d", method, cutQuery(path), status), status: status}
	if status < 200 {
		return nil
	}
	o, _ := d.match(method, path)
	if o == nil {
		if status >= 400 {
			return finish(d.checkContent(x, d.errorResp, header, body, checkBody))
		}
		return nil
	}
	x.opID = o.ID
	var out []Violation
	resp := o.responses[strconv.Itoa(status)]
	if resp == nil {
		resp = o.responses[strconv.Itoa(status/100)+"XX"]
	}
	if resp == nil {
		if status >= 400 {
			resp = o.responses["DEFAULT"]
			if resp == nil {
				if o.declaresErrors() {
					out = append(out, x.violation("", "", fmt.Sprintf("status %d is not declared for %s", status, o.ID), ""))
				}
				out = append(out, d.checkContent(x, d.errorResp, header, body, checkBody)...)
				return finish(out)
			}
		} else {
			v := x.violation("", "", fmt.Sprintf("status %d is not declared for %s (success: %s)", status, o.ID, intList(o.Success)), opReq(o.ID, status))
			v.UndeclaredSuccess = status < 300
			out = append(out, v)
			if len(o.Success) != 1 || status >= 300 {
				return finish(out)
			}
			resp = o.responses[strconv.Itoa(o.Success[0])]
		}
	}
	if len(resp.content) > 0 {
		out = append(out, d.checkContent(x, resp, header, body, checkBody)...)
	}
	return finish(out)
}

func (o *op) declaresErrors() bool {
	for k := range o.responses {
		if k != "DEFAULT" && (k[0] == '4' || k[0] == '5') {
			return true
		}
	}
	return false
}

// checkContent judges the Content-Type, and the body when checkBody, against
// a response's declared content.
func (d *Doc) checkContent(x exchange, resp *response, header http.Header, body []byte, checkBody bool) []Violation {
	ct := header.Get("Content-Type")
	m := pickMedia(resp.content, ct)
	if m != nil && !m.json {
		return nil // streams and bytes: not body-checked
	}
	if m == nil {
		// The Content-Type is none the response declares. A JSON body sent
		// with a wrong Content-Type is still checked against the schema.
		for _, cand := range sortedMedia(resp.content) {
			if cand.json {
				m = cand
				break
			}
		}
		if m == nil {
			// Only non-JSON content is declared. An event stream served as
			// something else is a stream no client can read; other bytes
			// (artifact content) may carry their own media type.
			if _, ok := resp.content["text/event-stream"]; ok {
				return []Violation{x.violation("", "", fmt.Sprintf("Content-Type %q; want text/event-stream", bound(ct, 80)), opReq(x.opID, x.status))}
			}
			return nil
		}
	}
	if !checkBody {
		if !isJSON(ct) {
			return []Violation{x.violation("", "", contentTypeMsg(ct), opReq(x.opID, x.status))}
		}
		return nil
	}
	var s *jsonschema.Schema
	if m.schema != nil {
		var err error
		if s, err = d.compiled(m.schema); err != nil {
			return []Violation{documentDefect(x, err)}
		}
	}
	return d.checkJSONBody(x, s, header, body)
}

// documentDefect is the violation of an exchange whose schema does not
// compile: the vendored document's fault, never the target's.
func documentDefect(x exchange, err error) Violation {
	return Violation{Kind: KindDocument, Op: x.label, OperationID: x.opID, Message: bound("the vendored OpenAPI document's schema does not compile: "+err.Error(), maxMessageBytes)}
}

func contentTypeMsg(ct string) string {
	if ct == "" {
		return "no Content-Type; want application/json"
	}
	return fmt.Sprintf("Content-Type %q; want application/json", bound(ct, 80))
}

// checkJSONBody requires a JSON Content-Type and a JSON body fitting s.
func (d *Doc) checkJSONBody(x exchange, s *jsonschema.Schema, header http.Header, body []byte) []Violation {
	var out []Violation
	ct := header.Get("Content-Type")
	if len(bytes.TrimSpace(body)) == 0 {
		return []Violation{x.violation("", "", "the body is empty; want a JSON document", opReq(x.opID, x.status))}
	}
	if !isJSON(ct) {
		out = append(out, x.violation("", "", contentTypeMsg(ct), opReq(x.opID, x.status)))
	}
	if s == nil {
		return out
	}
	return append(out, d.checkJSON(x, s, body)...)
}

// checkJSON decodes body and validates it against s.
func (d *Doc) checkJSON(x exchange, s *jsonschema.Schema, body []byte) []Violation {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []Violation{x.violation("", "", "the body is not JSON: "+err.Error(), opReq(x.opID, x.status))}
	}
	var out []Violation
	for _, l := range flatten(s, inst) {
		req := resolveReq(l.frames, l.directLoc, l.directField, l.keyword, x.opID, x.status)
		val := ""
		if l.hasValue {
			val = jsonValue(l.value)
		}
		v := x.violation(jsonv.Pointer(l.loc...), val, l.msg, req)
		v.Keyword, v.Want = l.keyword, l.want
		out = append(out, v)
	}
	return out
}

// ValidateComponent validates a JSON document against one component schema
// of the patched document, as a response would be: for the data of SSE and
// WebSocket frames ("Event"; "ErrorResponse" for an error frame), which no
// operation describes. label names the source in the violations
// ("GET /v1/tasks/t1/stream frame 3").
func (d *Doc) ValidateComponent(name, label string, body []byte) []Violation {
	x := exchange{kind: KindResponse, label: label}
	s, err := d.component(name)
	if err != nil {
		return []Violation{x.violation("", "", fmt.Sprintf("no component schema %s: %v", name, err), "")}
	}
	if name == "ErrorResponse" {
		x.status = 400 // an error document: unmapped body problems are CORE-ERR-002
	}
	return finish(d.checkJSON(x, s, body))
}

// --- flattening the validator's error tree ---------------------------------------

// leaf is one finding at the bottom of the validator's error tree.
type leaf struct {
	loc                    []string // instance location (tokens)
	keyword                string
	msg                    string
	frames                 []frame
	directLoc, directField string
	value                  any
	hasValue               bool
	want                   []any // enum/const values, for discriminators
}

// flatten validates inst and returns the leaves of the error tree.
func flatten(s *jsonschema.Schema, inst any) []leaf {
	err := s.Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []leaf{{msg: err.Error()}}
	}
	w := &walker{inst: inst}
	w.walk(ve, nil)
	return w.leaves
}

type walker struct {
	inst   any
	leaves []leaf
}

func (w *walker) walk(e *jsonschema.ValidationError, frames []frame) {
	frames = pushFrame(frames, e)
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			w.walk(c, frames)
		}
		if len(e.Causes) == 0 {
			w.add(e, frames, loc, "schema", e.ErrorKind.LocalizedString(printer))
		}
	case *kind.AnyOf:
		w.alternatives(e, frames, "anyOf")
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			w.alternatives(e, frames, "oneOf")
			return
		}
		w.add(e, frames, loc, "oneOf", fmt.Sprintf("value matches alternatives %s of a oneOf; exactly one may match", intList(k.Subschemas)))
	case *kind.Required:
		for _, m := range k.Missing {
			l := leaf{loc: appendTok(loc, m), keyword: "required", msg: "required member is missing", frames: frames,
				directLoc: jsonv.Pointer(loc...), directField: m}
			w.leaves = append(w.leaves, l)
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			l := leaf{loc: appendTok(loc, p), keyword: "additionalProperties", msg: "member not allowed: the object is closed", frames: frames,
				directLoc: jsonv.Pointer(loc...), directField: p}
			l.value, l.hasValue = valueAt(w.inst, l.loc)
			w.leaves = append(w.leaves, l)
		}
	case *kind.Enum:
		w.add(e, frames, loc, "enum", "value must be "+oneOfList(k.Want)).want = k.Want
	case *kind.Const:
		w.add(e, frames, loc, "const", "value must be "+jsonValue(k.Want)).want = []any{k.Want}
	case *kind.Format:
		msg := "value is not a valid " + k.Want
		if k.Err != nil {
			msg += ": " + k.Err.Error()
		}
		w.add(e, frames, loc, "format", msg)
	case *kind.Pattern:
		w.add(e, frames, loc, "pattern", "value does not match the pattern "+k.Want)
	case *kind.Type:
		w.add(e, frames, loc, "type", fmt.Sprintf("value is %s, want %s", article(k.Got), strings.Join(k.Want, " or ")))
	default:
		kw := "schema"
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
		w.add(e, frames, loc, kw, e.ErrorKind.LocalizedString(printer))
	}
}

func (w *walker) add(e *jsonschema.ValidationError, frames []frame, loc []string, keyword, msg string) *leaf {
	l := leaf{loc: loc, keyword: keyword, msg: msg, frames: frames}
	if n := len(loc); n > 0 {
		l.directLoc, l.directField = jsonv.Pointer(loc[:n-1]...), loc[n-1]
	}
	l.value, l.hasValue = valueAt(w.inst, loc)
	w.leaves = append(w.leaves, l)
	return &w.leaves[len(w.leaves)-1]
}

// alternatives reports a failed anyOf or oneOf (none matched) by its most
// plausible branch: branches whose value has the wrong JSON type, or whose
// discriminator (a "type" or "object" member fixed by enum/const) does not
// match, are set aside; if one branch is left, its findings are reported;
// if every branch was set aside by its discriminator, one finding names the
// discriminator values; otherwise one finding says no alternative matched.
func (w *walker) alternatives(e *jsonschema.ValidationError, frames []frame, keyword string) {
	loc := e.InstanceLocation
	var kept, all []*branch
	allDisc := len(e.Causes) > 0
	for i, c := range e.Causes {
		sub := &walker{inst: w.inst}
		sub.walk(c, frames)
		b := &branch{name: branchName(c, i), leaves: sub.leaves}
		for _, l := range sub.leaves {
			switch {
			case l.keyword == "type" && slices.Equal(l.loc, loc):
				b.excluded = true
			case (l.keyword == "enum" || l.keyword == "const") && len(l.loc) == len(loc)+1 &&
				slices.Equal(l.loc[:len(loc)], loc) && (l.loc[len(loc)] == "type" || l.loc[len(loc)] == "object"):
				b.excluded = true
				b.disc = append(b.disc, l.want...)
				b.discTok = l.loc[len(loc)]
			case l.keyword == "type" && len(l.loc) == len(loc)+1 &&
				slices.Equal(l.loc[:len(loc)], loc) && (l.loc[len(loc)] == "type" || l.loc[len(loc)] == "object"):
				// The discriminator itself has the wrong JSON type.
				b.excluded = true
				b.discType = &l
			}
		}
		if b.disc == nil {
			allDisc = false
		}
		all = append(all, b)
		if !b.excluded {
			kept = append(kept, b)
		}
	}
	if len(kept) == 1 {
		w.leaves = append(w.leaves, kept[0].leaves...)
		return
	}
	if len(kept) == 0 && allDisc && sameDiscriminator(all) {
		var want []any
		for _, b := range all {
			want = append(want, b.disc...)
		}
		tok := all[0].discTok
		l := w.add(e, frames, appendTok(loc, tok), "enum", "value must be "+oneOfList(want))
		l.want = want
		return
	}
	// Every alternative's discriminator has the wrong JSON type (a part
	// whose type is a number): that member's finding.
	if len(kept) == 0 {
		if l, ok := discTypeLeaf(all); ok {
			w.leaves = append(w.leaves, l)
			return
		}
	}
	// Alternatives that each require members ("supportedInterfaces or
	// url"): one finding about the object, naming them; when every one
	// misses the same discriminator (a part without its type), the finding
	// is that member's, as when it has the wrong JSON type.
	if missing, ok := onlyMissing(all, loc); ok {
		if tok, ok := missingDiscriminator(all, loc); ok {
			w.leaves = append(w.leaves, leaf{loc: appendTok(loc, tok), keyword: "required", msg: "required member is missing", frames: frames,
				directLoc: jsonv.Pointer(loc...), directField: tok})
			return
		}
		l := leaf{loc: loc, keyword: "required", frames: frames, directLoc: jsonv.Pointer(loc...),
			msg: "one of the members " + strings.Join(missing, ", ") + " is required"}
		w.leaves = append(w.leaves, l)
		return
	}
	var names []string
	for _, b := range all {
		names = append(names, b.name)
	}
	w.add(e, frames, loc, keyword, "value matches none of the alternatives: "+strings.Join(names, ", "))
}

// discTypeLeaf reports whether every branch found its discriminator of
// the wrong JSON type, and returns the first such finding.
func discTypeLeaf(all []*branch) (leaf, bool) {
	if len(all) == 0 {
		return leaf{}, false
	}
	for _, b := range all {
		if b.discType == nil || !slices.Equal(b.discType.loc, all[0].discType.loc) {
			return leaf{}, false
		}
	}
	return *all[0].discType, true
}

// onlyMissing reports whether every branch failed only for want of members
// of the object at loc, and names them.
func onlyMissing(all []*branch, loc []string) ([]string, bool) {
	var missing []string
	for _, b := range all {
		if len(b.leaves) == 0 {
			return nil, false
		}
		for _, l := range b.leaves {
			if l.keyword != "required" || len(l.loc) != len(loc)+1 || !slices.Equal(l.loc[:len(loc)], loc) {
				return nil, false
			}
			missing = append(missing, l.loc[len(loc)])
		}
	}
	return missing, len(missing) > 0
}

// missingDiscriminator reports whether every branch misses the same
// discriminator member ("type" or "object") of the object at loc, and
// names it.
func missingDiscriminator(all []*branch, loc []string) (string, bool) {
	for _, tok := range []string{"type", "object"} {
		every := len(all) > 0
		for _, b := range all {
			if !slices.ContainsFunc(b.leaves, func(l leaf) bool {
				return l.keyword == "required" && len(l.loc) == len(loc)+1 && slices.Equal(l.loc[:len(loc)], loc) && l.loc[len(loc)] == tok
			}) {
				every = false
				break
			}
		}
		if every {
			return tok, true
		}
	}
	return "", false
}

// branch is one alternative of a failed anyOf or oneOf.
type branch struct {
	name     string
	leaves   []leaf
	excluded bool
	disc     []any  // the discriminator values the branch wants
	discTok  string // the discriminator member: "type" or "object"
	discType *leaf  // the discriminator member has the wrong JSON type
}

func sameDiscriminator(bs []*branch) bool {
	for _, b := range bs {
		if b.discTok != bs[0].discTok {
			return false
		}
	}
	return true
}

// branchName names an alternative for messages: its component, or its type.
func branchName(c *jsonschema.ValidationError, i int) string {
	switch k := c.ErrorKind.(type) {
	case *kind.Reference:
		if n := rootName(k.URL); n != "" {
			return n
		}
	case *kind.Type:
		return strings.Join(k.Want, " or ")
	}
	return "#" + strconv.Itoa(i)
}

// pushFrame adds to frames the component (or other schema resource, such
// as the receipt schema) that e enters: the target of a failed $ref, or the
// schema e is at when that is a component's root. The validator collapses
// single-error groups, so a component is seen through the $ref that led
// into it rather than through a node of its own.
func pushFrame(frames []frame, e *jsonschema.ValidationError) []frame {
	name := rootName(e.SchemaURL)
	if r, ok := e.ErrorKind.(*kind.Reference); ok {
		name = rootName(r.URL)
	}
	if name == "" {
		return frames
	}
	f := frame{name: name, loc: jsonv.Pointer(e.InstanceLocation...)}
	if n := len(frames); n > 0 && frames[n-1] == f {
		return frames
	}
	return append(frames[:len(frames):len(frames)], f)
}

// rootName names the schema at u if u is a component's root
// (docURL#/components/schemas/X) or another resource's root; "" otherwise.
func rootName(u string) string {
	base, frag, _ := strings.Cut(u, "#")
	if base != docURL {
		if frag == "" || frag == "/" {
			return base[strings.LastIndexByte(base, '/')+1:]
		}
		return ""
	}
	rest, ok := strings.CutPrefix(frag, "/components/schemas/")
	if !ok || strings.Contains(rest, "/") {
		return ""
	}
	return normName(unescapeTok(rest))
}

// normName maps the Nested variants of patch P5 to the resource they vary.
func normName(n string) string {
	if n == "NestedEnvelope" {
		return "ResourceEnvelope"
	}
	return strings.TrimPrefix(n, "Nested")
}

func unescapeTok(t string) string {
	if u, err := url.PathUnescape(t); err == nil {
		t = u
	}
	return jsonv.Untoken(t)
}

// --- small helpers ---------------------------------------------------------------

func finish(vs []Violation) []Violation {
	if len(vs) == 0 {
		return nil
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		if a.Message != b.Message {
			return a.Message < b.Message
		}
		if a.Req != b.Req {
			return a.Req < b.Req
		}
		return a.Value < b.Value
	})
	out := vs[:1]
	for _, v := range vs[1:] {
		if !sameViolation(v, out[len(out)-1]) {
			out = append(out, v)
		}
	}
	if n := len(out); n > maxViolations {
		last := out[maxViolations-1]
		out = append(out[:maxViolations-1:maxViolations-1], Violation{Kind: last.Kind, Op: last.Op, OperationID: last.OperationID,
			Message: fmt.Sprintf("%d more violations not listed", n-maxViolations+1)})
	}
	return out
}

// sameViolation reports whether two violations say the same thing.
func sameViolation(a, b Violation) bool {
	return a.Kind == b.Kind && a.Op == b.Op && a.OperationID == b.OperationID && a.Pointer == b.Pointer &&
		a.Value == b.Value && a.Message == b.Message && a.Req == b.Req && a.UndeclaredSuccess == b.UndeclaredSuccess &&
		a.Keyword == b.Keyword && jsonValue(a.Want) == jsonValue(b.Want)
}

func pickMedia(content map[string]*media, ct string) *media {
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		if m, ok := content[strings.ToLower(mt)]; ok {
			return m
		}
		if isJSON(mt) {
			for _, m := range sortedMedia(content) {
				if m.json {
					return m
				}
			}
		}
	}
	return nil
}

func sortedMedia(content map[string]*media) []*media {
	out := make([]*media, 0, len(content))
	for _, m := range content {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].typ < out[j].typ })
	return out
}

func mediaList(content map[string]*media) string {
	var names []string
	for _, m := range sortedMedia(content) {
		names = append(names, m.typ)
	}
	return strings.Join(names, ", ")
}

func cutQuery(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}

func appendTok(loc []string, t string) []string {
	return append(loc[:len(loc):len(loc)], t)
}

func valueAt(v any, loc []string) (any, bool) {
	for _, t := range loc {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[t]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// jsonValue renders a value as JSON, at most maxValueBytes long.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return bound(fmt.Sprint(v), maxValueBytes)
	}
	return bound(string(b), maxValueBytes)
}

// oneOfList renders enum values: `"A"` or `one of "A", "B", …`.
func oneOfList(want []any) string {
	if len(want) == 1 {
		return jsonValue(want[0])
	}
	var b strings.Builder
	b.WriteString("one of ")
	for i, w := range want {
		s := jsonValue(w)
		if i > 0 {
			if b.Len()+len(s) > 160 {
				b.WriteString(", …")
				break
			}
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "array", "object", "integer":
		return "an " + t
	}
	return "a " + t
}

func intList(is []int) string {
	s := make([]string, len(is))
	for i, n := range is {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
