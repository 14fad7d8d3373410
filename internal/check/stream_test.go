package check

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/sse"
)

func frame(raw string) sse.Frame {
	rd := sse.NewReader(strings.NewReader(raw), sse.Options{})
	f, err := rd.Next()
	if err != nil {
		panic(err)
	}
	return f
}

func TestEventStream(t *testing.T) {
	ok := &client.Response{Method: "GET", URL: "http://h/v1/tasks/t/stream", Status: 200, Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}}
	if err := EventStream(ok); err != nil {
		t.Errorf("EventStream(ok) = %v", err)
	}
	plain := &client.Response{Method: "GET", URL: "http://h/v1/tasks/t/stream", Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}}
	if err := EventStream(plain); err == nil || !strings.Contains(err.Error(), `Content-Type = "text/plain"`) {
		t.Errorf("EventStream(text/plain) = %v", err)
	}
	if err := EventStream(resp(404, `{}`)); err == nil || !strings.Contains(err.Error(), "status = 404") {
		t.Errorf("EventStream(404) = %v", err)
	}
}

func TestFrames(t *testing.T) {
	good := "id: e1\r\nevent: task.started\r\n: keep-alive\r\ndata: " + evJSON("e1", "task.started", 1) + "\r\n\r\n"
	f := frame(good)
	if err := FrameFields("s", f); err != nil {
		t.Errorf("FrameFields(good) = %v", err)
	}
	if e, err := FrameEvent("s", f); err != nil || e.ID != "e1" {
		t.Errorf("FrameEvent(good) = %+v, %v", e, err)
	}
	// Multi-line data joins with LF, which is JSON whitespace.
	ml := "id: e1\nevent: k\ndata: {\"id\":\"e1\",\"event\":\"k\",\ndata: \"resource\":{\"object\":\"task\",\"id\":\"t\"},\"created_at\":\"x\",\"sequence\":0,\"payload\":{}}\n\n"
	if _, err := FrameEvent("s", frame(ml)); err != nil {
		t.Errorf("FrameEvent(multi-line) = %v", err)
	}
	if err := FrameFields("s", frame("event: k\ndata: {}\n\n")); err == nil || !strings.Contains(err.Error(), "no id field") {
		t.Errorf("FrameFields(no id) = %v", err)
	}
	if err := FrameFields("s", frame("id: 1\ndata: {}\n\n")); err == nil || !strings.Contains(err.Error(), "no event field") {
		t.Errorf("FrameFields(no event) = %v", err)
	}
	for _, tc := range []struct{ raw, want string }{
		{"id: e1\nevent: k\ndata: k e1\n\n", "not a JSON Event"},
		{"id: e2\nevent: k\ndata: " + evJSON("e1", "k", 0) + "\n\n", `frame id "e2" carries event "e1"`},
		{"id: e1\nevent: other\ndata: " + evJSON("e1", "k", 0) + "\n\n", `frame event "other" carries an event of kind "k"`},
	} {
		if _, err := FrameEvent("s", frame(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FrameEvent(%q) = %v, want %q", tc.raw, err, tc.want)
		}
	}
	if id := FrameID(frame("event: k\ndata: " + evJSON("e7", "k", 0) + "\n\n")); id != "e7" {
		t.Errorf("FrameID(no id field) = %q, want the data's id", id)
	}
	if id := FrameID(frame("id: e8\nevent: k\ndata: nope\n\n")); id != "e8" {
		t.Errorf("FrameID(bad data) = %q, want the frame id", id)
	}
}

func TestCursorExpiredFrame(t *testing.T) {
	for _, tc := range []struct{ data, form string }{
		{`{"error":{"code":"cursor_expired","message":"m","type":"request_error"}}`, "envelope"},
		{`{"id":"e1","object":"event","event":"error","payload":{"error":{"code":"cursor_expired","message":"m","type":"request_error"}}}`, "event with the error in its payload"},
		{`{"id":"e1","object":"event","event":"error","payload":{"code":"cursor_expired","message":"m","type":"request_error"}}`, "event with the error in its payload"},
		{`{"code":"cursor_expired","message":"m","type":"request_error"}`, "bare error object"},
	} {
		raw := "event: error\ndata: " + tc.data + "\n\n"
		if err := CursorExpiredFrame("s", frame(raw)); err != nil {
			t.Errorf("CursorExpiredFrame(%s) = %v", tc.data, err)
		}
		if _, form, _ := FrameError("s", frame(raw)); form != tc.form {
			t.Errorf("FrameError(%s) form = %q, want %q", tc.data, form, tc.form)
		}
	}
	for _, tc := range []struct{ raw, want string }{
		{"id: 1\nevent: task.started\ndata: {}\n\n", `is event "task.started"`},
		{"event: error\ndata: oops\n\n", "not JSON"},
		{"event: error\ndata: {\"event\":\"error\",\"payload\":{}}\n\n", "not an error envelope"},
		{"event: error\ndata: {\"error\":{\"code\":\"internal_error\",\"message\":\"m\",\"type\":\"server_error\"}}\n\n", `"internal_error", want "cursor_expired"`},
	} {
		if err := CursorExpiredFrame("s", frame(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CursorExpiredFrame(%q) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestResumed(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	for _, ok := range [][]string{{"c", "d"}, {"c", "d", "e"}, {"x", "c", "d"}} {
		if err := Resumed("s", all, "b", ok); err != nil {
			t.Errorf("Resumed(%v) = %v", ok, err)
		}
	}
	if err := Resumed("s", all, "d", nil); err != nil {
		t.Errorf("Resumed(after last) = %v", err)
	}
	for _, tc := range []struct {
		got  []string
		want string
	}{
		{[]string{"b", "c", "d"}, "re-sent the cursor event itself (b)"},
		{[]string{"a", "b", "c", "d"}, "re-sent an event before it (a)"},
		{[]string{"c"}, "delivered 1 of the 2 events after b; missing d"},
		{[]string{"d"}, "missing"},
		{[]string{"d", "c"}, "in that order"},
		{[]string{"c", "d", "d"}, "delivered event d twice"},
	} {
		if err := Resumed("s", all, "b", tc.got); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resumed(%v) = %v, want %q", tc.got, err, tc.want)
		}
	}
}

func TestFeedEvent(t *testing.T) {
	ev := func(id, kind string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(evJSON(id, kind, 1)), &m); err != nil {
			panic(err)
		}
		return m
	}
	if e, err := FeedEvent("s", client.FeedEvent{Event: ev("e1", "k"), ID: "e1", Kind: "k"}); err != nil || e.ID != "e1" || e.Kind != "k" {
		t.Errorf("FeedEvent(good) = %+v, %v", e, err)
	}
	// A WebSocket event frame names no kind; an SSE block may name no id.
	if _, err := FeedEvent("s", client.FeedEvent{Event: ev("e1", "k")}); err != nil {
		t.Errorf("FeedEvent(no framing) = %v", err)
	}
	for _, tc := range []struct {
		fe   client.FeedEvent
		want string
	}{
		{client.FeedEvent{Problem: client.ErrServerError, Data: []byte(`{"error":{}}`)}, "not an Event: the server sent an error"},
		{client.FeedEvent{Problem: errors.New("not a JSON object"), Data: []byte("nope")}, `not an Event: not a JSON object (data "nope")`},
		{client.FeedEvent{Event: map[string]any{"id": "e1"}}, "not an Event: event e1: event is"},
		{client.FeedEvent{Event: ev("e1", "k"), ID: "e2"}, `id "e2" carries event "e1"`},
		{client.FeedEvent{Event: ev("e1", "k"), Kind: "other"}, `event "other" carries an event of kind "k"`},
	} {
		if _, err := FeedEvent("s", tc.fe); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FeedEvent(%+v) = %v, want %q", tc.fe, err, tc.want)
		}
	}
}
