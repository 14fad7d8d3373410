// Package replaydet holds the Replay level's determinism and receipt-delta
// checks as plain functions (docs/replay.md, "Determinism"): the receipt
// projection RPLY-DET-002 compares byte for byte, the comparison that
// names the first difference, and the delta checks of RPLY-DELTA-001..005.
//
// Spec 002 ("Determinism fixture") asks two conforming implementations
// that run the same module with the same history and overrides for
// byte-identical canonical receipt JSON, "excluding signatures". Read
// literally no two Harnesses could ever agree: a receipt carries ids,
// clocks and keys each implementation assigns. The projection keeps what
// the replay's inputs decide and drops what an implementation assigns;
// Project documents each member, and docs/replay.md lists them with why.
package replaydet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Sources maps the id of each source-task event that recorded a dependency
// (an event whose payload.override_key names it, docs/scenarios.md) to
// that dependency's override key. Event ids are the implementation's; the
// key they stand for is not, so a delta's event_id enters the projection
// as the key of the dependency its event recorded.
type Sources map[string]string

// Projection is the determinism projection of one replay receipt.
type Projection struct {
	// Canonical is the projection's RFC 8785 bytes: what RPLY-DET-002
	// compares.
	Canonical []byte
	// Findings are what the projection had to mark rather than map: a
	// delta whose event_id names no event that recorded a dependency, or
	// one that recorded another key than the delta's (RPLY-DELTA-002).
	Findings []string
	value    any // Canonical decoded, for locating a difference
}

// MaxReceiptBytes bounds what Project reads.
const MaxReceiptBytes = 8 << 20

// Project returns the determinism projection of a replay receipt (raw JSON
// bytes), mapping delta event ids through src. Its error is for input that
// is no JSON object (or that RFC 8785 refuses); every other oddity (a
// member of the wrong type, an unknown event) is carried into the
// projection, where a comparison shows it.
//
// In the projection, member by member (absent members stay absent, so an
// omitted member and a null one differ, except where the schema's own
// optionality makes them say the same: an absent or null approvals,
// deltas or redactions list projects as [], a null lifecycle.failure as
// none):
//
//   - schema: the format marker.
//   - subject.object ("replay_segment"); subject.id is the replay task's id: out.
//   - lifecycle.final_state, and lifecycle.failure.code when a failure is
//     recorded; the timestamps and the failure's message are out.
//   - trust.start_tier, trust.end_tier; trust.policy_ref (an id) is out.
//   - approvals[].action and .decision; approval ids, actors, times and
//     evidence hashes are out.
//   - autonomy_budget (limit and consumed totals), whole.
//   - replay_input.determinism, and replay_input.materials in their order:
//     the event_log material as its kind only (its id, uri, hash and
//     content type name the implementation's own serialisation of its
//     log); every other material's kind, id, sha256 and
//     metadata.override_key (uri, content_type, bytes_base64 and other
//     metadata are out: a uri names the implementation's artifact ids,
//     inline bytes are bound by sha256); unavailable_reason (free text) out.
//   - cost.currency, cost.total; provider_breakdown (provider naming) out.
//   - side_effects: fs_writes[] whole; network_egress[] without metadata;
//     tool_calls[] without metadata; a2a_handoffs[].target_agent and
//     .status (task and receipt ids out).
//   - final_artifacts[].kind and .sha256 (artifact ids and uris out).
//   - deltas[] in their order: operation, path, override_key,
//     before_sha256, after_sha256, reason; event_id as {"records": KEY},
//     the key of the dependency the event recorded (null when it recorded
//     none); artifact_id as true when present (the id is the target's).
//     delta_id is out.
//   - redactions[] whole (field, reason, proof_hash).
//   - metadata.replay_mode; metadata.source_task_id (an id) and any other
//     metadata (extension data) are out.
//   - out entirely: receipt_id, issuer, issued_at, identifiers,
//     model_route (the implementation's provider and model naming),
//     chain (hashes over the whole receipt, ids included) and signatures.
func Project(raw []byte, src Sources) (*Projection, error) {
	if len(raw) > MaxReceiptBytes {
		return nil, fmt.Errorf("receipt of %d bytes, more than the %d the projection reads", len(raw), MaxReceiptBytes)
	}
	// RFC 8785 first: it refuses what I-JSON forbids (duplicate members,
	// invalid UTF-8), which encoding/json would quietly accept.
	if _, err := jcs.Transform(raw); err != nil {
		return nil, fmt.Errorf("the receipt is not canonicalizable JSON (RFC 8785): %v", err)
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the receipt is not a JSON object")
	}
	p := &Projection{}
	out := map[string]any{}
	copyMember(out, doc, "schema")
	pick(out, doc, "subject", "object")
	if lc, ok := doc["lifecycle"]; ok {
		out["lifecycle"] = projectLifecycle(lc)
	}
	pick(out, doc, "trust", "start_tier", "end_tier")
	pickEach(out, doc, "approvals", "action", "decision")
	copyMember(out, doc, "autonomy_budget")
	if ri, ok := doc["replay_input"]; ok {
		out["replay_input"] = projectReplayInput(ri)
	}
	pick(out, doc, "cost", "currency", "total")
	if se, ok := doc["side_effects"]; ok {
		out["side_effects"] = projectSideEffects(se)
	}
	pickEach(out, doc, "final_artifacts", "kind", "sha256")
	if ds, ok := doc["deltas"]; ok {
		out["deltas"] = p.projectDeltas(ds, src)
	}
	copyMember(out, doc, "redactions")
	pick(out, doc, "metadata", "replay_mode")
	// The schema's optional lists: leaving one out says what an empty one
	// says, so both project as [].
	for _, k := range []string{"approvals", "deltas", "redactions"} {
		if v, ok := out[k]; !ok || v == nil {
			out[k] = []any{}
		}
	}

	b, err := jsonv.Marshal(out)
	if err != nil {
		return nil, err
	}
	if p.Canonical, err = jcs.Transform(b); err != nil {
		return nil, fmt.Errorf("canonicalizing the projection: %v", err)
	}
	if p.value, err = decode(p.Canonical); err != nil {
		return nil, err
	}
	return p, nil
}

