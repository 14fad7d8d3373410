package check

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// pev is a decoded Event as a transport would deliver it.
func pev(id, kind string, payload map[string]any) map[string]any {
	if payload == nil {
		payload = map[string]any{}
	}
	return map[string]any{"id": id, "object": "event", "event": kind, "resource": map[string]any{"object": "task", "id": "task_1"},
		"sequence": json.Number(strings.TrimPrefix(id, "e")), "created_at": "2026-04-25T19:00:0" + strings.TrimPrefix(id, "e") + "Z", "payload": payload}
}

// prun is a small run: five events of one task.
func prun() []map[string]any {
	return []map[string]any{
		pev("e1", "task.submitted", map[string]any{"status": "SUBMITTED"}),
		pev("e2", "task.started", map[string]any{"status": "WORKING", "previous_status": "SUBMITTED"}),
		pev("e3", "agent.message", map[string]any{"text": "event 1 of 2", "index": json.Number("1")}),
		pev("e4", "agent.message", map[string]any{"text": "event 2 of 2", "index": json.Number("2")}),
		pev("e5", "task.completed", map[string]any{"status": "COMPLETED", "previous_status": "WORKING"}),
	}
}

func cloneEvents(evs []map[string]any) []map[string]any {
	b, _ := json.Marshal(evs)
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

func views(ref, other []map[string]any) []View {
	return []View{{Transport: "rest", Name: "REST GET /v1/tasks/task_1/events", Events: ref}, {Transport: "sse", Name: "SSE GET /v1/tasks/task_1/stream", Events: other}}
}

func TestParityEqual(t *testing.T) {
	ref := prun()
	other := cloneEvents(ref)
	// Member order and number spelling are not differences; extensions
	// and the Event's own replayed flag are not compared.
	other[2]["payload"] = map[string]any{"index": json.Number("1.0"), "text": "event 1 of 2"}
	other[3]["payload"].(map[string]any)["index"] = 2.0
	other[4]["replayed"] = true
	other[4]["x-vendor"] = "anything"
	if d := Parity(views(ref, other), ParityOptions{}); d != nil {
		t.Fatalf("Parity of equal views = %v, want none", d)
	}
	if d := Parity(views(nil, nil), ParityOptions{}); d != nil {
		t.Fatalf("Parity of two empty views = %v, want none", d)
	}
	if d := Parity([]View{{Transport: "rest", Events: ref}}, ParityOptions{}); d != nil {
		t.Fatalf("Parity of one view = %v, want none", d)
	}
}

func TestParityDivergences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func([]map[string]any) []map[string]any
		kind   DivergenceKind
		index  int
		field  string
		detail string // a fragment the finding must hold
	}{
		{"missing at the end", func(e []map[string]any) []map[string]any { return e[:4] }, DivMissing, 4, "", `sse ended after 4 events; rest then has event "e5"`},
		{"missing in the middle", func(e []map[string]any) []map[string]any { return append(e[:2:2], e[3:]...) }, DivMissing, 2, "", `sse never delivered event "e3"`},
		{"extra at the end", func(e []map[string]any) []map[string]any {
			return append(e, pev("e9", "vendor.x", nil))
		}, DivExtra, 5, "", `delivered event "e9" after the 5 events rest has; rest never lists it`},
		{"extra in the middle", func(e []map[string]any) []map[string]any {
			return append(append(e[:2:2], pev("e9", "vendor.x", nil)), e[2:]...)
		}, DivExtra, 2, "", `delivered event "e9", which rest never lists, before event "e3"`},
		{"repeat in the middle", func(e []map[string]any) []map[string]any {
			return append(append(e[:3:3], e[1]), e[3:]...)
		}, DivExtra, 3, "", `delivered event "e2" a second time (first at event 2) where rest has event "e4"`},
		{"repeat at the end", func(e []map[string]any) []map[string]any { return append(e, e[4]) }, DivExtra, 5, "", `delivered event "e5" again`},
		{"different id", func(e []map[string]any) []map[string]any {
			e[1]["id"] = "e7"
			return e
		}, DivID, 1, "", `rest has event "e2", sse has event "e7", and neither view has the other's`},
		{"different order", func(e []map[string]any) []map[string]any {
			e[2], e[3] = e[3], e[2]
			return e
		}, DivOrder, 2, "", `rest has event "e3" here and event "e4" at event 4; sse has event "e3" at event 4`},
		{"different kind", func(e []map[string]any) []map[string]any {
			e[1]["event"] = "task.status_changed"
			return e
		}, DivKind, 1, "/event", `rest has "task.started", sse has "task.status_changed"`},
		{"different payload value", func(e []map[string]any) []map[string]any {
			e[4]["payload"].(map[string]any)["status"] = "completed"
			return e
		}, DivPayload, 4, "/payload/status", `rest has "COMPLETED", sse has "completed"`},
		{"payload member missing", func(e []map[string]any) []map[string]any {
			delete(e[1]["payload"].(map[string]any), "previous_status")
			return e
		}, DivPayload, 1, "/payload/previous_status", `sse has no such member`},
		{"payload null is not absent", func(e []map[string]any) []map[string]any {
			e[0]["payload"].(map[string]any)["outcome_id"] = nil
			return e
		}, DivPayload, 0, "/payload/outcome_id", `rest has no such member, sse has null`},
		{"payload number", func(e []map[string]any) []map[string]any {
			e[3]["payload"].(map[string]any)["index"] = json.Number("3")
			return e
		}, DivPayload, 3, "/payload/index", `rest has 2, sse has 3`},
		{"payload array length", func(e []map[string]any) []map[string]any {
			e[2]["payload"].(map[string]any)["parts"] = []any{"a", "b"}
			return e
		}, DivPayload, 2, "/payload/parts", `sse has ["a","b"]`},
		{"payload not an object", func(e []map[string]any) []map[string]any {
			e[2]["payload"] = "text"
			return e
		}, DivPayload, 2, "/payload", `sse has "text"`},
		{"different sequence", func(e []map[string]any) []map[string]any {
			e[3]["sequence"] = json.Number("40")
			return e
		}, DivField, 3, "/sequence", `rest has 4, sse has 40`},
		{"different resource", func(e []map[string]any) []map[string]any {
			e[0]["resource"] = map[string]any{"object": "session", "id": "sess_1"}
			return e
		}, DivField, 0, "/resource/id", `rest has "task_1", sse has "sess_1"`},
		{"different created_at", func(e []map[string]any) []map[string]any {
			e[4]["created_at"] = "2026-04-25T19:00:09Z"
			return e
		}, DivField, 4, "/created_at", `sse has "2026-04-25T19:00:09Z"`},
		{"nothing delivered", func([]map[string]any) []map[string]any { return nil }, DivMissing, 0, "", "sse ended after 0 events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := Parity(views(prun(), tc.mutate(prun())), ParityOptions{})
			if len(ds) != 1 {
				t.Fatalf("Parity = %v, want one divergence", ds)
			}
			d := ds[0]
			if d.Kind != tc.kind || d.Index != tc.index || d.Field != tc.field {
				t.Fatalf("divergence %q at %d field %q, want %q at %d field %q: %v", d.Kind, d.Index, d.Field, tc.kind, tc.index, tc.field, d)
			}
			msg := d.Error()
			for _, want := range []string{"SSE GET /v1/tasks/task_1/stream differs from REST GET /v1/tasks/task_1/events", fmt.Sprintf("at event %d ", tc.index+1), string(tc.kind), tc.detail} {
				if !strings.Contains(msg, want) {
					t.Errorf("finding %q does not say %q", msg, want)
				}
			}
			// Both events at the position are quoted where the views have them.
			if tc.index < d.RefLen && !strings.Contains(d.RefEvent, `"id":`) {
				t.Errorf("RefEvent = %q, want the reference's event %d", d.RefEvent, tc.index+1)
			}
			if tc.index < d.OtherLen && !strings.Contains(d.OtherEvent, `"id":`) {
				t.Errorf("OtherEvent = %q, want the other view's event %d", d.OtherEvent, tc.index+1)
			}
			if (tc.index >= d.RefLen) != (d.RefEvent == "") || (tc.index >= d.OtherLen) != (d.OtherEvent == "") {
				t.Errorf("events quoted %q / %q for lengths %d / %d at %d", d.RefEvent, d.OtherEvent, d.RefLen, d.OtherLen, tc.index)
			}
		})
	}
}

