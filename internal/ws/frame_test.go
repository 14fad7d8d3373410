package ws

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The frame-type lists are the frame index of docs/websocket.md: every
// server → client (or both) row in ServerTypes, every client → server (or
// both) row in ClientTypes, in the index's order, and the commands are
// the client frames answered by `result` or `error` other than resume.
func TestTypesAreTheFrameIndex(t *testing.T) {
	b, err := os.ReadFile("../../docs/websocket.md")
	if err != nil {
		t.Fatal(err)
	}
	_, index, ok := strings.Cut(string(b), "## Frame index")
	if !ok {
		t.Fatal("docs/websocket.md has no frame index")
	}
	var server, client, commands []string
	for _, line := range strings.Split(index, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		typ := strings.Trim(strings.TrimSpace(cells[1]), "`")
		dir := strings.TrimSpace(cells[2])
		if dir == "server → client" || dir == "both" {
			server = append(server, typ)
		}
		if dir == "client → server" || dir == "both" {
			client = append(client, typ)
		}
		if dir == "client → server" && strings.TrimSpace(cells[4]) == "`result` or `error`" && typ != TypeResume {
			commands = append(commands, typ)
		}
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"ServerTypes", ServerTypes, server}, {"ClientTypes", ClientTypes, client}, {"CommandTypes", CommandTypes, commands}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want the frame index's %v", c.name, c.got, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	at := time.Unix(1, 0)
	const event = `{"type":"event","event_id":"evt_1","replayed":true,"event":{"id":"evt_1","object":"event","event":"task.started","resource":{"object":"task","id":"t1"},"created_at":"2026-04-25T19:00:01Z","updated_at":"2026-04-25T19:00:01Z","metadata":{},"sequence":1,"payload":{"status":"WORKING"}}}`
	for _, tc := range []struct {
		name     string
		typ      websocket.MessageType
		data     string
		wantType string
		problem  string // a substring of the first problem, "" for none
	}{
		{"a valid event frame", websocket.MessageText, event, TypeEvent, ""},
		{"a binary event frame", websocket.MessageBinary, event, TypeEvent, "binary message"},
		{"not JSON", websocket.MessageText, `not json`, "", "not JSON"},
		{"an array", websocket.MessageText, `[{"type":"ping"}]`, "", "not an object"},
		{"a ready frame missing members", websocket.MessageText, `{"type":"ready","profile":"harn-ws.v1"}`, TypeReady, "missing properties"},
	} {
		f := Judge(Message{Type: tc.typ, Data: []byte(tc.data), ArrivedAt: at})
		switch {
		case f.Type != tc.wantType || !f.At.Equal(at) || string(f.Raw) != tc.data || f.Binary != (tc.typ == websocket.MessageBinary):
			t.Errorf("%s: Judge = %+v", tc.name, f)
		case tc.problem == "" && len(f.Problems) > 0:
			t.Errorf("%s: problems %v, want none", tc.name, f.Problems)
		case tc.problem != "" && (len(f.Problems) == 0 || !strings.Contains(f.Problems[0].Message, tc.problem)):
			t.Errorf("%s: problems %v, want one saying %q", tc.name, f.Problems, tc.problem)
		}
	}
	f := Judge(Message{Type: websocket.MessageText, Data: []byte(event)})
	if f.EventKind() != "task.started" || f.Event()["id"] != "evt_1" || f.Str("event_id") != "evt_1" {
		t.Errorf("the event frame reads kind %q, Event %v", f.EventKind(), f.Event())
	}
}

func TestFrameMembers(t *testing.T) {
	errFrame := Judge(Message{Type: websocket.MessageText, Data: []byte(`{"type":"error","in_reply_to":"c-2","status":409,"error":{"code":"idempotency_key_reused","message":"m","type":"conflict_error"}}`)})
	errFrame.Seq = 4
	if errFrame.Status() != 409 || errFrame.ErrorCode() != "idempotency_key_reused" || errFrame.String() != "frame 4 (error in reply to c-2)" {
		t.Errorf("error frame: status %d code %q name %q", errFrame.Status(), errFrame.ErrorCode(), errFrame)
	}
	odd := Judge(Message{Type: websocket.MessageText, Data: []byte(`{"type":"result","status":"201","heartbeat_interval_ms":1.5,"result":[]}`)})
	if odd.Status() != 0 || odd.Member("result") != nil || odd.Event() != nil || odd.EventKind() != "" {
		t.Errorf("members of the wrong type read as %d %v %v", odd.Status(), odd.Member("result"), odd.Event())
	}
	if _, ok := odd.Int("heartbeat_interval_ms"); ok {
		t.Error("Int of 1.5 is ok")
	}
	if n, ok := Judge(Message{Type: websocket.MessageText, Data: []byte(`{"type":"ready","heartbeat_interval_ms":15000}`)}).Int("heartbeat_interval_ms"); !ok || n != 15000 {
		t.Errorf("Int(15000) = %d, %v", n, ok)
	}
	bin := Judge(Message{Type: websocket.MessageBinary, Data: []byte(`{"type":"input_request","request_id":"r1"}`)})
	bin.Seq = 2
	if bin.String() != "frame 2 (binary, input_request r1)" {
		t.Errorf("binary request frame named %q", bin)
	}
	if s := (Frame{Seq: 1}).String(); s != "frame 1 (not a JSON object)" {
		t.Errorf("a frame that is no object is named %q", s)
	}
	fs := []Frame{{Type: TypeReady}, {Type: TypeEvent, Obj: map[string]any{"event": map[string]any{"id": "e1"}}}, {Type: TypeEvent, Obj: map[string]any{"event": "x"}}, {Type: TypePing}}
	if evs := Events(fs); len(evs) != 2 || evs[0]["id"] != "e1" || evs[1] != nil {
		t.Errorf("Events = %v, want e1 and a hole", evs)
	}
}

func TestAuthFrameAndWays(t *testing.T) {
	f := AuthFrame("c-1", "Bearer k", "v1", "")
	if f["type"] != TypeAuth || f["id"] != "c-1" || f["authorization"] != "Bearer k" || f["protocol_version"] != "v1" || f["last_event_id"] != nil {
		t.Errorf("AuthFrame without a cursor = %v", f)
	}
	if _, ok := f["last_event_id"]; !ok {
		t.Error("AuthFrame leaves last_event_id out, want null")
	}
	if f := AuthFrame("c-1", "Bearer k", "v1", "evt_9"); f["last_event_id"] != "evt_9" {
		t.Errorf("AuthFrame with a cursor = %v", f)
	}
	if ByHeaders.String() != "headers on the upgrade" || ByAuthFrame.String() != "an auth frame" {
		t.Errorf("ways named %q and %q", ByHeaders, ByAuthFrame)
	}
}
