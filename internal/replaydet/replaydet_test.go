package replaydet

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/jsonv"
)

// fixture returns a fixture receipt (raw), the sources of the fixture's
// source run and the expectation of its request.
func fixture(t *testing.T, mode string) ([]byte, Sources, Expect) {
	t.Helper()
	m, err := replay.Load()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{}
	for _, o := range m.Tapes.Overridden {
		src[o.EventID] = o.Key
	}
	for _, c := range m.Receipts {
		if c.Mode != mode {
			continue
		}
		raw, err := replay.Read(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		req, err := replay.Read(c.Request)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ExpectFrom(req, src)
		if err != nil {
			t.Fatal(err)
		}
		return raw, src, e
	}
	t.Fatalf("no %s receipt", mode)
	return nil, nil, Expect{}
}

func project(t *testing.T, raw []byte, src Sources) *Projection {
	t.Helper()
	p, err := Project(raw, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeDoc(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	v, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func encodeDoc(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := jsonv.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// at returns the container and member name of a JSON pointer in doc.
func at(t *testing.T, doc any, ptr string) (any, string) {
	t.Helper()
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for _, tok := range toks[:len(toks)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(c) {
				t.Fatalf("%s: bad index %s", ptr, tok)
			}
			cur = c[i]
		default:
			t.Fatalf("%s: no container at %s", ptr, tok)
		}
	}
	return cur, toks[len(toks)-1]
}

// set sets (or with del removes) the member at ptr.
func set(t *testing.T, doc any, ptr string, v any, del bool) {
	t.Helper()
	c, last := at(t, doc, ptr)
	switch c := c.(type) {
	case map[string]any:
		if del {
			delete(c, last)
		} else {
			c[last] = v
		}
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i >= len(c) || del {
			t.Fatalf("%s: cannot set", ptr)
		}
		c[i] = v
	default:
		t.Fatalf("%s: not settable", ptr)
	}
}

type edit struct {
	name string
	do   func(t *testing.T, doc map[string]any)
}

func setTo(ptr string, v any) edit {
	return edit{ptr + " changed", func(t *testing.T, doc map[string]any) { set(t, doc, ptr, v, false) }}
}

func remove(ptr string) edit {
	return edit{ptr + " removed", func(t *testing.T, doc map[string]any) { set(t, doc, ptr, nil, true) }}
}

func appendTo(ptr string, v any) edit {
	return edit{ptr + " grew", func(t *testing.T, doc map[string]any) {
		c, last := at(t, doc, ptr)
		m := c.(map[string]any)
		m[last] = append(m[last].([]any), v)
	}}
}

const otherHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// TestProjectionEqualsItself: a receipt's projection equals itself, and a
// projection is the same bytes whatever the receipt's formatting and
// member order.
func TestProjectionEqualsItself(t *testing.T) {
	for _, mode := range []string{"exact", "with_overrides"} {
		raw, src, _ := fixture(t, mode)
		a, b := project(t, raw, src), project(t, encodeDoc(t, decodeDoc(t, raw)), src)
		if m := Compare(Side{"a", a}, Side{"b", b}); m != nil {
			t.Errorf("%s: %v", mode, m)
		}
		if len(a.Findings) != 0 {
			t.Errorf("%s: findings on the fixture: %v", mode, a.Findings)
		}
	}
}

// TestProjectionContent pins the projection of the override receipt.
func TestProjectionContent(t *testing.T) {
	raw, src, _ := fixture(t, "with_overrides")
	p := project(t, raw, src)
	s := string(p.Canonical)
	for _, want := range []string{
		`"schema":"receipt-2026-04-25"`,
		`"subject":{"object":"replay_segment"}`,
		`"lifecycle":{"final_state":"SUCCEEDED"}`,
		`"metadata":{"replay_mode":"with_overrides"}`,
		`"materials":[{"kind":"event_log"},{"id":"host:git:call_0003","kind":"host_fact","metadata":{"override_key":"host:git:call_0003"},"sha256":"sha256:10f7d95e`,
		`"artifact_id":true`,
		`"event_id":{"records":"llm:main:1"}`,
		`"reason":"caller supplied a fixed model response"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("projection lacks %s:\n%s", want, s)
		}
	}
	for _, not := range []string{"rcpt_", "task_conform", "evt_src", "art_replay", "delta_", "2026-04-25T", "harness_conform_reference", "signature", "receipt_hash", "recorded"} {
		if strings.Contains(s, not) {
			t.Errorf("projection holds %q, an implementation-assigned value:\n%s", not, s)
		}
	}
}

// TestProjectedFieldsCount: changing any projected field changes the
// projection, and the comparison names where.
func TestProjectedFieldsCount(t *testing.T) {
	edits := []edit{
		setTo("/schema", "receipt-2027-01-01"),
		setTo("/subject/object", "task"),
		setTo("/lifecycle/final_state", "FAILED"),
		setTo("/lifecycle/failure", map[string]any{"code": "replay_dependency_missing", "message": "x"}),
		setTo("/trust/start_tier", "suggest"),
		setTo("/trust/end_tier", "shadow"),
		setTo("/autonomy_budget/consumed/tool_calls", json.Number("1")),
		setTo("/autonomy_budget/limit", map[string]any{"usd": json.Number("1")}),
		appendTo("/approvals", map[string]any{"action": "tool", "decision": "approved", "actor": "a", "decided_at": "2026-04-25T21:00:00Z"}),
		setTo("/replay_input/determinism", "best_effort"),
		setTo("/replay_input/materials/0/kind", "artifact"),
		setTo("/replay_input/materials/1/kind", "artifact"),
		setTo("/replay_input/materials/1/id", "host:git:other"),
		setTo("/replay_input/materials/2/sha256", otherHash),
		setTo("/replay_input/materials/3/metadata/override_key", "mcp:search:other"),
		remove("/replay_input/materials/4/metadata"),
		{"materials reordered", func(t *testing.T, doc map[string]any) {
			mats := doc["replay_input"].(map[string]any)["materials"].([]any)
			mats[1], mats[2] = mats[2], mats[1]
		}},
		setTo("/cost/total", json.Number("0.01")),
		setTo("/cost/currency", "EUR"),
		appendTo("/side_effects/fs_writes", map[string]any{"path": "out.md", "operation": "create"}),
		appendTo("/side_effects/network_egress", map[string]any{"destination": "example.com", "purpose": "fetch"}),
		appendTo("/side_effects/tool_calls", map[string]any{"tool": "search", "call_id": "call_0002", "status": "succeeded"}),
		appendTo("/side_effects/a2a_handoffs", map[string]any{"target_agent": "b", "task_id": "t", "status": "accepted"}),
		appendTo("/final_artifacts", map[string]any{"artifact_id": "art_1", "kind": "file", "sha256": otherHash}),
		setTo("/deltas/0/operation", "add"),
		setTo("/deltas/0/path", "/replay_input/materials/2"),
		setTo("/deltas/1/override_key", "llm:main:2"),
		setTo("/deltas/1/before_sha256", otherHash),
		setTo("/deltas/2/after_sha256", otherHash),
		setTo("/deltas/3/reason", "harness replay policy"),
		setTo("/deltas/4/event_id", "evt_src_0003"), // an event that recorded another key
		setTo("/deltas/4/event_id", "evt_unknown"),  // an event that recorded nothing
		remove("/deltas/2/artifact_id"),
		remove("/deltas/0/reason"),
		{"a delta dropped", func(t *testing.T, doc map[string]any) {
			doc["deltas"] = doc["deltas"].([]any)[:4]
		}},
		appendTo("/redactions", map[string]any{"field": "/x", "reason": "secret", "proof_hash": otherHash}),
		setTo("/metadata/replay_mode", "exact"),
	}
	raw, src, _ := fixture(t, "with_overrides")
	base := project(t, raw, src)
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			doc := decodeDoc(t, raw)
			if _, ok := doc["approvals"]; !ok {
				doc["approvals"] = []any{}
			}
			baseDoc := project(t, encodeDoc(t, doc), src)
			if m := Compare(Side{"fixture", base}, Side{"with approvals: []", baseDoc}); m != nil {
				t.Fatalf("an empty approvals list must project as an absent one: %v", m)
			}
			e.do(t, doc)
			got := project(t, encodeDoc(t, doc), src)
			m := Compare(Side{"before", baseDoc}, Side{"after", got})
			if m == nil {
				t.Fatalf("the projection did not change:\n%s", got.Canonical)
			}
			if m.Offset >= min(len(baseDoc.Canonical), len(got.Canonical))+1 || (m.Offset < len(got.Canonical) && m.Offset < len(baseDoc.Canonical) && baseDoc.Canonical[m.Offset] == got.Canonical[m.Offset]) {
				t.Errorf("offset %d is not the first differing byte", m.Offset)
			}
			if !bytes.Equal(baseDoc.Canonical[:m.Offset], got.Canonical[:m.Offset]) {
				t.Errorf("bytes before offset %d differ", m.Offset)
			}
			if m.Path == "" {
				t.Errorf("no path for %s", e.name)
			}
			msg := m.Error()
			if !strings.Contains(msg, string(baseDoc.Canonical)) || !strings.Contains(msg, string(got.Canonical)) || !strings.Contains(msg, m.Path) {
				t.Errorf("the finding does not show both canonical byte strings and the path:\n%s", msg)
			}
		})
	}
}

// TestUnprojectedFieldsDoNot: changing what an implementation assigns
// leaves the projection as it was.
func TestUnprojectedFieldsDoNot(t *testing.T) {
	edits := []edit{
		setTo("/receipt_id", "rcpt_other"),
		setTo("/subject/id", "task_other"),
		setTo("/issuer/id", "harness_other"),
		remove("/issuer/public_key_id"),
		setTo("/issued_at", "2027-01-01T00:00:00Z"),
		setTo("/identifiers/task_id", "task_other"),
		setTo("/identifiers/session_id", "sess_other"),
		setTo("/lifecycle/started_at", "2027-01-01T00:00:00Z"),
		setTo("/lifecycle/completed_at", "2027-01-01T00:00:01Z"),
		setTo("/lifecycle/created_at", "2027-01-01T00:00:00Z"),
		setTo("/trust/policy_ref", "policy_1"),
		setTo("/model_route/chosen_model/provider", "other"),
		setTo("/cost/provider_breakdown", []any{map[string]any{"provider": "p", "amount": json.Number("0")}}),
		setTo("/chain/receipt_hash", otherHash),
		setTo("/chain/previous_receipt_hash", otherHash),
		remove("/signatures"),
		setTo("/replay_input/materials/0/id", "evlog_other"),
		setTo("/replay_input/materials/0/uri", "artifact://art_evlog_other"),
		setTo("/replay_input/materials/0/sha256", otherHash),
		setTo("/replay_input/materials/0/content_type", "application/x-harn-tape"),
		setTo("/replay_input/materials/3/uri", "artifact://art_target_1"),
		setTo("/replay_input/materials/3/content_type", "application/json"),
		setTo("/replay_input/materials/1/metadata/note", "extension data"),
		setTo("/replay_input/unavailable_reason", "free text"),
		setTo("/deltas/0/delta_id", "delta_other"),
		setTo("/deltas/2/artifact_id", "art_target_1"),
		setTo("/metadata/source_task_id", "task_other_source"),
		setTo("/metadata/extension", "x"),
		setTo("/approvals", []any{}),
		setTo("/approvals", nil),
		remove("/redactions"),
		setTo("/lifecycle/failure", nil),
	}
	raw, src, _ := fixture(t, "with_overrides")
	// Two events of the source recorded llm:main:1 (a target's message
	// and its tool result, say): naming either is the same.
	src["evt_other_llm"] = "llm:main:1"
	base := project(t, raw, src)
	edits = append(edits, setTo("/deltas/1/event_id", "evt_other_llm"))
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			doc := decodeDoc(t, raw)
			e.do(t, doc)
			if m := Compare(Side{"fixture", base}, Side{"edited", project(t, encodeDoc(t, doc), src)}); m != nil {
				t.Errorf("the projection changed: %v", m)
			}
		})
	}
}

// TestEventMapping: a delta event_id that recorded another key, or none,
// is a finding.
func TestEventMapping(t *testing.T) {
	raw, src, _ := fixture(t, "with_overrides")
	doc := decodeDoc(t, raw)
	set(t, doc, "/deltas/0/event_id", "evt_src_0003", false)
	set(t, doc, "/deltas/1/event_id", "evt_nowhere", false)
	p := project(t, encodeDoc(t, doc), src)
	if len(p.Findings) != 2 || !strings.Contains(p.Findings[0], `recorded "llm:main:1"`) || !strings.Contains(p.Findings[1], "no event of the source task") {
		t.Errorf("findings %q", p.Findings)
	}
}

func TestProjectRefusesNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a":1,"a":2}`, `{"a":1} {}`, "{\"a\":\"\xff\"}"} {
		if _, err := Project([]byte(in), nil); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	big := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), MaxReceiptBytes)...)
	if _, err := Project(append(big, `"}`...), nil); err == nil {
		t.Error("an oversize receipt was read")
	}
}

// TestProjectOddShapes: members of the wrong type are carried into the
// projection, never a panic.
func TestProjectOddShapes(t *testing.T) {
	for _, in := range []string{
		`{"deltas":"x","replay_input":[],"lifecycle":1,"side_effects":null,"approvals":{},"subject":"s"}`,
		`{"deltas":[1,{"event_id":7,"artifact_id":""}],"replay_input":{"materials":{}},"lifecycle":{"failure":"x"}}`,
		`{"replay_input":{"materials":[null,{"kind":"event_log","id":"x"}]},"final_artifacts":[3]}`,
	} {
		p, err := Project([]byte(in), Sources{})
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if q := project(t, []byte(in), Sources{}); Compare(Side{"a", p}, Side{"b", q}) != nil {
			t.Errorf("%s: not stable", in)
		}
	}
}

// TestComparePath: the path and the values of a known difference.
func TestComparePath(t *testing.T) {
	raw, src, _ := fixture(t, "with_overrides")
	doc := decodeDoc(t, raw)
	set(t, doc, "/deltas/2/after_sha256", otherHash, false)
	m := Compare(Side{"fixture", project(t, raw, src)}, Side{"target", project(t, encodeDoc(t, doc), src)})
	if m == nil || m.Path != "/deltas/2/after_sha256" || m.ValueB != `"`+otherHash+`"` || !strings.HasPrefix(m.ValueA, `"sha256:5363d0`) {
		t.Fatalf("got %+v", m)
	}
	doc = decodeDoc(t, raw)
	set(t, doc, "/deltas/2/reason", nil, true)
	m = Compare(Side{"fixture", project(t, raw, src)}, Side{"target", project(t, encodeDoc(t, doc), src)})
	if m == nil || m.Path != "/deltas/2/reason" || m.ValueB != "" || !strings.Contains(m.Error(), "target has nothing (absent)") {
		t.Fatalf("got %+v", m)
	}
}

// TestDeltaChecksPassOnFixtures: both fixture receipts pass every delta
// check against their requests.
func TestDeltaChecksPassOnFixtures(t *testing.T) {
	for _, mode := range []string{"exact", "with_overrides"} {
		raw, _, e := fixture(t, mode)
		doc := decodeDoc(t, raw)
		for name, err := range checkAll(raw, doc, e) {
			if err != nil {
				t.Errorf("%s: %s: %v", mode, name, err)
			}
		}
	}
	raw, _, e := fixture(t, "with_overrides")
	if len(e.Overrides) != 5 || !e.Overrides[3].Secret || e.Reason == "" {
		t.Errorf("expectation %+v", e)
	}
	// An exact replay applies nothing: a delta there stands for nothing.
	exact, _, ee := fixture(t, "exact")
	doc := decodeDoc(t, exact)
	doc["deltas"] = decodeDoc(t, raw)["deltas"]
	if DeltaPerOverride(doc, ee) == nil {
		t.Error("deltas in an exact replay's receipt passed RPLY-DELTA-001")
	}
}

var secrets = map[string]string{"the recorded secret": replay.SecretRecorded, "the override secret": replay.SecretOverride}

func checkAll(raw []byte, doc map[string]any, e Expect) map[string]error {
	return map[string]error{
		"RPLY-DELTA-001": DeltaPerOverride(doc, e),
		"RPLY-DELTA-002": DeltaNames(doc, e),
		"RPLY-DELTA-003": DeltaHashes(doc, e),
		"RPLY-DELTA-004": DeltaReasons(doc, e),
		"RPLY-DELTA-005": NoSecrets(raw, doc, e, secrets),
	}
}

// TestDeltaChecksOneEach: each broken receipt (the reference Harness's
// replay faults, and more) fails exactly the check it breaks; reordering
// the materials and deltas consistently breaks none of them, only the
// projection.
func TestDeltaChecksOneEach(t *testing.T) {
	raw, src, e := fixture(t, "with_overrides")
	cases := []struct {
		name string
		edit func(doc map[string]any)
		fail string // "" = no delta check fails
	}{
		{"last delta dropped", func(doc map[string]any) { doc["deltas"] = doc["deltas"].([]any)[:4] }, "RPLY-DELTA-001"},
		{"a delta twice", func(doc map[string]any) {
			ds := doc["deltas"].([]any)
			doc["deltas"] = append(ds, ds[0])
		}, "RPLY-DELTA-001"},
		{"no override keys", func(doc map[string]any) {
			for _, d := range doc["deltas"].([]any) {
				delete(d.(map[string]any), "override_key")
			}
		}, "RPLY-DELTA-002"},
		{"wrong event", func(doc map[string]any) { doc["deltas"].([]any)[0].(map[string]any)["event_id"] = "evt_src_0003" }, "RPLY-DELTA-002"},
		{"neither event nor path", func(doc map[string]any) {
			d := doc["deltas"].([]any)[0].(map[string]any)
			delete(d, "event_id")
			delete(d, "path")
		}, "RPLY-DELTA-002"},
		{"path to another material", func(doc map[string]any) {
			doc["deltas"].([]any)[0].(map[string]any)["path"] = "/replay_input/materials/2"
		}, "RPLY-DELTA-002"},
		{"after is before", func(doc map[string]any) {
			d := doc["deltas"].([]any)[1].(map[string]any)
			d["after_sha256"] = d["before_sha256"]
		}, "RPLY-DELTA-003"},
		{"no before", func(doc map[string]any) { delete(doc["deltas"].([]any)[1].(map[string]any), "before_sha256") }, "RPLY-DELTA-003"},
		{"upper-case hash", func(doc map[string]any) {
			d := doc["deltas"].([]any)[1].(map[string]any)
			d["before_sha256"] = strings.ToUpper(d["before_sha256"].(string))
		}, "RPLY-DELTA-003"},
		{"no reasons", func(doc map[string]any) {
			for _, d := range doc["deltas"].([]any) {
				delete(d.(map[string]any), "reason")
			}
		}, "RPLY-DELTA-004"},
		{"a reason of its own", func(doc map[string]any) {
			doc["deltas"].([]any)[0].(map[string]any)["reason"] = "harness replay policy"
		}, "RPLY-DELTA-004"},
		{"the request's reason", func(doc map[string]any) {
			doc["deltas"].([]any)[0].(map[string]any)["reason"] = "byte-deterministic replay conformance"
		}, ""},
		{"secret in material metadata", func(doc map[string]any) {
			m := doc["replay_input"].(map[string]any)["materials"].([]any)[4].(map[string]any)
			m["metadata"].(map[string]any)["value"] = replay.SecretOverride
		}, "RPLY-DELTA-005"},
		{"recorded secret base64", func(doc map[string]any) {
			doc["metadata"].(map[string]any)["x"] = "Y29uZm9ybS1yZXBsYXktZml4dHVyZS1yZWNvcmRlZC1zZWNyZXQtTk9ULUEtQ1JFREVOVElBTC01ZDFl"
		}, "RPLY-DELTA-005"},
		{"secret delta without hash or artifact", func(doc map[string]any) {
			d := doc["deltas"].([]any)[3].(map[string]any)
			delete(d, "artifact_id")
			delete(d, "after_sha256")
		}, "RPLY-DELTA-003,RPLY-DELTA-005"},
		{"materials and deltas reversed, paths consistent", func(doc map[string]any) {
			ri := doc["replay_input"].(map[string]any)
			mats := ri["materials"].([]any)
			slices.Reverse(mats[1:])
			ds := doc["deltas"].([]any)
			slices.Reverse(ds)
			for i, d := range ds {
				d.(map[string]any)["path"] = "/replay_input/materials/" + strconv.Itoa(i+1)
			}
		}, ""},
	}
	base := project(t, raw, src)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := decodeDoc(t, raw)
			c.edit(doc)
			edited := encodeDoc(t, doc)
			var failed []string
			for name, err := range checkAll(edited, doc, e) {
				if err != nil {
					failed = append(failed, name)
					for _, s := range []string{replay.SecretOverride, replay.SecretRecorded} {
						if strings.Contains(err.Error(), s) {
							t.Errorf("%s's finding shows a secret", name)
						}
					}
				}
			}
			slices.Sort(failed)
			if got := strings.Join(failed, ","); got != c.fail {
				t.Errorf("failed %q, want %q", got, c.fail)
			}
			if c.fail == "" && c.name != "the request's reason" {
				if Compare(Side{"fixture", base}, Side{"edited", project(t, edited, src)}) == nil {
					t.Error("the projection did not change")
				}
			}
		})
	}
}
