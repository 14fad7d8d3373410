package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/internal/ws"
)

// readEvent calls ReadEvent with a deadline far above need.
func readEvent(t *testing.T, f Feed) (FeedEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.ReadEvent(ctx)
}

// A silent feed costs the caller's deadline and stays usable.
func wantTimeout(t *testing.T, f Feed, transport string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := f.ReadEvent(ctx)
	var we *WaitError
	if !errors.As(err, &we) || !we.Timeout() || we.Transport != transport || !errors.Is(err, ErrStreamTimeout) {
		t.Fatalf("ReadEvent on a silent %s feed = %v, want a timed-out WaitError", transport, err)
	}
}

const sseEvent = `{"id":"evt_1","object":"event","event":"task.started","resource":{"object":"task","id":"t1"},"sequence":1,"payload":{"n":1.50}}`

func TestStreamIsAFeed(t *testing.T) {
	release := make(chan struct{})
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keep-alive\n\nid: evt_1\nevent: task.started\ndata: "+sseEvent+"\n\n"+
			"data: not json\n\n"+
			"data: {\"a\":1} {\"b\":2}\n\n"+
			"event: error\ndata: {\"error\":{\"code\":\"cursor_expired\"}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), "")
	s, err := c.Stream(context.Background(), Request{Path: "/v1/tasks/t1/stream"})
	if err != nil {
		t.Fatal(err)
	}
	var f Feed = s
	defer f.Close()
	fe, err := readEvent(t, f)
	if err != nil || fe.Problem != nil || fe.ID != "evt_1" || fe.Kind != "task.started" || fe.Event["id"] != "evt_1" || fe.At.IsZero() {
		t.Fatalf("first ReadEvent = %+v, %v; want evt_1 decoded", fe, err)
	}
	if n := fe.Event["payload"].(map[string]any)["n"]; n != any(json.Number("1.50")) {
		t.Errorf("payload.n = %#v, want the number as written", n)
	}
	for _, want := range []string{"not a JSON object", "data after the JSON object"} {
		fe, err := readEvent(t, f)
		if err != nil || fe.Event != nil || fe.Problem == nil || !strings.Contains(fe.Problem.Error(), want) || errors.Is(fe.Problem, ErrServerError) {
			t.Errorf("ReadEvent = %+v, %v; want a problem saying %q", fe, err, want)
		}
	}
	fe, err = readEvent(t, f)
	if err != nil || !errors.Is(fe.Problem, ErrServerError) || !strings.Contains(string(fe.Data), "cursor_expired") {
		t.Errorf("ReadEvent of an error block = %+v, %v; want ErrServerError with its data", fe, err)
	}
	wantTimeout(t, f, TransportSSE)
	close(release)
	_, err = readEvent(t, f)
	var we *WaitError
	if !errors.As(err, &we) || we.Timeout() || !errors.Is(err, io.EOF) || we.Path != "/v1/tasks/t1/stream" || !strings.Contains(err.Error(), "the SSE stream /v1/tasks/t1/stream ended first") {
		t.Errorf("ReadEvent after the server ended the stream = %v, want a WaitError ending with io.EOF", err)
	}
}

