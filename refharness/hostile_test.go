package refharness

import (
	"fmt"
	"strings"
	"testing"
)

func init() {
	msg := map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "x", "visibility": "public"}}}
	persona := func(extra ...any) map[string]any {
		b := map[string]any{"name": "p", "version": "1", "entry_workflow": "w", "description": "d", "autonomy_tier": "suggest", "receipt_policy": "optional"}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	count := func(p *probeEnv, path string) int { return len(p.do("GET", path+"?limit=200", nil).list()) }
	for f, pr := range map[Fault]probe{
		FaultTypeError500: func(p *probeEnv) error {
			r := p.do("POST", "/v1/sessions/"+p.sessionID()+"/tasks", map[string]any{"input": msg, "persona_id": 42})
			return statusIs(r, 400, "a task submit with persona_id 42")
		},
		FaultFutureEnumAccepted: func(p *probeEnv) error {
			r := p.do("POST", "/v1/sessions/"+p.sessionID()+"/messages", map[string]any{"message": map[string]any{"role": "narrator", "parts": []any{}}})
			return statusIs(r, 400, `a message append with role "narrator"`)
		},
		FaultRefusedMessageStored: func(p *probeEnv) error {
			path := "/v1/sessions/" + p.sessionID() + "/messages"
			before := count(p, path)
			p.do("POST", path, map[string]any{"message": map[string]any{"role": 7, "parts": []any{}}})
			if after := count(p, path); after != before {
				return fmt.Errorf("a refused message append changed the session's messages from %d to %d", before, after)
			}
			return nil
		},
		FaultUnknownMemberRefused: func(p *probeEnv) error {
			r := p.do("POST", "/v1/sessions/"+p.sessionID()+"/messages", map[string]any{"message": msg, "conform_extension": true})
			return success(r, "a message append with an unknown member")
		},
		FaultExtTypeError500: func(p *probeEnv) error {
			return statusIs(p.do("POST", "/v1/personas", persona("description", 42)), 400, "a persona create with description 42")
		},
		FaultExtFutureEnumAccepted: func(p *probeEnv) error {
			return statusIs(p.do("POST", "/v1/personas", persona("autonomy_tier", "conform_future")), 400, "a persona create with a future autonomy tier")
		},
		FaultRefusedPersonaStored: func(p *probeEnv) error {
			before := count(p, "/v1/personas")
			p.do("POST", "/v1/personas", persona("version", 7))
			if after := count(p, "/v1/personas"); after != before {
				return fmt.Errorf("a refused persona create changed the persona list from %d to %d", before, after)
			}
			return nil
		},
		FaultExtUnknownMemberRefused: func(p *probeEnv) error {
			r := p.do("POST", "/v1/memories", map[string]any{"scope": "session", "owner_id": p.sessionID(), "content": "x",
				"provenance": map[string]any{}, "conform_extension": true})
			return success(r, "a memory create with an unknown member")
		},
		FaultVerifyTypeError500: func(p *probeEnv) error {
			return statusIs(p.do("POST", "/v1/receipts/receipt_missing/verify", map[string]any{"trust_anchor": 42}), 400, "a verify body with trust_anchor 42")
		},
		FaultReplayTypeError500: func(p *probeEnv) error {
			return statusIs(p.do("POST", "/v1/tasks/task_missing/replay", map[string]any{"mode": 42}), 400, "a replay body with mode 42")
		},
	} {
		probes[f] = pr
	}
}

func success(r resp, what string) error {
	if r.Code/100 != 2 {
		return fmt.Errorf("%s: status %d, want a success; body %s", what, r.Code, r.Raw)
	}
	return nil
}

// The Harness refuses what the OpenAPI document declares invalid, naming
// the member; bodies too deep, with a member twice, or not JSON by their
// Content-Type; and takes members the open schemas do not name.
func TestHostileBodies(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	msgs := "/v1/sessions/" + sess + "/messages"
	text := map[string]any{"type": "text", "text": "x", "visibility": "public"}
	for _, tc := range []struct {
		name, path string
		body       any
		hdr        []string
		status     int
		code       string
		param      string
	}{
		{"an item of the wrong type", "/v1/sessions", `{"workspace_id":"w","memory_ids":[42]}`, nil, 400, "invalid_request", "memory_ids[0]"},
		{"an enum value from a newer version", msgs, map[string]any{"message": map[string]any{"role": "narrator", "parts": []any{text}}}, nil, 400, "invalid_request", "message.role"},
		{"a part without visibility", msgs, `{"message":{"role":"user","parts":[{"type":"text","text":"x"}]}}`, nil, 400, "invalid_request", ""},
		{"a member twice", msgs, `{"message":{"role":"user","role":"user","parts":[]}}`, nil, 400, "invalid_request", "message.role"},
		{"nested too deep", msgs, `{"message":{"role":"user","parts":[],"metadata":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, nil, 400, "invalid_request", ""},
		{"not JSON by its Content-Type", msgs, map[string]any{"message": map[string]any{"role": "user", "parts": []any{text}}}, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", ""},
		{"a number out of range", "/v1/sessions/" + sess + "/truncate", `{"keep_first":-1}`, nil, 400, "invalid_request", "keep_first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, h.do("POST", tc.path, tc.body, tc.hdr...), tc.status, tc.code, tc.param)
		})
	}
	t.Run("unknown members are taken", func(t *testing.T) {
		h.must(201, h.do("POST", msgs, map[string]any{"conform_extension": 1, "message": map[string]any{"role": "user", "parts": []any{text}, "conform_extension": 2}}), "unknown members")
	})
	t.Run("no Content-Type is taken as JSON", func(t *testing.T) {
		h.must(201, h.do("POST", msgs, map[string]any{"message": map[string]any{"role": "user", "parts": []any{text}}}, "-Content-Type", ""), "no Content-Type")
	})
}