// A repeat in the reference itself is reported as the reference's extra
// event, not as an event the other view missed.
func TestParityReferenceRepeats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ref    []map[string]any
		index  int
		detail string
	}{
		{"in the middle", append(append(prun()[:2:2], prun()[0]), prun()[2:]...), 2, `rest (the reference) delivered event "e1" a second time (first at event 1) where sse has event "e3"`},
		{"at the end", append(prun(), prun()[0]), 5, `rest (the reference) delivered event "e1" again after the 5 events sse has`},
	} {
		ds := Parity(views(tc.ref, prun()), ParityOptions{})
		if len(ds) != 1 || ds[0].Kind != DivExtra || ds[0].Index != tc.index || !strings.Contains(ds[0].Error(), tc.detail) {
			t.Errorf("%s: Parity = %v, want an extra event at %d saying %q", tc.name, ds, tc.index, tc.detail)
		}
	}
}

// Every view is judged against the reference, and each diverging view
// reports its own first divergence.
func TestParityManyViews(t *testing.T) {
	ref := prun()
	same := cloneEvents(ref)
	short := cloneEvents(ref)[:3]
	reordered := cloneEvents(ref)
	reordered[0], reordered[1] = reordered[1], reordered[0]
	ds := Parity([]View{
		{Transport: "rest", Name: "REST polling", Events: ref},
		{Transport: "sse", Name: "SSE task stream", Events: same},
		{Transport: "sse", Name: "SSE session stream", Events: short},
		{Transport: "websocket", Name: "WebSocket task stream", Events: reordered},
	}, ParityOptions{})
	if len(ds) != 2 {
		t.Fatalf("Parity = %v, want two divergences", ds)
	}
	if ds[0].Other != "SSE session stream" || ds[0].Kind != DivMissing || ds[0].Index != 3 {
		t.Errorf("first divergence = %v, want the session stream missing event 4", ds[0])
	}
	if ds[1].Other != "WebSocket task stream" || ds[1].OtherTransport != "websocket" || ds[1].Kind != DivOrder || ds[1].Index != 0 {
		t.Errorf("second divergence = %v, want the WebSocket's order at event 1", ds[1])
	}
}

