package openharness

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openharnessdoc "github.com/harn-conform/conform/fixtures/openharness"
	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/jsonv"
)

func TestNormativeSchemaCompiles(t *testing.T) {
	for _, d := range []string{defRequest, defResponse, defDirective} {
		if s, err := normative(d); err != nil || s == nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// goldenExamples are the upstream golden examples, decoded, by path.
func goldenExamples(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	err := fs.WalkDir(openharnessdoc.Examples, "examples", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := openharnessdoc.Examples.ReadFile(p)
		if err != nil {
			return err
		}
		doc, err := Decode(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		out[p] = doc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 7 {
		t.Fatalf("%d golden examples, want 7", len(out))
	}
	return out
}

// The upstream golden examples are valid by the normative schema, by
// conform's schemas and by every rule conform checks: not even a warning.
func TestGoldenExamplesValidate(t *testing.T) {
	for p, doc := range goldenExamples(t) {
		k, err := KindOf(doc)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if r := Validate(doc, k); !r.Valid || len(r.Findings) > 0 {
			t.Errorf("%s: valid %v, findings %+v; want valid with none", p, r.Valid, r.Findings)
		}
		def := map[Kind]string{Request: defRequest, Response: defResponse}[k]
		if ps, err := normativeProblems(def, doc); err != nil || len(ps) > 0 {
			t.Errorf("%s: the normative schema finds %v (%v)", p, ps, err)
		}
	}
}

// The value lists OH-DIR-002 checks are the normative schema's enums.
func TestDirectiveValuesAreTheSchemas(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(openharnessdoc.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	for _, dv := range directiveValues {
		if got := doc.Defs[defDirective].Properties[dv.member].Enum; !slices.Equal(got, dv.values) {
			t.Errorf("%s: conform checks %v, the normative schema's enum is %v", dv.member, dv.values, got)
		}
	}
}

// alteration is one change to a golden example: a message the normative
// schema and conform must judge alike.
type alteration struct {
	name string
	base string // a golden example's path under examples/
	f    func(m map[string]any)
}

func dirOf(m map[string]any) map[string]any {
	return Directives(m)[0].(map[string]any)
}

func ctxOf(m map[string]any) map[string]any { return obj(obj(m, "request"), "context") }

// alterations are altered golden messages (the kind of corpus issue 22
// measured the readings on): unknown values, wrong types, missing members,
// unknown members in every object.
var alterations = []alteration{
	{"priority unknown", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["priority"] = "urgent" }},
	{"execution unknown", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["execution"] = "eventually" }},
	{"risk_tier unknown", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["risk_tier"] = "extreme" }},
	{"risk_tier a number", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["risk_tier"] = json.Number("2") }},
	{"top-level extensions a string", "examples/minimal/response.json", func(m map[string]any) { m["extensions"] = "x" }},
	{"top-level extensions a string (request)", "examples/minimal/request.json", func(m map[string]any) { m["extensions"] = "x" }},
	{"request.extensions a string", "examples/minimal/request.json", func(m map[string]any) { obj(m, "request")["extensions"] = "x" }},
	{"context.extensions a string", "examples/minimal/request.json", func(m map[string]any) { ctxOf(m)["extensions"] = "x" }},
	{"directive extensions a string", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["extensions"] = "x" }},
	{"unknown member everywhere", "examples/im-cli/request.json", func(m map[string]any) {
		m["x_new"] = 1
		obj(m, "request")["x_new"] = true
		ctxOf(m)["x_new"] = []any{}
		obj(ctxOf(m), "shell")["x_new"] = "s"
		obj(ctxOf(m), "continuation")["x_new"] = nil
	}},
	{"unknown member in a directive", "examples/im-cli/response-success.json", func(m map[string]any) { dirOf(m)["x_new"] = 1 }},
	{"no protocol_version", "examples/minimal/response.json", func(m map[string]any) { delete(m, "protocol_version") }},
	{"protocol_version not semver", "examples/minimal/response.json", func(m map[string]any) { m["protocol_version"] = "v1" }},
	{"protocol_version a number", "examples/minimal/request.json", func(m map[string]any) { m["protocol_version"] = json.Number("1") }},
	{"protocol_version with an empty pre-release", "examples/minimal/response.json", func(m map[string]any) { m["protocol_version"] = "1.0.0-" }},
	{"protocol_version with a leading zero", "examples/minimal/response.json", func(m map[string]any) { m["protocol_version"] = "01.0.0" }},
	{"no response", "examples/minimal/response.json", func(m map[string]any) { delete(m, "response") }},
	{"no request", "examples/minimal/request.json", func(m map[string]any) { delete(m, "request") }},
	{"status ok", "examples/minimal/response.json", func(m map[string]any) { obj(m, "response")["status"] = "ok" }},
	{"no status", "examples/minimal/response.json", func(m map[string]any) { delete(obj(m, "response"), "status") }},
	{"latency a string", "examples/im-cli/response-success.json", func(m map[string]any) { obj(m, "response")["engine_latency_ms"] = "95ms" }},
	{"latency negative", "examples/im-cli/response-success.json", func(m map[string]any) { obj(m, "response")["engine_latency_ms"] = json.Number("-1") }},
	{"request_id empty", "examples/minimal/response.json", func(m map[string]any) { m["request_id"] = "" }},
	{"request_id a number", "examples/minimal/request.json", func(m map[string]any) { m["request_id"] = json.Number("7") }},
	{"correlation_id empty", "examples/im-cli/request.json", func(m map[string]any) { m["correlation_id"] = "" }},
	{"supported version not semver", "examples/minimal/response.json", func(m map[string]any) { m["supported_protocol_versions"] = []any{"v1"} }},
	{"denial without capability", "examples/im-cli/response-capability-denials.json", func(m map[string]any) {
		delete(m["capability_denials"].([]any)[0].(map[string]any), "capability")
	}},
	{"directive without action_type", "examples/minimal/response.json", func(m map[string]any) { delete(dirOf(m), "action_type") }},
	{"action_type empty", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["action_type"] = "" }},
	{"approval a string", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["requires_user_approval"] = "yes" }},
	{"deadline a fraction", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["deadline_ms"] = json.Number("1.5") }},
	{"deadline negative", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["deadline_ms"] = json.Number("-5") }},
	{"payload a string", "examples/minimal/response.json", func(m map[string]any) { dirOf(m)["payload"] = "text" }},
	{"error without code", "examples/minimal/response-error.json", func(m map[string]any) { delete(obj(obj(m, "response"), "error"), "code") }},
	{"error code empty", "examples/minimal/response-error.json", func(m map[string]any) { obj(obj(m, "response"), "error")["code"] = "" }},
	{"retryable a string", "examples/minimal/response-error.json", func(m map[string]any) { obj(obj(m, "response"), "error")["retryable"] = "no" }},
	{"details a string", "examples/minimal/response-error.json", func(m map[string]any) { obj(obj(m, "response"), "error")["details"] = "x" }},
	{"privacy_tier unknown", "examples/im-cli/request.json", func(m map[string]any) { obj(ctxOf(m), "environment_state")["privacy_tier"] = "private" }},
	{"attachments an object", "examples/im-cli/request.json", func(m map[string]any) { ctxOf(m)["attachments"] = map[string]any{} }},
	{"size_bytes negative", "examples/im-cli/request.json", func(m map[string]any) {
		ctxOf(m)["attachments"].([]any)[0].(map[string]any)["size_bytes"] = json.Number("-1")
	}},
	{"user_intent an object", "examples/minimal/request.json", func(m map[string]any) { ctxOf(m)["user_intent"] = map[string]any{"intent": "x"} }},
	{"shell_kind empty", "examples/im-cli/request.json", func(m map[string]any) { obj(ctxOf(m), "shell")["shell_kind"] = "" }},
	{"task_hint member a number", "examples/im-cli/request.json", func(m map[string]any) { obj(ctxOf(m), "task_hint")["sop_id"] = json.Number("3") }},
	{"capabilities an array", "examples/im-cli/request.json", func(m map[string]any) { m["capabilities"] = []any{} }},
	{"capability value a number", "examples/im-cli/request.json", func(m map[string]any) { obj(m, "capabilities")["openharness.ui.rich_cards"] = json.Number("2") }},
}

