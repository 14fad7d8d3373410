package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// Pointer is an Event's resource pointer.
type Pointer struct{ Object, ID string }

// Event is a decoded protocol Event: the fields conform reasons about. The
// decoding ignores every other field (clients must ignore unknown fields),
// and it leaves timestamp formats and the object discriminator to the
// resource-shape checks, so one broken behaviour fails one requirement.
type Event struct {
	ID       string
	Kind     string // the "event" field
	Resource Pointer
	Sequence int64
	Payload  map[string]any
	TaskID   string // optional task_id, "" when absent
	// SessionID is the optional session_id, "" when absent.
	SessionID string
}

// key names the resource whose sequence the event belongs to.
func (e Event) key() string { return e.Resource.Object + "/" + e.Resource.ID }

// DecodeEvent checks the required Event fields and their types.
func DecodeEvent(v any) (Event, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Event{}, fmt.Errorf("event is %s, want an object", describe(v))
	}
	var e Event
	var errs []string
	str := func(name string) string {
		s, ok := m[name].(string)
		if !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %s, want a non-empty string", name, describe(m[name])))
		}
		return s
	}
	e.ID = str("id")
	e.Kind = str("event")
	if _, ok := m["created_at"].(string); !ok {
		errs = append(errs, fmt.Sprintf("created_at is %s, want a timestamp string", describe(m["created_at"])))
	}
	if r, ok := m["resource"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("resource is %s, want an object {object, id}", describe(m["resource"])))
	} else {
		o, ok1 := r["object"].(string)
		id, ok2 := r["id"].(string)
		if !ok1 || !ok2 || o == "" || id == "" {
			errs = append(errs, fmt.Sprintf("resource is %s, want non-empty string fields object and id", compact(r)))
		}
		e.Resource = Pointer{o, id}
	}
	if n, err := integer(m["sequence"]); err != nil {
		errs = append(errs, "sequence "+err.Error())
	} else {
		e.Sequence = n
	}
	if p, ok := m["payload"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("payload is %s, want an object", describe(m["payload"])))
	} else {
		e.Payload = p
	}
	e.TaskID, _ = m["task_id"].(string)
	e.SessionID, _ = m["session_id"].(string)
	if len(errs) > 0 {
		name := "event"
		if e.ID != "" {
			name = "event " + e.ID
		}
		return e, fmt.Errorf("%s: %s", name, strings.Join(errs, "; "))
	}
	return e, nil
}

// integer reads a JSON integer ≥ 0 (decoded as json.Number or float64).
func integer(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return 0, fmt.Errorf("is %s, want an integer", n)
		}
		if i < 0 {
			return 0, fmt.Errorf("is %d, want at least 0", i)
		}
		return i, nil
	case float64:
		if n != float64(int64(n)) || n < 0 {
			return 0, fmt.Errorf("is %v, want an integer of at least 0", n)
		}
		return int64(n), nil
	}
	return 0, fmt.Errorf("is %s, want an integer", describe(v))
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// EventPage is one page of an event list.
type EventPage struct {
	Events     []Event
	HasMore    bool
	NextCursor string
}

// Events decodes an event list answer ({object: "list", data: [Event…],
// page: {has_more, next_cursor}}) and checks every event in it. The list
// envelope itself is the pagination checks' business: a missing page block
// reads as the last page.
func Events(resp *client.Response) (EventPage, error) {
	if err := Status(resp, 200); err != nil {
		return EventPage{}, err
	}
	m, err := resp.Object()
	if err != nil {
		return EventPage{}, err
	}
	data, ok := m["data"].([]any)
	if !ok {
		return EventPage{}, fmt.Errorf("%s: data is %s, want an array of events", resp, describe(m["data"]))
	}
	var p EventPage
	for i, v := range data {
		e, err := DecodeEvent(v)
		if err != nil {
			return p, fmt.Errorf("%s: data[%d]: %w", resp, i, err)
		}
		p.Events = append(p.Events, e)
	}
	if pg, ok := m["page"].(map[string]any); ok {
		p.HasMore, _ = pg["has_more"].(bool)
		p.NextCursor, _ = pg["next_cursor"].(string)
	}
	return p, nil
}

