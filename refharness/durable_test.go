package refharness

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// reopenHarness closes h's server and starts a new one on the same DataDir.
func reopenHarness(t *testing.T, h *harness, dir string) *harness {
	t.Helper()
	if err := h.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return newHarness(t, Options{DataDir: dir})
}

func TestRestartRebuildsEverything(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	sess := h.session()
	done := h.submit(sess, []map[string]any{step("emit", "count", 2), step("artifact", "content", "bytes!")}, "Idempotency-Key", "key-1").str("id")
	h.waitStatus(done, StatusCompleted)
	waiting := h.submit(sess, []map[string]any{step("input_required")}).str("id")
	h.waitStatus(waiting, StatusInputRequired)
	art := h.must(201, h.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "public",
		"content_base64": base64.StdEncoding.EncodeToString([]byte("uploaded"))}), "artifact").str("id")
	h.must(201, h.do("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": map[string]any{"role": "user", "parts": []any{}}}), "message")

	// (The session itself changes: recovery appends a task.failed event to
	// its stream, so its derived last_event_id moves on.)
	paths := []string{"/v1/tasks/" + done, "/v1/sessions/" + sess + "/messages",
		"/v1/artifacts/" + art, "/v1/artifacts/" + art + "/content", "/v1/tasks/" + done + "/events", "/v1/workspaces", "/v1/personas", "/v1/outcomes?task_id=" + done}
	before := map[string]string{}
	for _, p := range paths {
		before[p] = string(h.must(200, h.do("GET", p, nil), p).Raw)
	}
	lastEvents := h.must(200, h.do("GET", "/v1/events?limit=200", nil), "events").list()

	h2 := reopenHarness(t, h, dir)
	for _, p := range paths {
		if got := string(h2.must(200, h2.do("GET", p, nil), p).Raw); got != before[p] {
			t.Errorf("GET %s after restart:\n got %s\nwant %s", p, got, before[p])
		}
	}
	// A task that was waiting for input is recovered as FAILED.
	w := h2.waitStatus(waiting, StatusFailed)
	if w.Failure == nil || w.Failure.Code != "harness_restarted" {
		t.Errorf("recovered task failure = %+v", w.Failure)
	}
	// Idempotency records survive the restart.
	retry := h2.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello", "visibility": "public"}}},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []map[string]any{step("emit", "count", 2), step("artifact", "content", "bytes!")}}}}, "Idempotency-Key", "key-1")
	if retry.Code != 202 || retry.str("id") != done || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after restart = %d %s, want 202 with id %s", retry.Code, retry.Raw, done)
	}
	// Event ids continue; none is reused.
	next := h2.submit(sess, nil).str("id")
	h2.waitStatus(next, StatusCompleted)
	after := h2.must(200, h2.do("GET", "/v1/events?limit=200", nil), "events").list()
	seen := map[string]bool{}
	for _, e := range after {
		id := e["id"].(string)
		if seen[id] {
			t.Errorf("event id %s reused", id)
		}
		seen[id] = true
	}
	for _, e := range lastEvents {
		if !seen[e["id"].(string)] {
			t.Errorf("event %s lost in restart", e["id"])
		}
	}
	if len(after) <= len(lastEvents) {
		t.Errorf("no new events after restart")
	}
}

func TestSubmittedTaskRunsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir, Faults: nil})
	sess := h.session()
	// Stop workers before they start, so the task is left SUBMITTED on disk.
	h.s.mu.Lock()
	h.s.stopping = true
	h.s.mu.Unlock()
	id := h.submit(sess, nil).str("id")
	if got := h.do("GET", "/v1/tasks/"+id, nil).str("status"); got != StatusSubmitted {
		t.Fatalf("status = %s, want SUBMITTED", got)
	}
	h2 := reopenHarness(t, h, dir)
	h2.waitStatus(id, StatusCompleted)
	kinds, _ := h2.taskEvents(id)
	if !slices.Equal(kinds, []string{"task.submitted", "task.started", "agent.message", "task.completed"}) {
		t.Errorf("events = %v", kinds)
	}
}

func TestTornJournalTailAtStartup(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	sess := h.session()
	h.s.Close()
	f, err := os.OpenFile(filepath.Join(dir, "events.journal"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, '{', '"'}) // a record cut mid-write
	f.Close()
	h2 := newHarness(t, Options{DataDir: dir})
	h2.must(200, h2.do("GET", "/v1/sessions/"+sess, nil), "session after torn tail")
	if h2.s.jl.Cut != 10 {
		t.Errorf("cut %d bytes, want 10", h2.s.jl.Cut)
	}
}

func TestCorruptDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.journal"), []byte("not a journal, some other file"), 0o600)
	if _, err := New(Options{DataDir: dir}); err == nil {
		t.Fatal("New accepted a foreign events.journal")
	}
}

func TestRestartedCounterIDsAreNotReused(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir, IDs: &SeqIDs{}})
	first := h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": "a", "root": "/"}), "ws").str("id")
	h.s.Close()
	h2 := newHarness(t, Options{DataDir: dir, IDs: &SeqIDs{}}) // the counter starts over
	second := h2.must(201, h2.do("POST", "/v1/workspaces", map[string]any{"name": "b", "root": "/"}), "ws").str("id")
	if second == first {
		t.Fatalf("id %s reused after restart", first)
	}
	if got := h2.do("GET", "/v1/workspaces/"+first, nil).str("name"); got != "a" {
		t.Errorf("workspace %s now named %q, want a", first, got)
	}
}
