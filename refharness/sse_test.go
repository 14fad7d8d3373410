package refharness

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// sseFrame is one dispatched SSE event, parsed per the WHATWG rules the
// harness uses (LF or CRLF line ends, multi-line data joined with "\n").
type sseFrame struct {
	ID, Event, Data string
	HasID           bool
	Comments        int
}

// readFrames parses frames from r until EOF, n frames, or the context ends.
func readFrames(ctx context.Context, r *bufio.Reader, n int) ([]sseFrame, error) {
	var out []sseFrame
	var cur sseFrame
	var data []string
	for {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if cur.Event != "" || len(data) > 0 {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
				if len(out) == n {
					return out, nil
				}
			}
			cur, data = sseFrame{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			cur.Comments++
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			cur.ID, cur.HasID = value, true
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// openStream opens an SSE stream on a live test server.
func openStream(t *testing.T, ctx context.Context, base, path, lastID string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: status %d: %s", path, res.StatusCode, b)
	}
	return res, bufio.NewReader(res.Body)
}

func checkFrames(t *testing.T, frames []sseFrame) {
	t.Helper()
	for i, f := range frames {
		var e map[string]any
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatalf("frame %d data is not JSON: %q", i, f.Data)
		}
		if !f.HasID || f.ID != e["id"] || f.Event != e["event"] {
			t.Errorf("frame %d: id %q event %q, data id %v event %v", i, f.ID, f.Event, e["id"], e["event"])
		}
	}
}

func TestTaskStreamReplayResumeAndEnd(t *testing.T) {
	h := newHarness(t, Options{})
	srv := httptest.NewServer(h.s)
	defer srv.Close()
	sess := h.session()
	id := h.submit(sess, []map[string]any{step("emit", "count", 3)}).str("id")
	h.waitStatus(id, StatusCompleted)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	res, br := openStream(t, ctx, srv.URL, "/v1/tasks/"+id+"/stream", "")
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q", ct)
	}
	all, err := readFrames(ctx, br, -1) // the task is over: the stream must end by itself
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	checkFrames(t, all)
	var kinds []string
	for _, f := range all {
		kinds = append(kinds, f.Event)
	}
	want := []string{"task.submitted", "task.started", "agent.message", "agent.message", "agent.message", "task.completed"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("stream events = %v, want %v", kinds, want)
	}

	_, br2 := openStream(t, ctx, srv.URL, "/v1/tasks/"+id+"/stream", all[2].ID)
	rest, err := readFrames(ctx, br2, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 3 || rest[0].ID != all[3].ID || rest[2].ID != all[5].ID {
		t.Errorf("resume after %s got %v, want the last 3 frames", all[2].ID, rest)
	}

	_, br3 := openStream(t, ctx, srv.URL, "/v1/tasks/"+id+"/stream", "event_999999999999")
	errs, err := readFrames(ctx, br3, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 1 || errs[0].Event != "error" || !strings.Contains(errs[0].Data, `"cursor_expired"`) {
		t.Errorf("expired cursor frames = %v, want one error frame with cursor_expired", errs)
	}
}

func TestSessionStreamLive(t *testing.T) {
	h := newHarness(t, Options{KeepAlive: 20 * time.Millisecond})
	srv := httptest.NewServer(h.s)
	defer srv.Close()
	sess := h.session()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, br := openStream(t, ctx, srv.URL, "/v1/sessions/"+sess+"/events/stream", "")
	first, err := readFrames(ctx, br, 1)
	if err != nil || len(first) != 1 || first[0].Event != "session.created" {
		t.Fatalf("first frame = %v, %v; want session.created", first, err)
	}
	h.submit(sess, []map[string]any{step("emit", "count", 2), step("complete")})
	got, err := readFrames(ctx, br, 6)
	if err != nil {
		t.Fatalf("live frames: %v (got %v)", err, got)
	}
	checkFrames(t, got)
	if got[0].Event != "task.submitted" || got[4].Event != "task.completed" || got[5].Event != "receipt.issued" {
		t.Errorf("live events = %v", got)
	}
	// An idle stream sends keep-alive comments.
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Errorf("idle stream sent %q, %v; want a keep-alive comment", line, err)
	}
}

func TestGlobalStreamFilters(t *testing.T) {
	h := newHarness(t, Options{})
	srv := httptest.NewServer(h.s)
	defer srv.Close()
	s1, s2 := h.session(), h.session()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, br := openStream(t, ctx, srv.URL, "/v1/events/stream?session_id="+s2, "")
	h.submit(s1, nil)
	id := h.submit(s2, nil).str("id")
	frames, err := readFrames(ctx, br, 5) // session.created + 4 task events
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, frames)
	for _, f := range frames[1:] {
		if !strings.Contains(f.Data, id) {
			t.Errorf("filtered stream carried a foreign event: %s", f.Data)
		}
	}
}

func TestStreamRetention(t *testing.T) {
	// 5 retained: the task's last 4 events and the session's receipt.issued.
	h := newHarness(t, Options{EventRetention: 5})
	srv := httptest.NewServer(h.s)
	defer srv.Close()
	sess := h.session()
	id := h.submit(sess, []map[string]any{step("emit", "count", 6)}).str("id")
	h.waitStatus(id, StatusCompleted)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, br := openStream(t, ctx, srv.URL, "/v1/tasks/"+id+"/stream", "")
	fs, err := readFrames(ctx, br, -1)
	if err != nil || len(fs) != 4 || fs[3].Event != "task.completed" {
		t.Fatalf("retained stream = %v, %v; want the last 4 events", fs, err)
	}
	_, br2 := openStream(t, ctx, srv.URL, "/v1/tasks/"+id+"/stream", eventID(2))
	errs, _ := readFrames(ctx, br2, -1)
	if len(errs) != 1 || errs[0].Event != "error" {
		t.Errorf("expired cursor frames = %v, want one error frame", errs)
	}
	h.s.mu.RLock()
	n := len(h.s.st.byTask[id])
	h.s.mu.RUnlock()
	if n != 4 {
		t.Errorf("task index holds %d positions, want the 4 retained", n)
	}
}

// TestStreamFirstBlockIsAnEvent reads the first block of a session stream
// and of a task stream the way the upstream runner does
// (docs/interpretations.md, sse-first-block): every block up to a blank
// line counts as a frame, and the first must carry id, event and data. So
// no comment may come before the first event frame.
func TestStreamFirstBlockIsAnEvent(t *testing.T) {
	h := newHarness(t, Options{})
	srv := httptest.NewServer(h.s)
	defer srv.Close()
	sess := h.session()
	task := h.submit(sess, nil).str("id")
	for _, path := range []string{"/v1/sessions/" + sess + "/events/stream", "/v1/tasks/" + task + "/stream"} {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		_, br := openStream(t, ctx, srv.URL, path, "")
		var block []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", path, err, block)
			}
			if line == "\n" {
				break
			}
			block = append(block, strings.TrimSuffix(line, "\n"))
		}
		cancel()
		has := map[string]bool{}
		for _, l := range block {
			if k, _, ok := strings.Cut(l, ":"); ok {
				has[k] = true
			}
		}
		if !has["id"] || !has["event"] || !has["data"] || has[""] {
			t.Errorf("%s: first block %q; want an event frame (id, event, data) and no comment", path, block)
		}
	}
}
