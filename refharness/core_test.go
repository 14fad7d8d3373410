package refharness

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestStreamResource(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Resource
		ok   bool
	}{
		{"/v1/sessions/s1/events/stream", Resource{"session", "s1"}, true},
		{"/v1/sessions/s1/events/stream/", Resource{"session", "s1"}, true},
		{"/v1/tasks/t1/stream", Resource{"task", "t1"}, true},
		{"/v1/events/stream", Resource{}, false},
		{"/v1/sessions//events/stream", Resource{}, false},
		{"/v1/tasks/t1/events", Resource{}, false},
		{"/tasks/t1/stream", Resource{}, false},
	} {
		if got, ok := StreamResource(tc.path); got != tc.want || ok != tc.ok {
			t.Errorf("StreamResource(%q) = %v, %v; want %v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// TestUpgradeHandler: a mounted handler gets the WebSocket upgrades of the
// two stream paths before any version or credential check, and nothing
// else; discovery advertises websocket exactly while one is mounted.
func TestUpgradeHandler(t *testing.T) {
	h := newHarness(t, Options{})
	var got []string
	h.s.SetUpgradeHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	if ws := h.do("GET", "/v1", nil).Body["capabilities"].(map[string]any)["websocket"]; ws != true {
		t.Errorf("mounted: capabilities.websocket = %v, want true", ws)
	}
	for _, tc := range []struct {
		path    string
		upgrade bool
		routed  bool
	}{
		{"/v1/sessions/s1/events/stream", true, true},
		{"/v1/tasks/t1/stream", true, true},
		{"/v1/events/stream", true, false},
		{"/v1/tasks/t1/stream", false, false},
	} {
		got = nil
		req := httptest.NewRequest("GET", tc.path, nil) // neither version nor credential
		if tc.upgrade {
			req.Header.Set("Upgrade", "WebSocket")
		}
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		if routed := len(got) == 1; routed != tc.routed || routed != (rec.Code == http.StatusTeapot) {
			t.Errorf("%s (upgrade %v): routed to the handler %v (status %d), want %v", tc.path, tc.upgrade, routed, rec.Code, tc.routed)
		}
	}
	h.s.SetUpgradeHandler(nil)
	if ws := h.do("GET", "/v1", nil).Body["capabilities"].(map[string]any)["websocket"]; ws != false {
		t.Errorf("unmounted: capabilities.websocket = %v, want false", ws)
	}
}
