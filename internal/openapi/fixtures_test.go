package openapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Builders of valid protocol objects; tests change one thing at a time with
// with().

const ts = "2026-04-25T19:00:00Z"

func envelopeOf(object, id string) map[string]any {
	return map[string]any{"id": id, "object": object, "created_at": ts, "updated_at": ts, "metadata": map[string]any{}}
}

func merge(a map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return a
}

func textPart() map[string]any {
	return map[string]any{"type": "text", "text": "hi", "visibility": "public"}
}

func msgObj() map[string]any {
	return merge(envelopeOf("message", "msg_1"), "role", "user", "parts", []any{textPart()}, "session_id", "ses_1", "task_id", nil)
}

func task() map[string]any {
	return merge(envelopeOf("task", "task_1"), "session_id", "ses_1", "workspace_id", "ws_1", "status", "SUBMITTED",
		"input", msgObj(), "created_by", "actor_1", "persona_id", nil, "started_at", nil, "completed_at", nil,
		"failure", nil, "receipt_id", nil)
}

func session() map[string]any {
	return merge(envelopeOf("session", "ses_1"), "workspace_id", "ws_1", "state", "ACTIVE", "transcript", map[string]any{"turns": 1},
		"expires_at", nil)
}

func artifact() map[string]any {
	return merge(envelopeOf("artifact", "art_1"), "kind", "log", "mime_type", "text/plain", "uri", nil, "visibility", "public",
		"sha256", strings.Repeat("ab", 32))
}

func outcome() map[string]any {
	return merge(envelopeOf("outcome", "out_1"), "task_id", "task_1", "status", "SUCCEEDED", "summary", "done",
		"messages", []any{msgObj()}, "artifacts", []any{artifact()}, "failure", nil)
}

func event() map[string]any {
	return merge(envelopeOf("event", "evt_1"), "event", "task.started", "resource", map[string]any{"object": "task", "id": "task_1"},
		"sequence", 1, "payload", map[string]any{"status": "WORKING"}, "task_id", "task_1", "replayed", false, "replay", nil)
}

func list(items ...any) map[string]any {
	if items == nil {
		items = []any{}
	}
	return map[string]any{"object": "list", "data": items, "page": map[string]any{"has_more": false, "next_cursor": nil}}
}

func errorEnv(code, typ string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": "m", "type": typ, "param": nil, "details": map[string]any{}}}
}

func discovery() map[string]any {
	return map[string]any{"object": "protocol_discovery", "protocol_family": "harn_agents_protocol",
		"current_version": "agents-protocol-2026-04-25", "supported_versions": []any{"agents-protocol-2026-04-25"},
		"capabilities": map[string]any{"rest": true, "sse": true, "websocket": false, "receipts": true, "replay": false}}
}

func a2aCard() map[string]any {
	return map[string]any{"name": "agent", "description": "d", "version": "1",
		"supportedInterfaces": []any{map[string]any{"url": "https://h.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": true}, "defaultInputModes": []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
		"skills": []any{map[string]any{"id": "s", "name": "s", "description": "d", "tags": []any{}}}}
}

func agentCard() map[string]any {
	return merge(envelopeOf("harn_agent_card", "card_1"), "name", "agent", "description", "d",
		"protocol_version", "agents-protocol-2026-04-25", "a2a_card", a2aCard(), "skills", []any{})
}

// with returns a deep copy of v with the member at the slash-separated path
// set to val, or deleted when val is del.
func with(v map[string]any, path string, val any) map[string]any {
	cp := jsonv.Copy(v).(map[string]any)
	toks := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var cur any = cp
	for _, t := range toks[:len(toks)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			i, _ := strconv.Atoi(t)
			cur = c[i]
		}
	}
	last := toks[len(toks)-1]
	switch c := cur.(type) {
	case map[string]any:
		if val == del {
			delete(c, last)
		} else {
			c[last] = val
		}
	case []any:
		i, _ := strconv.Atoi(last)
		c[i] = val
	}
	return cp
}

type deleted struct{}

var del any = deleted{}

func js(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