func projectLifecycle(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	copyMember(out, m, "final_state")
	if f, ok := m["failure"]; ok && f != nil { // null says what absent says
		if fm, isObj := f.(map[string]any); isObj {
			fo := map[string]any{}
			copyMember(fo, fm, "code")
			out["failure"] = fo
		} else {
			out["failure"] = f
		}
	}
	return out
}

func projectReplayInput(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	copyMember(out, m, "determinism")
	mats, ok := m["materials"]
	if !ok {
		return out
	}
	list, isList := mats.([]any)
	if !isList {
		out["materials"] = mats
		return out
	}
	var pm []any
	for _, e := range list {
		mat, isObj := e.(map[string]any)
		if !isObj {
			pm = append(pm, e)
			continue
		}
		o := map[string]any{}
		copyMember(o, mat, "kind")
		if mat["kind"] != "event_log" {
			copyMember(o, mat, "id")
			copyMember(o, mat, "sha256")
			pick(o, mat, "metadata", "override_key")
		}
		pm = append(pm, o)
	}
	out["materials"] = orEmpty(pm)
	return out
}

func projectSideEffects(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	copyMember(out, m, "fs_writes")
	pickEach(out, m, "network_egress", "destination", "purpose", "bytes_sent")
	pickEach(out, m, "tool_calls", "tool", "call_id", "status", "input_hash", "output_hash")
	pickEach(out, m, "a2a_handoffs", "target_agent", "status")
	return out
}

// projectDeltas projects the deltas, mapping each event_id to the key of
// the dependency its event recorded.
func (p *Projection) projectDeltas(v any, src Sources) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	var out []any
	for i, e := range list {
		d, isObj := e.(map[string]any)
		if !isObj {
			out = append(out, e)
			continue
		}
		o := map[string]any{}
		for _, k := range []string{"operation", "path", "override_key", "before_sha256", "after_sha256", "reason"} {
			copyMember(o, d, k)
		}
		if ev, has := d["event_id"]; has {
			id, _ := ev.(string)
			key, known := src[id]
			if known {
				o["event_id"] = map[string]any{"records": key}
			} else {
				o["event_id"] = map[string]any{"records": nil}
			}
			want, _ := d["override_key"].(string)
			switch {
			case !known:
				p.Findings = append(p.Findings, fmt.Sprintf("deltas/%d (override_key %q) names event_id %s, which is no event of the source task that recorded a dependency", i, want, describe(ev)))
			case want != "" && key != want:
				p.Findings = append(p.Findings, fmt.Sprintf("deltas/%d (override_key %q) names event_id %q, which recorded %q", i, want, id, key))
			}
		}
		if a, has := d["artifact_id"]; has {
			s, isStr := a.(string)
			o["artifact_id"] = isStr && s != ""
		}
		out = append(out, o)
	}
	return orEmpty(out)
}

// copyMember copies member k of from into to when from has it.
func copyMember(to, from map[string]any, k string) {
	if v, ok := from[k]; ok {
		to[k] = v
	}
}

// pick copies member k of from into to, keeping only the named members
// when it is an object (a value of another type is kept as it is, so a
// comparison shows it).
func pick(to, from map[string]any, k string, members ...string) {
	v, ok := from[k]
	if !ok {
		return
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		to[k] = v
		return
	}
	o := map[string]any{}
	for _, mk := range members {
		copyMember(o, m, mk)
	}
	to[k] = o
}

