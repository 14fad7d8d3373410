package wrapfault

import (
	"net/http"

	"github.com/harn-conform/conform/refharness/fault"
)

// Lists whose cursor is ignored (docs/interpretations.md#order-independent-lists):
// every page is the first. The suite reads each list one item a page over
// items it made, so it follows the cursor in every run, not only when
// earlier specs happened to fill more than one page.
func init() {
	wireFault(fault.Fault{Name: "sessions-cursor-ignored",
		Doc:   "GET /v1/sessions ignores ?cursor=: every page is the first",
		Fails: []string{"CORE-PAGE-003"}},
		ignoringCursor("/v1/sessions"))

	wireFault(fault.Fault{Name: "personas-cursor-ignored",
		Doc:   "GET /v1/personas ignores ?cursor=: every page is the first",
		Fails: []string{"EXT-PERSONA-001"}},
		ignoringCursor("/v1/personas"))
}

// ignoringCursor drops the cursor from GETs of path.
func ignoringCursor(path string) Wrap {
	return func(next http.Handler, env Env) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if q := r.URL.Query(); r.Method == http.MethodGet && r.URL.Path == path && q.Has("cursor") {
				env.Used()
				q.Del("cursor")
				r.URL.RawQuery = q.Encode()
			}
			next.ServeHTTP(w, r)
		}), nil
	}
}
