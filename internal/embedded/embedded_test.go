package embedded

import (
	"net/http"
	"os"
	"testing"

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