// Event text is redacted before it is cut to size, so a secret that
// straddles the cut is still scrubbed.
func TestParityRedactsThenBounds(t *testing.T) {
	secret := "hk_live_SECRETSECRETSECRET"
	ref := prun()
	other := cloneEvents(ref)
	ref[1]["payload"].(map[string]any)["note"] = secret + strings.Repeat("x", 1000)
	other[1]["payload"].(map[string]any)["note"] = "other " + secret
	red := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	for _, max := range []int{0, 60, 130} {
		ds := Parity(views(ref, other), ParityOptions{Redact: red, MaxEventText: max})
		if len(ds) != 1 {
			t.Fatalf("Parity = %v, want one divergence", ds)
		}
		msg := ds[0].Error()
		if strings.Contains(msg, "hk_live_") || strings.Contains(msg, "SECRET") {
			t.Errorf("max %d: finding leaks the secret: %s", max, msg)
		}
		limit := max
		if limit == 0 {
			limit = 400
		}
		for _, s := range []string{ds[0].RefEvent, ds[0].OtherEvent} {
			if n := len([]rune(s)); n > limit+1 {
				t.Errorf("max %d: event text of %d runes: %q", max, n, s)
			}
		}
	}
}

// A property over random runs: a view equal to the reference has no
// divergence, and one mutation (drop, repeat, swap, insert, change) is
// found at its position with its kind.
func TestParityProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 4))
	kinds := []string{"task.started", "agent.message", "tool.requested", "user.message"}
	for n := range 1000 {
		size := 1 + rng.IntN(12)
		ref := make([]map[string]any, size)
		for i := range ref {
			ref[i] = pev(fmt.Sprintf("e%d", i+1), kinds[rng.IntN(len(kinds))], map[string]any{"i": json.Number(fmt.Sprint(rng.IntN(3))), "s": []any{"a", map[string]any{"k": "v"}}})
		}
		if d := Parity(views(ref, cloneEvents(ref)), ParityOptions{}); d != nil {
			t.Fatalf("run %d: equal views diverge: %v", n, d)
		}
		other := cloneEvents(ref)
		at := rng.IntN(size)
		var want DivergenceKind
		wantAt := at
		switch op := rng.IntN(5); {
		case op == 0:
			other = append(other[:at:at], other[at+1:]...)
			want = DivMissing
		case op == 1:
			other = append(other[:at+1:at+1], other[at:]...)
			want, wantAt = DivExtra, at+1
		case op == 2 && size > 1:
			if at == size-1 {
				at--
			}
			other[at], other[at+1] = other[at+1], other[at]
			want, wantAt = DivOrder, at
		case op == 3:
			other = append(other[:at:at], append([]map[string]any{pev("x9", "vendor.x", nil)}, other[at:]...)...)
			want = DivExtra
		default:
			other[at]["payload"].(map[string]any)["s"].([]any)[1].(map[string]any)["k"] = "w"
			want = DivPayload
		}
		ds := Parity(views(ref, other), ParityOptions{})
		if len(ds) != 1 || ds[0].Kind != want || ds[0].Index != wantAt {
			t.Fatalf("run %d (size %d, at %d): Parity = %v, want %s at %d", n, size, at, ds, want, wantAt)
		}
	}
}

// FuzzParity: any two views of decoded JSON never panic, a view compared
// with itself never diverges, and a divergence points inside the views.
func FuzzParity(f *testing.F) {
	f.Add(`[{"id":"e1","event":"a","payload":{}}]`, `[{"id":"e1","event":"b","payload":{"x":1e3}}]`)
	f.Add(`[{"id":"e1"},{"id":"e1"}]`, `[{"id":"e1"}]`)
	f.Add(`[{"payload":{"n":1.0}},{"id":""}]`, `[{"payload":{"n":1e999999}}]`)
	f.Fuzz(func(t *testing.T, a, b string) {
		decode := func(s string) []map[string]any {
			var out []map[string]any
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			if dec.Decode(&out) != nil {
				return nil
			}
			return out
		}
		va, vb := decode(a), decode(b)
		for _, v := range [][]map[string]any{va, vb} {
			if ds := Parity(views(v, v), ParityOptions{}); ds != nil {
				t.Fatalf("a view diverges from itself: %v", ds)
			}
		}
		for _, d := range Parity(views(va, vb), ParityOptions{MaxEventText: 50}) {
			if d.Index < 0 || (d.Index >= len(va) && d.Index >= len(vb)) {
				t.Fatalf("divergence at %d outside views of %d and %d: %v", d.Index, len(va), len(vb), d)
			}
			_ = d.Error()
		}
	})
}
