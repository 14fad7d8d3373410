package check

import (
	"fmt"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/harn-conform/conform/internal/client"
)

// Replayed checks an idempotent retry against the first answer: both
// succeeded, and the retry names the same resource with the same immutable
// content (id, object, created_at and the given fields). Fields that move
// with the resource's life (status, updated_at, …) are not compared: the
// spec asks for a semantically equivalent response, and a Harness may answer
// a retry with the resource as it is now.
func Replayed(first, retry *client.Response, fields ...string) error {
	if first.Status < 200 || first.Status > 299 {
		return fmt.Errorf("%s: the first request did not succeed%s", first, bodyHint(first))
	}
	if retry.Status < 200 || retry.Status > 299 {
		return fmt.Errorf("%s: retry with the same Idempotency-Key and body failed, want the first answer (%s) again%s", retry, first, bodyHint(retry))
	}
	a, err := first.Object()
	if err != nil {
		return err
	}
	b, err := retry.Object()
	if err != nil {
		return err
	}
	aid, _ := a["id"].(string)
	bid, _ := b["id"].(string)
	if aid == "" || bid == "" {
		return fmt.Errorf("%s: the first answer's id is %s and the retry's %s, want the same non-empty string", retry, showValue(a["id"]), showValue(b["id"]))
	}
	if aid != bid {
		return fmt.Errorf("%s: retry with the same Idempotency-Key and body created %s, want the first resource %s (a duplicate was created)", retry, showValue(b["id"]), showValue(a["id"]))
	}
	var diffs []string
	for _, f := range append([]string{"object", "created_at"}, fields...) {
		if d := cmp.Diff(a[f], b[f]); d != "" {
			diffs = append(diffs, fmt.Sprintf("%s differs (-first +retry):\n%s", f, d))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: retry names the same id but is not equivalent: %s", retry, strings.Join(diffs, "; "))
	}
	return nil
}
