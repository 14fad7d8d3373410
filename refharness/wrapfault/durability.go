package wrapfault

import (
	"net/http"
	"strings"
)

func init() {
	register(map[string]Wrap{
		// The harness looks as if it kept a task that was INPUT_REQUIRED (or
		// WORKING, AUTH_REQUIRED) in that state across a restart: its task
		// reads answer the status the task had before, without the
		// recovery's failure. Its event lists are untouched, so no state
		// event announces the status it reads.
		"keeps-waiting": rewriting(func(r *http.Request, v any) {
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
		}),
	})
}
