package wrapfault

import (
	"net/http"
	"strings"

	"github.com/harn-conform/conform/refharness/fault"
)

func init() {
	// The harness looks as if it kept a task that was INPUT_REQUIRED (or
	// WORKING, AUTH_REQUIRED) in that state across a restart: its task
	// reads answer the status the task had before, without the recovery's
	// failure. Its event lists are untouched, so no state event announces
	// the status it reads. Only CORE-DUR-001 fails: a WORKING task read back
	// as WORKING is legal, and the idempotency keys survive.
	wireFault(fault.Fault{Name: "keeps-waiting",
		Doc:   "after a restart, recovered tasks read as the status they had before it, without the recovery's failure or a state event",
		Fails: []string{"CORE-DUR-001"},
		Run:   fault.Restart},
		rewriting(func(r *http.Request, v any) {
			m, ok := v.(map[string]any)
			if !ok || r.Method != http.MethodGet || m["object"] != "task" {
				return
			}
			f, _ := m["failure"].(map[string]any)
			if f == nil || f["code"] != "harness_restarted" {
				return
			}
			msg, _ := f["message"].(string)
			if i := strings.LastIndex(msg, " was "); i >= 0 {
				m["status"] = msg[i+len(" was "):]
				delete(m, "failure")
				m["completed_at"] = nil
			}
		}))
}
