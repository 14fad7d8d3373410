package refharness

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"
)

// TestOffTheShelfSSEClient reads the harness's streams with r3labs/sse, a
// popular third-party consumer, including a resume through its Last-Event-ID.
func TestOffTheShelfSSEClient(t *testing.T) {
	for _, v := range []Variants{nil, {VariantCRLF: true}, {VariantKeepAliveEveryFrame: true}} {
		h := newHarness(t, Options{Variants: v})
		srv := httptest.NewServer(h.s)
		defer srv.Close()
		sess := h.session()
		id := h.submit(sess, []map[string]any{step("emit", "count", 4)}).str("id")
		h.waitStatus(id, StatusCompleted)

		read := func(lastID string) []*sse.Event {
			c := sse.NewClient(srv.URL + "/v1/tasks/" + id + "/stream")
			c.Headers[VersionHeader] = ProtocolVersion
			c.Headers["Authorization"] = "Bearer " + testKey
			c.ReconnectStrategy = &backoff.StopBackOff{} // the task stream ends by itself; do not reconnect
			if lastID != "" {
				c.LastEventID.Store([]byte(lastID))
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			var got []*sse.Event
			c.SubscribeRawWithContext(ctx, func(e *sse.Event) {
				if len(e.Event) > 0 { // r3labs also hands over comment-only events
					got = append(got, e)
				}
			})
			if ctx.Err() != nil {
				t.Fatalf("variants %v: stream did not end", v)
			}
			return got
		}
		all := read("")
		if len(all) != 7 {
			t.Fatalf("variants %v: r3labs saw %d events, want 7", v, len(all))
		}
		for i, e := range all {
			var ev struct{ ID, Event string }
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				t.Fatalf("variants %v: event %d data is not JSON: %q", v, i, e.Data)
			}
			if string(e.ID) != ev.ID || string(e.Event) != ev.Event {
				t.Errorf("variants %v: event %d: id %q event %q vs data %+v", v, i, e.ID, e.Event, ev)
			}
		}
		if string(all[6].Event) != "task.completed" {
			t.Errorf("variants %v: last event %s, want task.completed", v, all[6].Event)
		}
		rest := read(string(all[3].ID))
		if len(rest) != 3 || string(rest[0].ID) != string(all[4].ID) {
			t.Errorf("variants %v: resume after %s got %d events", v, all[3].ID, len(rest))
		}
	}
}
