package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/sse"
)

// EventStream checks that a stream was answered 200 text/event-stream.
func EventStream(resp *client.Response) error {
	if resp.Status != 200 {
		return fmt.Errorf("%s: status = %d, want 200 with a text/event-stream%s", resp, resp.Status, bodyHint(resp))
	}
	if ct := resp.Header.Get("Content-Type"); !client.IsEventStream(ct) {
		return fmt.Errorf("%s: Content-Type = %q, want text/event-stream", resp, ct)
	}
	return nil
}

// FrameFields checks the framing of a block that carries data: it has an
// id field and a non-empty event field. (A block a browser would not
// dispatch — comments, keep-alives — is not an event frame and is never
// judged.)
func FrameFields(where string, f sse.Frame) error {
	var missing []string
	if !f.HasID || f.ID == "" {
		missing = append(missing, "id")
	}
	if f.Event == "" {
		missing = append(missing, "event")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: a data frame has no %s field; want id, event and data on every event frame (frame %q)", where, strings.Join(missing, " and no "), rawHint(f))
	}
	return nil
}

// FrameEvent decodes a data frame's Event and checks that it is the frame's
// event: same id (when the frame has one) and same kind (when the frame
// names one). The framing itself is FrameFields' business.
func FrameEvent(where string, f sse.Frame) (Event, error) {
	e, err := DecodeEventJSON([]byte(f.Data))
	if err != nil {
		return e, fmt.Errorf("%s: frame data is not a JSON Event: %v (frame %q)", where, err, rawHint(f))
	}
	if f.HasID && f.ID != "" && f.ID != e.ID {
		return e, fmt.Errorf("%s: frame id %q carries event %q; want the frame id to be the event's id", where, f.ID, e.ID)
	}
	if f.Event != "" && f.Event != e.Kind {
		return e, fmt.Errorf("%s: frame event %q carries an event of kind %q; want the same kind", where, f.Event, e.Kind)
	}
	return e, nil
}

// FeedEvent is FrameEvent for any transport's feed (client.Feed): the
// unit's Event, which must be the one its framing names (same id when the
// framing gives one, same kind when it names one).
func FeedEvent(where string, fe client.FeedEvent) (Event, error) {
	if fe.Problem != nil {
		return Event{}, fmt.Errorf("%s: not an Event: %v (data %q)", where, fe.Problem, snippet(fe.Data))
	}
	e, err := DecodeEvent(fe.Event)
	if err != nil {
		return e, fmt.Errorf("%s: not an Event: %v (data %q)", where, err, snippet(fe.Data))
	}
	if fe.ID != "" && fe.ID != e.ID {
		return e, fmt.Errorf("%s: id %q carries event %q; want the id to be the event's id", where, fe.ID, e.ID)
	}
	if fe.Kind != "" && fe.Kind != e.Kind {
		return e, fmt.Errorf("%s: event %q carries an event of kind %q; want the same kind", where, fe.Kind, e.Kind)
	}
	return e, nil
}

// FrameID is the event id a frame stands for: its id field, or else its
// data's id (so one broken framing rule does not hide the stream's content).
func FrameID(f sse.Frame) string {
	if f.HasID && f.ID != "" {
		return f.ID
	}
	if e, err := DecodeEventJSON([]byte(f.Data)); err == nil || e.ID != "" {
		return e.ID
	}
	return ""
}

// CursorExpiredFrame checks the error frame a stream sends for an unusable
// Last-Event-ID: event "error" and data that is an error envelope with code
// cursor_expired.
func CursorExpiredFrame(where string, f sse.Frame) error {
	if f.Event != "error" {
		return fmt.Errorf("%s: the first data frame is event %q; want event: error with code cursor_expired, not a stream that pretends to be continuous (frame %q)", where, f.Event, rawHint(f))
	}
	e, _, err := FrameError(where, f)
	if err != nil {
		return err
	}
	if e.Code != "cursor_expired" {
		return fmt.Errorf("%s: the error frame's error.code = %q, want \"cursor_expired\"", where, e.Code)
	}
	return nil
}

func rawHint(f sse.Frame) string {
	b := f.Raw
	if len(b) > 160 {
		return string(b[:160]) + "…"
	}
	return string(b)
}

// Resumed checks the event ids a stream resumed from cursor delivered,
// against the resource's full event list (all, in order): nothing at or
// before the cursor again, then every later event, in order. Ids the list
// does not hold (events newer than the list read) are not judged.
func Resumed(where string, all []string, cursor string, got []string) error {
	at := -1
	for i, id := range all {
		if id == cursor {
			at = i
		}
	}
	if at < 0 {
		return fmt.Errorf("%s: cursor %s is not among the events the REST event list holds; want the stream's event ids to be the events' ids", where, cursor)
	}
	before := map[string]bool{}
	for _, id := range all[:at+1] {
		before[id] = true
	}
	want := all[at+1:]
	var known []string
	for _, id := range got {
		if before[id] {
			what := "an event before it"
			if id == cursor {
				what = "the cursor event itself"
			}
			return fmt.Errorf("%s: the resumed stream re-sent %s (%s); want only the events after %s (got %v)", where, what, id, cursor, short(got))
		}
		if slices.Contains(want, id) {
			known = append(known, id)
		}
	}
	seen := map[string]bool{}
	for _, id := range known {
		if seen[id] {
			return fmt.Errorf("%s: the resumed stream delivered event %s twice", where, id)
		}
		seen[id] = true
	}
	var missing []string
	for _, id := range want {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: the resumed stream delivered %d of the %d events after %s; missing %s (got %v)", where, len(known), len(want), cursor, strings.Join(missing, ", "), short(got))
	}
	if !slices.Equal(known, want) {
		return fmt.Errorf("%s: after %s the resumed stream delivered %v, want %v in that order", where, cursor, short(known), short(want))
	}
	return nil
}

// FrameError decodes the error an `event: error` frame carries
// (docs/interpretations.md#stream-error-frame). The preferred data is the
// error envelope {"error": {...}}; also accepted, and named in form, are an
// Event of kind error whose payload holds the envelope or the bare error,
// and the bare error object {code, message, type} itself.
func FrameError(where string, f sse.Frame) (e APIError, form string, err error) {
	data := []byte(f.Data)
	asResponse := func(b []byte) (APIError, error) {
		return Envelope(&client.Response{Method: "SSE", URL: where, Status: 200, Body: b})
	}
	if e, err := asResponse(data); err == nil {
		return e, "envelope", nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return APIError{}, "", fmt.Errorf("%s: the error frame's data is not JSON: %v (frame %q)", where, err, rawHint(f))
	}
	wrap := func(v any) (APIError, error) {
		if _, ok := v.(map[string]any)["error"]; !ok {
			v = map[string]any{"error": v}
		}
		b, _ := json.Marshal(v)
		return asResponse(b)
	}
	if p, ok := m["payload"].(map[string]any); ok && m["event"] == "error" {
		if e, err := wrap(p); err == nil {
			return e, "event with the error in its payload", nil
		}
	}
	if _, ok := m["code"]; ok {
		if e, err := wrap(m); err == nil {
			return e, "bare error object", nil
		}
	}
	_, err = asResponse(data)
	return APIError{}, "", fmt.Errorf("%s: the error frame's data is not an error envelope (nor an error Event or a bare error object): %v", where, err)
}
