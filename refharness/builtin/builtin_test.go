package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
)

func TestStartServesDurablyAndCleansUp(t *testing.T) {
	h, err := Start(refharness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.dir); err != nil {
		t.Fatalf("data directory: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/v1/tasks", nil)
	req.Header.Set("Authorization", "Bearer "+h.APIKey)
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/tasks with the generated key = %d, want 200", resp.StatusCode)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Stat(h.dir); !os.IsNotExist(err) {
		t.Errorf("data directory still there after Close: %v", err)
	}
	if a, b := NewAPIKey(), NewAPIKey(); a == b || len(a) < 32 {
		t.Errorf("NewAPIKey gave %q and %q: want long, distinct keys", a, b)
	}
}

func call(t *testing.T, h *Harness, method, path, idem string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+h.APIKey)
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// Restart keeps the address and the data: what was accepted before is there
// after, recovered, and an idempotency key still replays.
func TestRestartKeepsAddressAndData(t *testing.T) {
	h, err := Start(refharness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	url := h.URL
	_, ws := call(t, h, "POST", "/v1/workspaces", "", map[string]any{"name": "w", "root": "/"})
	_, se := call(t, h, "POST", "/v1/sessions", "", map[string]any{"workspace_id": ws["id"]})
	task := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi", "visibility": "public"}}},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{map[string]any{"op": "input_required"}}}}}
	path := "/v1/sessions/" + se["id"].(string) + "/tasks"
	code, first := call(t, h, "POST", path, "key-1", task)
	if code != http.StatusAccepted {
		t.Fatalf("submit = %d", code)
	}
	id := first["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, m := call(t, h, "GET", "/v1/tasks/"+id, "", nil); m["status"] == "INPUT_REQUIRED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never reached INPUT_REQUIRED")
		}
	}
	out, err := h.Restart(context.Background())
	if err != nil || out == "" {
		t.Fatalf("Restart = %q, %v", out, err)
	}
	if h.URL != url {
		t.Errorf("URL after restart = %s, want %s", h.URL, url)
	}
	code, got := call(t, h, "GET", "/v1/tasks/"+id, "", nil)
	if code != http.StatusOK || got["status"] != "FAILED" {
		t.Errorf("the waiting task after the restart: %d %v, want 200 FAILED (recovered)", code, got["status"])
	}
	if code, retry := call(t, h, "POST", path, "key-1", task); code != http.StatusAccepted || retry["id"] != id {
		t.Errorf("retry after the restart = %d %v, want 202 with %s", code, retry["id"], id)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close after Restart: %v", err)
	}
	if _, err := h.Restart(context.Background()); err == nil {
		t.Error("Restart after Close succeeded")
	}
}

// This package registers the reference Harness and every profile's
// reference; the Harness's carries its keys, actors, OAuth2 client and
// in-process restart, and stopping it removes its data.
func TestRegistersEveryReference(t *testing.T) {
	for _, name := range append([]string{reference.Harn}, profileNames()...) {
		if !reference.Has(name) {
			t.Errorf("no built-in reference %q registered", name)
		}
	}
	r, err := reference.Start(context.Background(), reference.Harn)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target == "" || r.APIKey == "" || r.SecondAPIKey == "" || r.ReadOnlyAPIKey == "" || r.OAuthClientID != "actor_default" ||
		r.OAuthClientSecret != r.APIKey || r.Restart == nil || r.Close == nil || len(r.Notes) != 1 {
		t.Errorf("the reference Harness: %+v", r)
	}
	h := &Harness{URL: r.Target, APIKey: r.APIKey}
	if code, _ := call(t, h, "GET", "/v1/tasks", "", nil); code != http.StatusOK {
		t.Errorf("GET /v1/tasks with its key = %d, want 200", code)
	}
	if _, err := r.Restart(context.Background()); err != nil {
		t.Errorf("Restart: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if _, err := http.Get(r.Target + "/v1"); err == nil {
		t.Error("the reference Harness still answers after Stop")
	}
}

func profileNames() []string {
	var out []string
	for _, p := range requirements.Profiles() {
		out = append(out, string(p))
	}
	return out
}
