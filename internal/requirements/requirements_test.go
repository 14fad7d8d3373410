package requirements

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const good = `
- id: CORE-VER-001
  level: core
  keyword: MUST
  source: narrative
  section: Versioning
  anchor: versioning
  summary: Non-public requests without the version header are refused with 426.
  transports: [rest]
  observable: true
- id: CORE-LOG-001
  level: core
  keyword: MUST NOT
  source: narrative
  section: API key
  anchor: api-key
  summary: API keys never appear in server logs.
  transports: [rest]
  observable: false
  reason: server logs are not visible to a client
`

func TestParseValid(t *testing.T) {
	reg, err := Parse(map[string][]byte{"core.yaml": []byte(good)})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	all := reg.All()
	if len(all) != 2 || all[0].ID != "CORE-LOG-001" || all[1].ID != "CORE-VER-001" {
		t.Fatalf("All() = %v, want the two entries sorted by id", all)
	}
	r, ok := reg.Lookup("CORE-VER-001")
	if !ok || r.Link() != "https://harnlang.com/spec/agents-protocol/v1#versioning" {
		t.Errorf("Lookup(CORE-VER-001) = %+v, %v; want link to #versioning", r, ok)
	}
	if !r.Keyword.Mandatory() || Should.Mandatory() {
		t.Error("Mandatory: MUST should be mandatory and SHOULD not")
	}
	if got := reg.ByLevel(Core); len(got) != 2 {
		t.Errorf("ByLevel(core) = %d entries, want 2", len(got))
	}
	if _, ok := reg.Lookup("CORE-VER-999"); ok {
		t.Error("Lookup of an unknown id succeeded")
	}
	raced, err := Parse(map[string][]byte{"core.yaml": []byte(strings.Replace(good, "observable: true", "observable: true\n  kind: concurrency", 1))})
	if err != nil {
		t.Fatalf("Parse with kind: concurrency: %v", err)
	}
	kinds := 0
	for _, r := range raced.All() {
		if r.Kind == KindConcurrency {
			kinds++
		}
	}
	if kinds != 1 {
		t.Errorf("kind: concurrency on one entry: %d entries have it, want 1", kinds)
	}
}

func TestParseRejects(t *testing.T) {
	base := func(mut string) string {
		return strings.Replace(good, "- id: CORE-LOG-001", mut+"\n- id: CORE-LOG-001", 1)
	}
	entry := func(fields string) string {
		return "- id: CORE-X-001\n  level: core\n  keyword: MUST\n  source: narrative\n  section: S\n  anchor: s\n  summary: a long enough summary\n  transports: [rest]\n  observable: true\n" + fields
	}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"duplicate id", good + strings.SplitN(good, "- id: CORE-LOG-001", 2)[0], "duplicate id"},
		{"bad id", base(strings.Replace(entry(""), "CORE-X-001", "CORE-1", 1)), "does not match"},
		{"level prefix", base(strings.Replace(entry(""), "level: core", "level: replay", 1)), "must start with RPLY-"},
		{"keyword", base(strings.Replace(entry(""), "keyword: MUST", "keyword: must", 1)), "keyword"},
		{"transport", base(strings.Replace(entry(""), "[rest]", "[grpc]", 1)), "transport \"grpc\""},
		{"unobservable without reason", base(strings.Replace(entry(""), "observable: true", "observable: false", 1)), "no reason"},
		{"unknown key", base(entry("  colour: red\n")), "colour"},
		{"source", base(strings.Replace(entry(""), "source: narrative", "source: blog", 1)), "source"},
		{"anchor", base(strings.Replace(entry(""), "anchor: s", "anchor: Not An Anchor", 1)), "anchor"},
		{"kind", base(entry("  kind: parallel\n")), "kind \"parallel\""},
	} {
		_, err := Parse(map[string][]byte{"core.yaml": []byte(tc.doc)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse error = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

// The embedded registry is the product: it must load, and each level that
// has entries must be well formed.
func TestDefaultRegistryLoads(t *testing.T) {
	reg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.All() {
		if strings.Contains(r.Summary, "\n\n") {
			t.Errorf("%s: summary has a blank line", r.ID)
		}
	}
}

func TestParseLevel(t *testing.T) {
	if l, err := ParseLevel(" Core "); err != nil || l != Core {
		t.Errorf("ParseLevel(Core) = %q, %v", l, err)
	}
	if _, err := ParseLevel("gold"); err == nil {
		t.Error("ParseLevel(gold) succeeded")
	}
}

// registry.json is the YAML files' conversion: after editing a YAML file,
// run `go generate ./internal/requirements`.
func TestRegistryJSONIsCurrent(t *testing.T) {
	m, err := YAMLFiles()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := reg.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(registryJSON, want) {
		t.Fatal("registry.json is not the YAML files' conversion: run go generate ./internal/requirements")
	}
	got, err := ParseJSON(registryJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.All(), reg.All()) {
		t.Error("the JSON form decodes to other requirements than the YAML")
	}
}

// The JSON form is validated like the YAML: an unknown field or an invalid
// entry is refused.
func TestParseJSONValidates(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": `[{"id":"CORE-X-001","level":"core","keyword":"MUST","source":"narrative","section":"s","anchor":"a","summary":"x","transports":["rest"],"observable":true,"bogus":1}]`,
		"bad id":        `[{"id":"core-x-1","level":"core","keyword":"MUST","source":"narrative","section":"s","anchor":"a","summary":"x","transports":["rest"],"observable":true}]`,
		"not JSON":      `[{`,
	} {
		if _, err := ParseJSON([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
