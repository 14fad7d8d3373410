package openharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/jsonv"
)

// Schema file names (fixtures/schemas).
const (
	RequestSchema   = "openharness-request.v1.schema.json"
	ResponseSchema  = "openharness-response.v1.schema.json"
	DirectiveSchema = "openharness-directive.v1.schema.json"
)

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// schema returns a compiled schema; its error is a defect of the build
// (fixtures/schemas tests keep every schema compiling).
func schema(name string) (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		compiled = map[string]*jsonschema.Schema{}
		for _, n := range []string{RequestSchema, ResponseSchema, DirectiveSchema} {
			s, err := schemas.Compile(n)
			if err != nil {
				compileErr = fmt.Errorf("schema %s: %w", n, err)
				return
			}
			compiled[n] = s
		}
	})
	if compileErr != nil {
		return nil, compileErr
	}
	return compiled[name], nil
}

// SchemaProblems validates a decoded message (Decode's numbers) against
// the named schema and returns its findings, sorted.
func SchemaProblems(name string, doc any) ([]schemas.Problem, error) {
	s, err := schema(name)
	if err != nil {
		return nil, err
	}
	return schemas.Problems(s, doc), nil
}

// problemsError joins schema findings into one error (nil for none).
func problemsError(what string, ps []schemas.Problem) error {
	if len(ps) == 0 {
		return nil
	}
	var parts []string
	for i, p := range ps {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-8))
			break
		}
		parts = append(parts, p.String())
	}
	return fmt.Errorf("%s does not match its schema: %s", what, strings.Join(parts, "; "))
}

// CheckResponseSchema is OH-RESP-001: the response envelope matches the
// normative schema's responseMessage and openharness-response.v1.schema.json
// (a directive's priority, execution and risk_tier are OH-DIR-002's).
func CheckResponseSchema(doc map[string]any) error {
	ps, err := bothSchemas(ResponseSchema, defResponse, doc)
	if err != nil {
		return err
	}
	return problemsError("the response envelope", withoutDirectiveValues(ps))
}

// CheckRequestSchema is the request side of the same (offline).
func CheckRequestSchema(doc map[string]any) error {
	ps, err := bothSchemas(RequestSchema, defRequest, doc)
	if err != nil {
		return err
	}
	return problemsError("the request envelope", ps)
}

// CheckVersion is OH-VER-001: protocol_version is present and a semantic
// version.
func CheckVersion(doc map[string]any) error {
	v, ok := doc["protocol_version"]
	if !ok {
		return errors.New("protocol_version is missing")
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("protocol_version is a JSON %s, want a semantic version string", jsonv.Kind(v))
	}
	if !IsSemver(s) {
		return fmt.Errorf("protocol_version %q is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)", s)
	}
	return nil
}

// Directives returns response.action_directives' items (nil when absent
// or not an array).
func Directives(doc map[string]any) []any {
	ds, _ := obj(doc, "response")["action_directives"].([]any)
	return ds
}