// proseOnly are the rules conform checks beyond the normative schema, by
// requirement: a message may be invalid by one of them and valid by the
// schema (docs/interpretations.md#oh-normative-schema).
var proseOnly = map[string]bool{
	"OH-VER-001": true, // SemVer 2.0.0's own pattern: no leading zeros (the schema's pattern allows them)
	"OH-ATT-002": true, // large binary blobs in the body
}

// conform and the normative schema agree: every message the schema
// refuses, conform refuses; every message conform refuses and the schema
// accepts breaks a rule the schema has no place for (proseOnly). The
// messages are the corpus, the golden examples and their alterations.
func TestAgreesWithNormativeSchema(t *testing.T) {
	type msg struct {
		name string
		kind Kind
		doc  map[string]any
	}
	var msgs []msg
	golden := goldenExamples(t)
	for p, doc := range golden {
		k, _ := KindOf(doc)
		msgs = append(msgs, msg{p, k, doc})
	}
	for _, a := range alterations {
		doc := jsonv.Copy(golden[a.base]).(map[string]any)
		k, _ := KindOf(golden[a.base])
		a.f(doc)
		msgs = append(msgs, msg{a.name, k, doc})
	}
	for _, dir := range []string{"valid", "invalid", "warn"} {
		for path, k := range corpusFiles(t, dir) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if doc, err := Decode(b); err == nil {
				msgs = append(msgs, msg{filepath.Base(path), k, doc})
			}
		}
	}
	disagreed := 0
	for _, m := range msgs {
		// The schema as published, none of its findings routed elsewhere.
		s, err := normative(map[Kind]string{Request: defRequest, Response: defResponse}[m.kind])
		if err != nil {
			t.Fatal(err)
		}
		ps := schemas.Problems(s, m.doc)
		r := Validate(m.doc, m.kind)
		switch {
		case len(ps) > 0 && r.Valid:
			disagreed++
			t.Errorf("%s: the normative schema refuses it (%v), conform finds it valid (%+v)", m.name, ps, r.Findings)
		case len(ps) == 0 && !r.Valid:
			for _, f := range r.Findings {
				if f.Severity == SeverityError && !proseOnly[f.Req] {
					disagreed++
					t.Errorf("%s: the normative schema accepts it, conform refuses it under %s, a rule the schema also states: %s", m.name, f.Req, f.Message)
				}
			}
		}
	}
	if len(msgs) < 37+7 {
		t.Errorf("only %d messages compared", len(msgs))
	}
	t.Logf("%d messages compared, %d disagreements", len(msgs), disagreed)
}
