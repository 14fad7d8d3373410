package check

import (
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

// FuzzRESTChecks feeds arbitrary bodies to every REST verifier: a hostile
// target's answer may earn any finding, but never a panic.
func FuzzRESTChecks(f *testing.F) {
	for _, seed := range []string{goodTask, goodDiscovery, goodCard, `{"object":"list","data":[{"id":1}],"page":{"has_more":true,"next_cursor":null}}`,
		`{"error":{"code":"x","message":"m","type":"t","param":"a.b"}}`, `{"parts":[null,1,{"type":[]}],"resource":[],"sequence":"1"}`,
		`{"created_at":{"updated_at":["2026-01-01T00:00:00Z"]}}`, `[]`, `null`, `{"id":"e","payload":{"a":[1,{}]}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := resp(200, body)
		ListPage(r)
		m, err := r.Object()
		if err != nil {
			return
		}
		ResourceEnvelope(r, m)
		Timestamps(r, m)
		Discriminator(r, m, "task")
		for _, kind := range []string{"task", "session", "message", "artifact", "outcome", "event"} {
			Fields(r, kind, m)
			Enums(r, kind, m)
		}
		TaskStatusKnown(r, m)
		SameID(r, m, "x")
		Agree(r, m, m, "session_id")
		SameEvent(r, m, map[string]any{})
		Discovery(r, m, "v1")
		AgentCard(r, m, []string{"v1"})
		A2ACard(r, m)
		CardAgrees(r, m, m)
		if e, err := Envelope(r); err == nil {
			TypeFits(r, e)
			ParamNames(r, e, "input")
		}
		Replayed(r, r, "input")
		KeyedRound("POST /x", true, []*client.Response{r, r})
		KeyedRound("POST /x", false, []*client.Response{r, r})
		Settled("POST /x", true, "x", r)
		AnswerID(r)
		Retryable(r)
		NoSecret(r, func(string) bool { return false })
	})
}