func TestStreamFeedOfAnAnswerThatIsNoStream(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}), "")
	s, err := c.Stream(context.Background(), Request{Path: "/v1/tasks/t1/stream"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = readEvent(t, s)
	var we *WaitError
	if !errors.As(err, &we) || we.Timeout() || !errors.Is(err, ErrNotEventStream) {
		t.Errorf("ReadEvent of a 404 = %v, want a WaitError ending with ErrNotEventStream", err)
	}
}

func TestWSSessionIsAFeed(t *testing.T) {
	c := wsServer(t, func(ctx context.Context, conn *websocket.Conn) {
		write(ctx, conn, websocket.MessageText, readyFrame)
		write(ctx, conn, websocket.MessageText, eventFrame)
		m := read(ctx, t, conn) // a user_message
		write(ctx, conn, websocket.MessageText, `{"type":"error","in_reply_to":"`+m["id"].(string)+`","status":404,"error":{"code":"resource_not_found","message":"m","type":"not_found_error"}}`)
		write(ctx, conn, websocket.MessageText, `{"type":"event","event_id":"evt_2","replayed":false,"event":"not an object"}`)
		write(ctx, conn, websocket.MessageBinary, strings.Replace(eventFrame, "evt_1", "evt_3", 2))
		write(ctx, conn, websocket.MessageText, `{"type":"ping","id":"s-1"}`)
		read(ctx, t, conn) // the pong
		write(ctx, conn, websocket.MessageText, `{"type":"error","status":410,"error":{"code":"cursor_expired","message":"m","type":"invalid_request_error"}}`)
		// The feed stays open until the close: a silent wait first.
		read(ctx, t, conn)
		conn.Close(websocket.StatusCode(4410), "cursor_expired")
	})
	ctx := context.Background()
	s, _, err := c.OpenWS(ctx, WSDial{Path: "/v1/tasks/t1/stream"})
	if err != nil {
		t.Fatal(err)
	}
	var f Feed = s
	defer f.Close()
	fe, err := readEvent(t, f)
	if err != nil || fe.Problem != nil || fe.ID != "evt_1" || fe.Kind != "" || fe.Event["event"] != "task.started" {
		t.Fatalf("first ReadEvent = %+v, %v; want evt_1", fe, err)
	}
	if err := s.Send(ctx, map[string]any{"type": ws.TypeUserMessage, "id": s.NewID(), "session_id": "s9"}); err != nil {
		t.Fatal(err)
	}
	// The command's error answer, the event frame without an Event object
	// and the ping are passed over; the binary event frame is read for
	// what it says (its framing is EXT-WS-003's).
	fe, err = readEvent(t, f)
	if err != nil || fe.ID != "evt_3" || fe.Event["id"] != "evt_3" {
		t.Fatalf("second ReadEvent = %+v, %v; want the binary frame's evt_3", fe, err)
	}
	fe, err = readEvent(t, f)
	if err != nil || !errors.Is(fe.Problem, ErrServerError) || fe.Event != nil || !strings.Contains(string(fe.Data), "cursor_expired") {
		t.Fatalf("third ReadEvent = %+v, %v; want the connection-level error frame", fe, err)
	}
	wantTimeout(t, f, TransportWebSocket)
	if err := s.Send(ctx, map[string]any{"type": ws.TypePing, "id": s.NewID()}); err != nil {
		t.Fatal(err)
	}
	_, err = readEvent(t, f)
	var we *WaitError
	if !errors.As(err, &we) || we.Timeout() || !we.Closed || we.Code != 4410 || we.Reason != "cursor_expired" {
		t.Errorf("ReadEvent after the server's close = %v, want a WaitError naming close 4410", err)
	}
	// Await keeps positions of its own: every frame is still there.
	if n := len(s.Frames()); n != 7 {
		t.Errorf("the session holds %d frames, want 7", n)
	}
}

// The two ways in: headers on the upgrade (with the cursor as
// Last-Event-ID), or a browser's upgrade and then the auth frame, which
// OpenWS sends and names.
func TestOpenWSWays(t *testing.T) {
	type upgrade struct {
		auth, version, cursor string
		first                 map[string]any
	}
	got := make(chan upgrade, 4)
	c := wsServerWithRequest(t, func(ctx context.Context, r *http.Request, conn *websocket.Conn) {
		u := upgrade{auth: r.Header.Get("Authorization"), version: r.Header.Get(VersionHeader), cursor: r.Header.Get("Last-Event-ID")}
		if u.auth == "" {
			u.first = read(ctx, t, conn)
		}
		got <- u
		drain(ctx, conn)
	})
	ctx := context.Background()
	for _, tc := range []struct {
		d    WSDial
		want upgrade
	}{
		{WSDial{Path: "/v1/tasks/t1/stream", Cursor: "evt_4"}, upgrade{auth: "Bearer " + key, version: "v-test", cursor: "evt_4"}},
		{WSDial{Path: "/v1/tasks/t1/stream", Version: "v-old"}, upgrade{auth: "Bearer " + key, version: "v-old"}},
		{WSDial{Path: "/v1/tasks/t1/stream", Way: ws.ByAuthFrame, Cursor: "evt_4"},
			upgrade{first: map[string]any{"type": "auth", "id": "c-1", "authorization": "Bearer " + key, "protocol_version": "v-test", "last_event_id": "evt_4"}}},
		{WSDial{Path: "/v1/tasks/t1/stream", Way: ws.ByAuthFrame, Authorization: "Bearer other", Version: "v-old"},
			upgrade{first: map[string]any{"type": "auth", "id": "c-1", "authorization": "Bearer other", "protocol_version": "v-old", "last_event_id": nil}}},
	} {
		s, resp, err := c.OpenWS(ctx, tc.d)
		if err != nil || resp.Status != http.StatusSwitchingProtocols {
			t.Fatalf("OpenWS(%+v) = %v, %v", tc.d, resp, err)
		}
		u := <-got
		if u.auth != tc.want.auth || u.version != tc.want.version || u.cursor != tc.want.cursor || !sameFrame(u.first, tc.want.first) {
			t.Errorf("OpenWS(%+v): the server got %+v, want %+v", tc.d, u, tc.want)
		}
		if want := map[bool]string{true: "c-1"}[tc.d.Way == ws.ByAuthFrame]; s.AuthID != want {
			t.Errorf("OpenWS(%+v): AuthID %q, want %q", tc.d, s.AuthID, want)
		}
		s.Close()
	}
}

func sameFrame(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