// CheckDirectives is OH-DIR-001: every action directive matches the
// normative schema's actionDirective and
// openharness-directive.v1.schema.json (its priority, execution and
// risk_tier values are OH-DIR-002's).
func CheckDirectives(doc map[string]any) error {
	var errs []string
	for i, d := range Directives(doc) {
		ps, err := bothSchemas(DirectiveSchema, defDirective, d)
		if err != nil {
			return err
		}
		if e := problemsError(fmt.Sprintf("response.action_directives[%d]", i), withoutDirectiveValues(ps)); e != nil {
			errs = append(errs, e.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// The values §10 lists for priority, execution and risk_tier, which the
// normative schema closes (docs/interpretations.md#oh-directive-values;
// TestDirectiveValuesAreTheSchemas keeps them equal to its enums).
var directiveValues = []struct {
	member string
	values []string
}{
	{"priority", []string{"low", "normal", "high", "critical"}},
	{"execution", []string{"sequential", "parallel"}},
	{"risk_tier", []string{"safe", "caution", "dangerous"}},
}

// CheckDirectiveValues is OH-DIR-002: priority, execution and risk_tier,
// when present, take one of the values the document lists.
func CheckDirectiveValues(doc map[string]any) error {
	var errs []string
	for i, d := range Directives(doc) {
		m, _ := d.(map[string]any)
		for _, dv := range directiveValues {
			v, ok := m[dv.member]
			if !ok {
				continue
			}
			if s, isStr := v.(string); !isStr || !slices.Contains(dv.values, s) {
				errs = append(errs, fmt.Sprintf("action_directives[%d].%s is %s, want one of %s", i, dv.member, show(v), strings.Join(dv.values, ", ")))
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// CheckEcho is OH-ID-001 and OH-ID-003: field (request_id or
// correlation_id) of the response, when present, equals the request's.
// missing reports a response without the field although the request had
// it (OH-ID-002, OH-ID-004: a SHOULD).
func CheckEcho(field string, request, doc map[string]any) (missing bool, err error) {
	sent, had := request[field]
	got, has := doc[field]
	switch {
	case !has:
		return had, nil
	case !had:
		// An echo of nothing: the document does not say what a response
		// to a request without the field carries, so anything goes.
		return false, nil
	case !jsonEqual(sent, got):
		return false, fmt.Errorf("response %s is %s, want the request's %s echoed", field, show(got), show(sent))
	}
	return false, nil
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "…"
	}
	return string(b)
}

// Blob sizes (docs/openharness.md, "Large binary blobs"): a data: URI
// whose base64 payload is at least DataURIBlob characters, or a string of
// at least PlainBlob characters entirely in the base64 alphabets, is a
// large binary blob embedded in the body.
const (
	DataURIBlob = 1 << 10
	PlainBlob   = 16 << 10
)

var dataURI = regexp.MustCompile(`(?i)^data:[^,]*;base64,`)

// CheckNoBlobs is OH-ATT-002: no string in the message is a large binary
// blob. It names the first few it finds by JSON pointer.
func CheckNoBlobs(doc any) error {
	var found []string
	walk(doc, "", func(ptr string, s string) {
		if isBlob(s) {
			found = append(found, fmt.Sprintf("%s (%d characters)", ptrOr(ptr), len(s)))
		}
	})
	if len(found) > 0 {
		return fmt.Errorf("large binary blobs embedded in the body instead of references: %s", strings.Join(limit(found, 5), ", "))
	}
	return nil
}

func isBlob(s string) bool {
	if loc := dataURI.FindStringIndex(s); loc != nil {
		return len(s)-loc[1] >= DataURIBlob
	}
	if len(s) < PlainBlob {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_' || c == '\n' || c == '\r') {
			return false
		}
	}
	return true
}

// walk calls f for every string value in v with its JSON pointer.
func walk(v any, ptr string, f func(ptr, s string)) {
	switch x := v.(type) {
	case string:
		f(ptr, x)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			walk(x[k], ptr+"/"+jsonv.Token(k), f)
		}
	case []any:
		for i, e := range x {
			walk(e, fmt.Sprintf("%s/%d", ptr, i), f)
		}
	}
}

func ptrOr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func limit(ss []string, n int) []string {
	if len(ss) > n {
		return append(ss[:n:n], fmt.Sprintf("and %d more", len(ss)-n))
	}
	return ss
}

// The members v1 defines, per object of a response (§5, §5.3, §10, §13,
// §14); anything else is a vendor member (OH-EXT-002).
var (
	responseTop = set("protocol_version", "request_id", "correlation_id", "supported_protocol_versions",
		"supported_capabilities", "capability_denials", "response", "extensions")
	responseBody     = set("status", "error", "engine_latency_ms", "action_directives", "extensions")
	errorMembers     = set("code", "message", "retryable", "details")
	denialMembers    = set("capability", "code", "message")
	directiveMembers = set("action_type", "priority", "execution", "risk_tier", "requires_user_approval",
		"deadline_ms", "payload", "extensions")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// CheckVendorMembers is OH-EXT-002: a response puts vendor members only
// under extensions, never beside the members v1 defines. Type-specific
// payloads and details are the implementation's own and not looked into.
func CheckVendorMembers(doc map[string]any) error {
	var extra []string
	add := func(prefix string, m map[string]any, known map[string]bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !known[k] {
				extra = append(extra, prefix+"/"+jsonv.Token(k))
			}
		}
	}
	add("", doc, responseTop)
	body := obj(doc, "response")
	add("/response", body, responseBody)
	add("/response/error", obj(body, "error"), errorMembers)
	if ds, ok := doc["capability_denials"].([]any); ok {
		for i, d := range ds {
			m, _ := d.(map[string]any)
			add(fmt.Sprintf("/capability_denials/%d", i), m, denialMembers)
		}
	}
	for i, d := range Directives(doc) {
		m, _ := d.(map[string]any)
		add(fmt.Sprintf("/response/action_directives/%d", i), m, directiveMembers)
	}
	if len(extra) > 0 {
		return fmt.Errorf("members outside v1 and outside extensions: %s (vendor extensions belong under an extensions object)", strings.Join(limit(extra, 6), ", "))
	}
	return nil
}

// reverseDNS is a dotted name of at least two labels (com.example,
// com.example.feature).
var reverseDNS = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?)+$`)

// ExtensionKeyOK reports whether an extensions key has a reverse-DNS or a
// URI prefix (§4).
func ExtensionKeyOK(k string) bool {
	if reverseDNS.MatchString(k) {
		return true
	}
	u, err := url.Parse(k)
	return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "")
}

// CheckExtensionKeys is OH-EXT-003: the keys of every extensions object in
// the message have reverse-DNS or URI prefixes.
func CheckExtensionKeys(doc any) error {
	var bad []string
	var visit func(v any, ptr string)
	visit = func(v any, ptr string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				p := ptr + "/" + jsonv.Token(k)
				if ext, ok := x[k].(map[string]any); ok && k == "extensions" {
					for _, ek := range slices.Sorted(maps.Keys(ext)) {
						if !ExtensionKeyOK(ek) {
							bad = append(bad, fmt.Sprintf("%s/%s", p, jsonv.Token(ek)))
						}
					}
				}
				if k == "payload" || k == "details" {
					continue // type-specific data: its keys are not extensions
				}
				visit(x[k], p)
			}
		case []any:
			for i, e := range x {
				visit(e, fmt.Sprintf("%s/%d", ptr, i))
			}
		}
	}
	visit(doc, "")
	if len(bad) > 0 {
		return fmt.Errorf("extension keys without a reverse-DNS or URI prefix: %s", strings.Join(limit(bad, 6), ", "))
	}
	return nil
}

// Denials returns capability_denials' items (nil when absent or not an
// array).
func Denials(doc map[string]any) []map[string]any {
	ds, _ := doc["capability_denials"].([]any)
	var out []map[string]any
	for _, d := range ds {
		if m, ok := d.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// CheckDenialsAsked is OH-CAP-002: every denial names a capability the
// request asked for (a key of its capabilities).
func CheckDenialsAsked(request, doc map[string]any) error {
	asked := obj(request, "capabilities")
	var bad []string
	for _, d := range Denials(doc) {
		c, ok := d["capability"].(string)
		if !ok {
			continue // the schema's finding (OH-RESP-001)
		}
		if _, ok := asked[c]; !ok {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("capability_denials names %s, which the request did not ask for (it asked for %s)", quoteList(bad, 5), quoteList(slices.Sorted(maps.Keys(asked)), 8))
	}
	return nil
}

// CheckDenialCodes is OH-CAP-003: every denial carries a code.
func CheckDenialCodes(doc map[string]any) error {
	var bad []string
	for i, d := range Denials(doc) {
		if c, ok := d["code"].(string); !ok || c == "" {
			bad = append(bad, fmt.Sprintf("capability_denials[%d]", i))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s without a code (recommended: not_supported, disabled_by_policy …)", strings.Join(bad, ", "))
	}
	return nil
}

// CheckDenialConflicts is OH-CAP-004: no capability both offered and
// denied.
func CheckDenialConflicts(doc map[string]any) error {
	offered := obj(doc, "supported_capabilities")
	var both []string
	for _, d := range Denials(doc) {
		if c, ok := d["capability"].(string); ok {
			if _, ok := offered[c]; ok {
				both = append(both, c)
			}
		}
	}
	if len(both) > 0 {
		return fmt.Errorf("%s both offered in supported_capabilities and denied in capability_denials", quoteList(both, 5))
	}
	return nil
}

// CheckFailureStatus is OH-ERR-001: a response to a failed request has
// status error.
func CheckFailureStatus(doc map[string]any, why string) error {
	if s := Status(doc); s != "error" {
		return fmt.Errorf("a request that fails (%s) was answered with response.status %s, want error", why, showStatus(doc))
	}
	return nil
}

func showStatus(doc map[string]any) string {
	st, ok := obj(doc, "response")["status"]
	if !ok {
		return "missing"
	}
	return show(st)
}

// CheckErrorPresent is OH-ERR-002: status error comes with an error object.
func CheckErrorPresent(doc map[string]any) error {
	if _, ok := obj(doc, "response")["error"]; Status(doc) == "error" && !ok {
		return errors.New("response.status is error but response.error is missing")
	}
	return nil
}

// CheckErrorCode is OH-ERR-003: an error object carries a non-empty code.
func CheckErrorCode(doc map[string]any) error {
	e, present := obj(doc, "response")["error"]
	if !present {
		return nil
	}
	m, ok := e.(map[string]any)
	if !ok {
		return fmt.Errorf("response.error is a JSON %s, want an object with a code", jsonv.Kind(e))
	}
	c, ok := m["code"].(string)
	if !ok || c == "" {
		return fmt.Errorf("response.error has no code (a non-empty string): got %s", show(m["code"]))
	}
	return nil
}

// CheckNotEchoed is OH-SEC-002 and OH-ERR-004: none of the planted values
// (a token, a piece of PII the request carried) appears in text. what
// names the text; the values themselves are never repeated.
func CheckNotEchoed(text, what string, planted map[string]string) error {
	var hits []string
	for name, v := range planted {
		if v != "" && strings.Contains(text, v) {
			hits = append(hits, name)
		}
	}
	if len(hits) > 0 {
		slices.Sort(hits)
		return fmt.Errorf("%s repeats what the request carried in %s", what, strings.Join(hits, ", "))
	}
	return nil
}
