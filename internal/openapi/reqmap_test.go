package openapi

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
)

func TestRequirementRulesNameRealThings(t *testing.T) {
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := mustDoc(t)
	seen := map[ruleKey]bool{}
	for _, r := range RequirementRules() {
		if _, ok := reg.Lookup(r.Req); !ok {
			t.Errorf("rule %+v: %s is not in the requirement registry", r, r.Req)
		}
		k := ruleKey{r.Schema, r.Field, r.Keyword}
		if seen[k] {
			t.Errorf("rule %+v: a second rule for the same schema, field and keyword", r)
		}
		seen[k] = true
		switch {
		case strings.HasPrefix(r.Schema, "op:"):
			if _, ok := d.Operation(strings.TrimPrefix(r.Schema, "op:")); !ok {
				t.Errorf("rule %+v: no operation %s", r, r.Schema)
			}
		case r.Schema == receiptSchemaFile:
		default:
			if _, err := schemaAt(d.root, r.Schema); err != nil {
				t.Errorf("rule %+v: %v", r, err)
			}
		}
	}
}

// Every operation of the protocol's surface has a requirement for a status
// it does not declare and for a body that is not JSON, and every error maps
// to the error envelope's.
func TestEveryProtocolOperationIsMapped(t *testing.T) {
	d := mustDoc(t)
	unmapped := map[string]bool{ // no registry requirement names these operations
		"closeSession": true, "updateSession": true, "appendTaskMessage": true,
		"streamEvents": true, "downloadArtifactContent": true,
	}
	for _, o := range d.Operations() {
		if got := opReq(o.ID, 500); got != "CORE-ERR-002" {
			t.Errorf("%s: an error maps to %q, want CORE-ERR-002", o.ID, got)
		}
		got := opReq(o.ID, 200)
		switch {
		case o.LocalServer && got != "EXT-LOCAL-001" && got != "EXT-HOST-001":
			t.Errorf("%s: a local-server route maps to %q, want EXT-LOCAL-001 (EXT-HOST-001 for permission requests)", o.ID, got)
		case !o.LocalServer && !unmapped[o.ID] && got == "":
			t.Errorf("%s: no requirement for its statuses (add an op: rule or list it as unmapped)", o.ID)
		case unmapped[o.ID] && got != "":
			t.Errorf("%s is listed as unmapped but maps to %s", o.ID, got)
		}
	}
}

func TestResolveOrder(t *testing.T) {
	for _, tc := range []struct {
		name          string
		frames        []frame
		loc, field    string
		keyword, opID string
		status        int
		want          string
	}{
		{"innermost schema wins", []frame{{"Task", ""}, {"TaskStatus", ""}}, "", "status", "enum", "getTask", 200, "CORE-READ-004"},
		{"field rule beats inner schema", []frame{{"HarnAgentCard", ""}, {"A2aAgentCard", "/a2a_card"}}, "", "a2a_card", "type", "getAgentCard", 200, "CORE-CARD-001"},
		{"field rule is direct only", []frame{{"HarnAgentCard", ""}, {"A2aAgentCard", "/a2a_card"}}, "/a2a_card", "name", "required", "getAgentCard", 200, "CORE-CARD-002"},
		{"keyword rule", []frame{{"Message", "/input"}, {"Part", "/input/parts/0"}, {"PartVisibility", "/input/parts/0/visibility"}}, "/input/parts/0", "visibility", "enum", "", 200, "CORE-READ-009"},
		{"keyword rule does not catch other keywords", []frame{{"Message", ""}, {"Part", "/parts/0"}, {"TextPart", "/parts/0"}, {"PartVisibility", "/parts/0/visibility"}}, "/parts/0", "visibility", "type", "", 200, "CORE-READ-006"},
		{"envelope of a core resource", []frame{{"Outcome", ""}, {"ResourceEnvelope", ""}}, "", "id", "required", "getOutcome", 200, "CORE-READ-001"},
		{"envelope timestamp format is the timestamp's", []frame{{"Outcome", ""}, {"ResourceEnvelope", ""}, {"Timestamp", "/created_at"}}, "", "created_at", "format", "", 200, "CORE-READ-002"},
		{"nested variant shares the rules", []frame{{"Outcome", ""}, {"Message", "/messages/0"}}, "/messages/0", "role", "enum", "", 200, "CORE-READ-009"},
		{"operation fallback", nil, "", "", "", "submitTask", 200, "CORE-TASK-002"},
		{"error fallback", nil, "", "", "", "submitTask", 404, "CORE-ERR-002"},
		{"local-server route", nil, "", "", "", "getHealth", 200, "EXT-LOCAL-001"},
		{"nothing", nil, "", "", "", "", 200, ""},
	} {
		if got := resolveReq(tc.frames, tc.loc, tc.field, tc.keyword, tc.opID, tc.status); got != tc.want {
			t.Errorf("%s: resolveReq = %q, want %q", tc.name, got, tc.want)
		}
	}
}