// pickEach is pick for each object of the array member k.
func pickEach(to, from map[string]any, k string, members ...string) {
	v, ok := from[k]
	if !ok {
		return
	}
	list, isList := v.([]any)
	if !isList {
		to[k] = v
		return
	}
	var out []any
	for _, e := range list {
		m, isObj := e.(map[string]any)
		if !isObj {
			out = append(out, e)
			continue
		}
		o := map[string]any{}
		for _, mk := range members {
			copyMember(o, m, mk)
		}
		out = append(out, o)
	}
	to[k] = orEmpty(out)
}

func orEmpty(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// decode parses JSON keeping numbers as their literal text.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the receipt is not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("the receipt has data after its JSON value")
	}
	return v, nil
}

// Side names one projection in a comparison.
type Side struct {
	Name string // what it is the projection of ("the target's receipt rcpt_…")
	P    *Projection
}

// Mismatch is a difference between two projections.
type Mismatch struct {
	A, B Side
	// Offset is the first byte at which the canonical bytes differ (the
	// shorter one's length when one is a prefix of the other).
	Offset int
	// Path is the JSON pointer, in the projection, of the first member or
	// element that differs in canonical order ("" for the whole document).
	Path string
	// ValueA and ValueB are the canonical JSON at Path on each side ("" for
	// absent).
	ValueA, ValueB string
}

// Compare compares two projections; nil when their canonical bytes are
// equal.
func Compare(a, b Side) *Mismatch {
	if bytes.Equal(a.P.Canonical, b.P.Canonical) {
		return nil
	}
	m := &Mismatch{A: a, B: b}
	n := min(len(a.P.Canonical), len(b.P.Canonical))
	m.Offset = n
	for i := 0; i < n; i++ {
		if a.P.Canonical[i] != b.P.Canonical[i] {
			m.Offset = i
			break
		}
	}
	path, va, vb := firstDifference("", a.P.value, b.P.value, true, true)
	m.Path = path
	m.ValueA, m.ValueB = render(va), render(vb)
	return m
}

// Error shows the first difference and both canonical byte strings.
func (m *Mismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the canonical receipt projections (RFC 8785, docs/replay.md \"Determinism\") differ first at %s, byte %d: %s has %s, %s has %s",
		orRoot(m.Path), m.Offset, m.A.Name, orAbsent(m.ValueA), m.B.Name, orAbsent(m.ValueB))
	fmt.Fprintf(&b, "\n  %s: %s\n  %s: %s", m.A.Name, shown(m.A.P.Canonical), m.B.Name, shown(m.B.P.Canonical))
	return b.String()
}

// MaxShownBytes bounds how much of each canonical byte string a finding
// shows: a projection of a real receipt is a few KiB; a hostile one must
// not flood the report.
const MaxShownBytes = 32 << 10

func shown(b []byte) string {
	if len(b) <= MaxShownBytes {
		return string(b)
	}
	return fmt.Sprintf("%s… (%d more bytes)", b[:MaxShownBytes], len(b)-MaxShownBytes)
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func orAbsent(s string) string {
	if s == "" {
		return "nothing (absent)"
	}
	return s
}

func render(v any) string {
	if v == absent {
		return ""
	}
	b, err := jsonv.Marshal(v)
	if err != nil {
		return "?"
	}
	if c, err := jcs.Transform(b); err == nil {
		b = c
	}
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// absent marks a member one side does not have.
var absent = &struct{}{}

// firstDifference walks two decoded canonical values in canonical order
// (object members by UTF-16 code units, RFC 8785 §3.2.3) and returns the
// pointer of the first place they differ, with the value on each side.
func firstDifference(path string, a, b any, hasA, hasB bool) (string, any, any) {
	if !hasA || !hasB {
		va, vb := a, b
		if !hasA {
			va = absent
		}
		if !hasB {
			vb = absent
		}
		return path, va, vb
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, a, b
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Slice(sorted, func(i, j int) bool { return utf16Less(sorted[i], sorted[j]) })
		for _, k := range sorted {
			va, inA := x[k]
			vb, inB := y[k]
			if inA && inB && equal(va, vb) {
				continue
			}
			return firstDifference(path+"/"+jsonv.Token(k), va, vb, inA, inB)
		}
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, a, b
		}
		for i := 0; i < max(len(x), len(y)); i++ {
			var va, vb any
			inA, inB := i < len(x), i < len(y)
			if inA {
				va = x[i]
			}
			if inB {
				vb = y[i]
			}
			if inA && inB && equal(va, vb) {
				continue
			}
			return firstDifference(fmt.Sprintf("%s/%d", path, i), va, vb, inA, inB)
		}
	}
	return path, a, b
}

func equal(a, b any) bool {
	x, err1 := jsonv.Marshal(a)
	y, err2 := jsonv.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func utf16Less(a, b string) bool {
	x, y := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(x) && i < len(y); i++ {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return len(x) < len(y)
}