// DecodeEventJSON decodes a JSON text (an SSE data field, a REST body) as an
// Event.
func DecodeEventJSON(b []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Event{}, fmt.Errorf("not JSON: %v (starts %q)", err, snippet(b))
	}
	if dec.More() {
		return Event{}, fmt.Errorf("data after the JSON value (starts %q)", snippet(b))
	}
	return DecodeEvent(v)
}

func snippet(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// Sequences checks that, in delivery order, each resource's events carry
// strictly increasing sequence numbers: that is how a client sees causal
// order per resource.
func Sequences(where string, evs []Event) error {
	last := map[string]Event{}
	for _, e := range evs {
		if prev, ok := last[e.key()]; ok && e.Sequence <= prev.Sequence {
			return fmt.Errorf("%s: event %s (%s) of %s has sequence %d after event %s with sequence %d; want strictly increasing sequences per resource",
				where, e.ID, e.Kind, e.key(), e.Sequence, prev.ID, prev.Sequence)
		}
		last[e.key()] = e
	}
	return nil
}

// IDs lists the events' ids.
func IDs(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// After returns the events that follow the one with id cursor, and whether
// cursor was found.
func After(evs []Event, cursor string) ([]Event, bool) {
	for i, e := range evs {
		if e.ID == cursor {
			return evs[i+1:], true
		}
	}
	return nil, false
}

// Range checks an after_event_id read: got must be exactly the events of
// all that follow cursor, in order (all is the unfiltered list).
func Range(where string, all []Event, cursor string, got []Event) error {
	want, ok := After(all, cursor)
	if !ok {
		return fmt.Errorf("%s: cursor %s is not in the unfiltered list (suite error)", where, cursor)
	}
	w, g := IDs(want), IDs(got)
	for i := 0; i < len(w) || i < len(g); i++ {
		switch {
		case i >= len(g):
			return fmt.Errorf("%s: got %d events, want the %d after %s; missing %s", where, len(g), len(w), cursor, strings.Join(w[i:], ", "))
		case i >= len(w):
			return fmt.Errorf("%s: got %d events, want the %d after %s; extra %s", where, len(g), len(w), cursor, strings.Join(g[i:], ", "))
		case w[i] != g[i]:
			return fmt.Errorf("%s: event %d is %s, want %s (got %v, want the events after %s: %v)", where, i, g[i], w[i], short(g), cursor, short(w))
		}
	}
	return nil
}

// Pages checks a walk of an event list by its cursors with the given limit:
// no page is longer than limit, every page but the last says has_more with a
// cursor, and together the pages are all the events once, in order.
func Pages(where string, limit int, pages []EventPage, all []Event) error {
	var got []Event
	for i, p := range pages {
		if len(p.Events) > limit {
			return fmt.Errorf("%s: page %d has %d events, want at most limit=%d", where, i+1, len(p.Events), limit)
		}
		last := i == len(pages)-1
		if !last && (!p.HasMore || p.NextCursor == "") {
			return fmt.Errorf("%s: page %d has has_more=%v next_cursor=%q, but more events follow", where, i+1, p.HasMore, p.NextCursor)
		}
		got = append(got, p.Events...)
	}
	seen := map[string]int{}
	for i, e := range got {
		if j, dup := seen[e.ID]; dup {
			return fmt.Errorf("%s: event %s appears twice in the walk (items %d and %d); want every event once", where, e.ID, j+1, i+1)
		}
		seen[e.ID] = i
	}
	w, g := IDs(all), IDs(got)
	for i := range w {
		if i >= len(g) {
			return fmt.Errorf("%s: the walk ended after %d events, want %d; missing %s", where, len(g), len(w), strings.Join(w[i:], ", "))
		}
		if w[i] != g[i] {
			return fmt.Errorf("%s: item %d of the walk is %s, want %s", where, i+1, g[i], w[i])
		}
	}
	if len(g) > len(w) {
		return fmt.Errorf("%s: the walk returned %d events, want %d", where, len(g), len(w))
	}
	return nil
}

func short(ids []string) []string {
	if len(ids) > 8 {
		return append(append([]string(nil), ids[:8]...), "…")
	}
	return ids
}
