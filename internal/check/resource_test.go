package check

import (
	"slices"
	"strings"
	"testing"
)

// mustObject decodes a JSON object the way responses are decoded (numbers as
// json.Number), failing the test on bad input.
func mustObject(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := resp(200, s).Object()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const goodTask = `{"id":"task_1","object":"task","created_at":"2026-04-25T19:00:00Z","updated_at":"2026-04-25T19:00:02.123Z",
	"metadata":{},"session_id":"s","workspace_id":"w","status":"WORKING","input":{"role":"user","parts":[]},"created_by":"actor",
	"started_at":null,"completed_at":null}`

func TestResourceEnvelope(t *testing.T) {
	if err := ResourceEnvelope(resp(200, ""), mustObject(t, goodTask)); err != nil {
		t.Errorf("ResourceEnvelope(good) = %v", err)
	}
	for body, want := range map[string]string{
		`{"object":"task","created_at":"x","updated_at":"x","metadata":{}}`:         "id is missing or null",
		`{"id":"","object":"task","created_at":"x","updated_at":"x","metadata":{}}`: "id is a string, want a non-empty",
		`{"id":"a","object":"task","created_at":"x","updated_at":"x"}`:              "metadata is missing",
		`{"id":"a","object":"task","created_at":1,"updated_at":"x","metadata":[]}`:  "created_at is json.Number",
	} {
		if err := ResourceEnvelope(resp(200, ""), mustObject(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ResourceEnvelope(%s) = %v, want %q", body, err, want)
		}
	}
}

func TestTimestamp(t *testing.T) {
	for _, ok := range []string{"2026-04-25T19:00:00Z", "2026-04-25t19:00:00.5z", "2026-04-25T19:00:00.123456789+00:00"} {
		if err := Timestamp(ok); err != nil {
			t.Errorf("Timestamp(%q) = %v, want nil", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"2026-04-25T21:00:00+02:00": "not in UTC",
		"2026-04-25T19:00:00-00:00": "not in UTC",
		"2026-04-25 19:00:00":       "not an RFC 3339",
		"1745607600":                "not an RFC 3339",
		"2026-04-25T19:00:00":       "not an RFC 3339",
	} {
		if err := Timestamp(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Timestamp(%q) = %v, want %q", bad, err, want)
		}
	}
}

func TestTimestamps(t *testing.T) {
	if err := Timestamps(resp(200, ""), mustObject(t, goodTask)); err != nil {
		t.Errorf("Timestamps(good) = %v", err)
	}
	// Nested resources are checked; opaque data and unknown *_at fields are not.
	ok := `{"id":"o","created_at":"2026-04-25T19:00:00Z","metadata":{"created_at":"whenever"},"x_seen_at":"yesterday",
		"payload":{"updated_at":5}}`
	if err := Timestamps(resp(200, ""), mustObject(t, ok)); err != nil {
		t.Errorf("Timestamps(opaque) = %v", err)
	}
	bad := `{"id":"o","object":"outcome","created_at":"2026-04-25T19:00:00Z","artifacts":[{"id":"a","updated_at":"2026-04-25T21:00:00+02:00"}],"completed_at":7}`
	err := Timestamps(resp(200, ""), mustObject(t, bad))
	if err == nil || !strings.Contains(err.Error(), "artifacts[0].updated_at") || !strings.Contains(err.Error(), "completed_at is json.Number") {
		t.Errorf("Timestamps(bad) = %v", err)
	}
}

func TestDiscriminator(t *testing.T) {
	if err := Discriminator(resp(200, ""), mustObject(t, goodTask), "task"); err != nil {
		t.Errorf("Discriminator(task) = %v", err)
	}
	err := Discriminator(resp(200, ""), mustObject(t, `{"id":"t","object":"task_resource"}`), "task")
	if err == nil || !strings.Contains(err.Error(), `object = "task_resource", want "task"`) {
		t.Errorf("Discriminator(wrong) = %v", err)
	}
}

func TestFields(t *testing.T) {
	good := map[string]string{
		"task":     goodTask,
		"session":  `{"workspace_id":"w","state":"ACTIVE","transcript":{"message_count":0}}`,
		"message":  `{"role":"user","parts":[{"type":"text","text":"hi","visibility":"public"}]}`,
		"artifact": `{"kind":"log","mime_type":"text/plain","uri":null,"visibility":"public","sha256":"` + strings.Repeat("ab", 32) + `"}`,
		"outcome":  `{"task_id":"t","status":"SUCCEEDED","summary":""}`,
		"event":    `{"event":"task.started","resource":{"object":"task","id":"t"},"sequence":0,"payload":{}}`,
		"persona":  `{}`,
	}
	for kind, body := range good {
		if err := Fields(resp(200, ""), kind, mustObject(t, body)); err != nil {
			t.Errorf("Fields(%s) = %v", kind, err)
		}
	}
	for _, tc := range []struct{ kind, body, want string }{
		{"task", `{"session_id":"s","workspace_id":"w","status":"WORKING","input":{}}`, "created_by is missing"},
		{"task", `{"session_id":"s","workspace_id":"w","status":"WORKING","created_by":"a","input":null}`, "input is missing or null"},
		{"session", `{"workspace_id":"w","state":"ACTIVE"}`, "transcript is missing"},
		{"message", `{"role":"user","parts":[{"type":"text"}]}`, "parts[0].visibility"},
		{"message", `{"role":"user","parts":"hi"}`, "parts is a string"},
		{"artifact", `{"kind":"log","mime_type":"m","visibility":"public","sha256":null}`, "uri is missing"},
		{"artifact", `{"kind":"log","mime_type":"m","visibility":"public","uri":null,"sha256":"sha256:abc"}`, "want 64 hex digits"},
		{"outcome", `{"task_id":"t","status":"SUCCEEDED"}`, "summary is missing"},
		{"event", `{"event":"x","resource":{"object":"task"},"sequence":-1,"payload":{}}`, "resource.id"},
		{"event", `{"event":"x","resource":{"object":"task","id":"t"},"sequence":1.5,"payload":{}}`, "sequence = 1.5"},
	} {
		if err := Fields(resp(200, ""), tc.kind, mustObject(t, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fields(%s, %s) = %v, want %q", tc.kind, tc.body, err, tc.want)
		}
	}
}

func TestTaskStatusKnownAndEnums(t *testing.T) {
	if err := TaskStatusKnown(resp(200, ""), mustObject(t, goodTask)); err != nil {
		t.Errorf("TaskStatusKnown(WORKING) = %v", err)
	}
	if err := TaskStatusKnown(resp(200, ""), mustObject(t, `{"status":"working"}`)); err == nil || !strings.Contains(err.Error(), `status = "working"`) {
		t.Errorf("TaskStatusKnown(working) = %v", err)
	}
	if err := Enums(resp(200, ""), "message", mustObject(t, `{"role":"user","parts":[{"type":"text","visibility":"public"}]}`)); err != nil {
		t.Errorf("Enums(good message) = %v", err)
	}
	for _, tc := range []struct{ kind, body, want string }{
		{"session", `{"state":"RUNNING"}`, `state = "RUNNING"`},
		{"message", `{"role":"bot","parts":[]}`, `role = "bot"`},
		{"message", `{"role":"user","parts":[{"type":"video","visibility":"secret"}]}`, `parts[0].visibility = "secret"`},
		{"artifact", `{"kind":"blob","visibility":"public"}`, `kind = "blob"`},
	} {
		if err := Enums(resp(200, ""), tc.kind, mustObject(t, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Enums(%s, %s) = %v, want %q", tc.kind, tc.body, err, tc.want)
		}
	}
}

func TestSameIDAndAgree(t *testing.T) {
	task := mustObject(t, goodTask)
	if err := SameID(resp(200, ""), task, "task_1"); err != nil {
		t.Errorf("SameID = %v", err)
	}
	if err := SameID(resp(200, ""), task, "task_2"); err == nil || !strings.Contains(err.Error(), `id = "task_1", want "task_2"`) {
		t.Errorf("SameID(other) = %v", err)
	}
	moved := mustObject(t, strings.Replace(goodTask, `"WORKING"`, `"COMPLETED"`, 1))
	if err := Agree(resp(200, ""), task, moved, "session_id"); err != nil {
		t.Errorf("Agree(status moved) = %v", err)
	}
	other := mustObject(t, strings.Replace(strings.Replace(goodTask, `"task_1"`, `"task_9"`, 1), `"s"`, `"s2"`, 1))
	err := Agree(resp(200, ""), task, other, "session_id")
	if err == nil || !strings.Contains(err.Error(), `id = "task_9" here but "task_1"`) || !strings.Contains(err.Error(), "session_id") {
		t.Errorf("Agree(different) = %v", err)
	}
}

func TestInOrder(t *testing.T) {
	if err := InOrder("list", []string{"x", "a", "y", "b", "c"}, []string{"a", "b", "c"}); err != nil {
		t.Errorf("InOrder(interleaved) = %v", err)
	}
	for _, tc := range []struct {
		listed []string
		want   string
	}{
		{[]string{"a", "c", "b"}, `"c" (appended #3) is listed before "b"`},
		{[]string{"a", "b"}, `"c" (appended #3) is not listed`},
		{[]string{"a", "b", "b", "c"}, `"b" is listed twice`},
	} {
		if err := InOrder("list", tc.listed, []string{"a", "b", "c"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("InOrder(%v) = %v, want %q", tc.listed, err, tc.want)
		}
	}
}

func TestContentHash(t *testing.T) {
	// sha256("abc")
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err := ContentHash(resp(200, "abc"), strings.ToUpper(abc)); err != nil {
		t.Errorf("ContentHash(abc) = %v", err)
	}
	if err := ContentHash(resp(200, "abd"), abc); err == nil || !strings.Contains(err.Error(), "the 3 bytes served hash to") {
		t.Errorf("ContentHash(abd) = %v", err)
	}
	cut := resp(200, "abc")
	cut.Truncated = true
	if err := ContentHash(cut, abc); err == nil || !strings.Contains(err.Error(), "read cap") {
		t.Errorf("ContentHash(truncated) = %v", err)
	}
}

func TestSameEvent(t *testing.T) {
	ev := `{"id":"e1","object":"event","event":"task.started","resource":{"object":"task","id":"t"},"sequence":1,
		"payload":{"status":"WORKING"},"created_at":"2026-04-25T19:00:00Z"}`
	if err := SameEvent(resp(200, ""), mustObject(t, ev), mustObject(t, strings.Replace(ev, `"object":"event",`, `"x":1,"object":"event",`, 1))); err != nil {
		t.Errorf("SameEvent(same, extra field) = %v", err)
	}
	err := SameEvent(resp(200, ""), mustObject(t, ev), mustObject(t, strings.Replace(ev, `{"status":"WORKING"}`, `{}`, 1)))
	if err == nil || !strings.Contains(err.Error(), "payload differs from the event list") {
		t.Errorf("SameEvent(empty payload) = %v", err)
	}
}

func TestContentHashIgnoresPrefix(t *testing.T) {
	const abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err := ContentHash(resp(200, "abc"), abc); err != nil {
		t.Errorf("ContentHash(prefixed) = %v", err)
	}
}

func TestOutcomeArtifactIDs(t *testing.T) {
	o := map[string]any{"artifacts": []any{map[string]any{"id": "a1"}, "a2", map[string]any{"id": "a1"}, map[string]any{}, 7}}
	if got := OutcomeArtifactIDs(o); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("OutcomeArtifactIDs = %v, want [a1 a2]", got)
	}
	if got := OutcomeArtifactIDs(map[string]any{"artifacts": "a1"}); got != nil {
		t.Errorf("OutcomeArtifactIDs(not a list) = %v, want none", got)
	}
}

func TestArtifactWithBytes(t *testing.T) {
	for _, tc := range []struct {
		a    map[string]any
		want bool
	}{
		{map[string]any{"sha256": "ab"}, true}, {map[string]any{"sha256": nil}, false}, {map[string]any{"sha256": ""}, false},
		{map[string]any{}, false}, {map[string]any{"sha256": 5}, false},
	} {
		if got := ArtifactWithBytes(tc.a); got != tc.want {
			t.Errorf("ArtifactWithBytes(%v) = %v, want %v", tc.a, got, tc.want)
		}
	}
}
