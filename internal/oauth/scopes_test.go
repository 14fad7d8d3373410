package oauth

import (
	"slices"
	"testing"
)

func TestScopeDerivation(t *testing.T) {
	for _, tc := range []struct {
		id, scope string
		declared  bool
	}{
		{"listSessions", "sessions:read", true},
		{"createSession", "sessions:write", true},
		{"updateSession", "sessions:write", true},
		{"closeSession", "sessions:write", true},
		{"truncateSession", "sessions:write", true},
		{"submitSessionTask", "tasks:write", true}, // tag Tasks, not the path's sessions
		{"listSessionTasks", "tasks:read", true},
		{"submitTask", "tasks:write", true},
		{"cancelTask", "tasks:write", true},
		{"replayTask", "tasks:write", true},
		{"getTask", "tasks:read", true},
		{"listSessionEvents", "events:read", true},
		{"streamTaskEvents", "events:read", true},
		{"streamEvents", "events:read", true},
		{"registerArtifact", "artifacts:write", true},
		{"downloadArtifactContent", "artifacts:read", true},
		{"getReceipt", "receipts:read", true},
		{"verifyReceipt", "receipts:read", true}, // receipts declare read only
		{"listTaskReceipts", "receipts:read", true},
		{"appendSessionMessage", "messages:write", false},
		{"getMessage", "messages:read", false},
		{"createPersona", "personas:write", false},
		{"deleteMemory", "memories:write", false},
	} {
		o, ok := ScopeOf(tc.id)
		if !ok {
			t.Errorf("ScopeOf(%q): no such operation", tc.id)
			continue
		}
		if o.Scope != tc.scope || o.Declared != tc.declared {
			t.Errorf("ScopeOf(%q) = %s (declared %v), want %s (declared %v)", tc.id, o.Scope, o.Declared, tc.scope, tc.declared)
		}
	}
	for _, public := range []string{"getProtocolDiscovery", "getAgentCard", "getHealth"} {
		if _, ok := ScopeOf(public); ok {
			t.Errorf("public operation %s has a scope", public)
		}
	}
}

func TestDeclaredScopes(t *testing.T) {
	got, err := DeclaredScopes()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"artifacts:read", "artifacts:write", "events:read", "receipts:read", "sessions:read", "sessions:write", "tasks:read", "tasks:write"}
	if !slices.Equal(got, want) {
		t.Errorf("DeclaredScopes() = %v, want %v", got, want)
	}
	voc, err := Vocabulary()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(want, "messages:write", "personas:read") {
		if !slices.Contains(voc, s) {
			t.Errorf("Vocabulary() lacks %s: %v", s, voc)
		}
	}
	ops, _ := Operations()
	for _, o := range ops {
		if !slices.Contains(voc, o.Scope) {
			t.Errorf("%s needs %s, which Vocabulary() lacks", o.ID, o.Scope)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct{ method, path, id string }{
		{"GET", "/v1/tasks", "listTasks"},
		{"HEAD", "/v1/tasks/t_1", "getTask"},
		{"POST", "/v1/tasks/t_1/cancel", "cancelTask"},
		{"GET", "/v1/events/stream", "streamEvents"},
		{"GET", "/v1/events/ev_1", "getEvent"},
		{"GET", "/v1/sessions/s_1/events/stream", "streamSessionEvents"},
		{"POST", "/v1/receipts/r_1/verify", "verifyReceipt"},
	} {
		o, ok := Match(tc.method, tc.path)
		if !ok || o.ID != tc.id {
			t.Errorf("Match(%s %s) = %q, %v; want %q", tc.method, tc.path, o.ID, ok, tc.id)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1"}, {"GET", "/v1/agent-card"}, {"DELETE", "/v1/tasks/t_1"}, {"GET", "/v1/tasks/t_1/nope"}, {"GET", "/v1/receipt-keys"},
	} {
		if o, ok := Match(tc.method, tc.path); ok {
			t.Errorf("Match(%s %s) = %s, want no operation", tc.method, tc.path, o.ID)
		}
	}
}

func TestParseScope(t *testing.T) {
	s := ParseScope("  tasks:read   sessions:write tasks:read ")
	if got := s.String(); got != "sessions:write tasks:read" {
		t.Errorf("ParseScope(…).String() = %q", got)
	}
	if !s.Has("tasks:read") || s.Has("tasks:write") {
		t.Errorf("Has is wrong: %v", s)
	}
}
