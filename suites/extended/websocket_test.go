package extended

import (
	"slices"
	"testing"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/ws"
)

func TestWSURLsIn(t *testing.T) {
	doc := map[string]any{"capabilities": map[string]any{"websocket": true}, "links": []any{"ws://a.example/x", map[string]any{"u": "WSS://b.example/y"}},
		"rest": "https://c.example", "n": 3}
	if got := wsURLsIn(doc); !slices.Equal(got, []string{"ws://a.example/x", "WSS://b.example/y"}) {
		t.Errorf("wsURLsIn = %v", got)
	}
}

type sentTypes map[string]string

func (s sentTypes) SentType(id string) string { return s[id] }

// Each schema problem goes to the requirement of its frame's type.
func TestFrameReq(t *testing.T) {
	sent := sentTypes{"c-1": "user_message", "c-2": "resume", "c-3": "approval_response"}
	frame := func(typ string, kv ...string) ws.Frame {
		obj := map[string]any{"type": typ}
		for i := 0; i+1 < len(kv); i += 2 {
			obj[kv[i]] = kv[i+1]
		}
		return ws.Frame{Type: typ, Obj: obj}
	}
	for _, tc := range []struct {
		f    ws.Frame
		loc  string
		want string
	}{
		{frame("ready"), "", reqWSOffer},
		{frame("ready"), "/heartbeat_interval_ms", reqWSBeat},
		{frame("event"), "/event/payload", reqWSEvents},
		{frame("event"), "/replayed", reqWSReplayed},
		{frame("input_request"), "/prompt", reqWSRequests},
		{frame("authorization_request"), "/replayed", reqWSReplayed},
		{frame("approval_request"), "/input", reqWSHost},
		{frame("result", "in_reply_to", "c-1"), "/status", reqWSMessage},
		{frame("error", "in_reply_to", "c-2"), "/error", reqWSResume},
		{frame("result", "in_reply_to", "c-3"), "/result", reqWSHost},
		{frame("error"), "/error/code", reqWSOffer},
		{frame("error", "in_reply_to", "unknown"), "", reqWSOffer},
		{frame("pong"), "", reqWSBeat},
		{ws.Frame{}, "", reqWSText},
	} {
		if got := frameReq(sent, tc.f, schemas.Problem{Location: tc.loc}); got != tc.want {
			t.Errorf("frameReq(%v at %q) = %s, want %s", tc.f.Obj, tc.loc, got, tc.want)
		}
	}
}

func TestReplayedIs(t *testing.T) {
	fs := []ws.Frame{
		{Seq: 1, Type: "ready", Obj: map[string]any{"type": "ready"}},
		{Seq: 2, Type: "event", Obj: map[string]any{"type": "event", "replayed": true}},
		{Seq: 3, Type: "event", Obj: map[string]any{"type": "event", "replayed": false}},
		{Seq: 4, Type: "input_request", Obj: map[string]any{"type": "input_request"}},
		{Seq: 5, Type: "ping", Obj: map[string]any{"type": "ping", "replayed": false}},
	}
	if got := replayedIs(fs, true); len(got) != 2 {
		t.Errorf("replayedIs(true) = %v, want frames 3 and 4 (false, missing)", got)
	}
	if got := replayedIs(fs, false); len(got) != 2 {
		t.Errorf("replayedIs(false) = %v, want frames 2 and 4 (true, missing)", got)
	}
}

func TestAfterCursor(t *testing.T) {
	evs := []map[string]any{{"id": "e1"}, {"id": "e2"}, {"id": "e3"}}
	if got, ok := afterCursor(evs, "e1"); !ok || len(got) != 2 || got[0]["id"] != "e2" {
		t.Errorf("afterCursor(e1) = %v, %v", got, ok)
	}
	if got, ok := afterCursor(evs, "e3"); !ok || len(got) != 0 {
		t.Errorf("afterCursor(e3) = %v, %v", got, ok)
	}
	if _, ok := afterCursor(evs, "e9"); ok {
		t.Error("afterCursor of an unknown cursor found it")
	}
}
