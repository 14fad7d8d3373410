package check

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

func TestReplayed(t *testing.T) {
	first := resp(202, `{"id":"t1","object":"task","created_at":"2026-01-01T00:00:00Z","status":"SUBMITTED","input":{"a":1}}`)
	same := resp(202, `{"status":"COMPLETED","input":{"a":1},"object":"task","id":"t1","created_at":"2026-01-01T00:00:00Z"}`)
	if err := Replayed(first, same, "input"); err != nil {
		t.Errorf("Replayed(same, status moved on) = %v", err)
	}
	for _, tc := range []struct {
		retry *client.Response
		want  string
	}{
		{resp(202, `{"id":"t2","object":"task","created_at":"2026-01-01T00:00:00Z","input":{"a":1}}`), `created "t2", want the first resource "t1"`},
		{resp(409, `{"error":{}}`), "retry with the same Idempotency-Key and body failed"},
		{resp(202, `{"id":"t1","object":"task","created_at":"2026-01-01T00:00:00Z","input":{"a":2}}`), "input differs"},
		{resp(202, `not json`), "not JSON"},
	} {
		if err := Replayed(first, tc.retry, "input"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Replayed(%s) = %v, want %q", tc.retry.Body, err, tc.want)
		}
	}
	if err := Replayed(resp(500, ""), same); err == nil || !strings.Contains(err.Error(), "first request did not succeed") {
		t.Errorf("Replayed(first failed) = %v", err)
	}
}
