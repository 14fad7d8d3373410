package wrapfault

import (
	"net/http"
	"regexp"

	"github.com/harn-conform/conform/refharness/fault"
)

// closePath is a Session's close operation.
var closePath = regexp.MustCompile(`^/v1/sessions/[^/]+/close/?$`)

// The Session operations of the REST surface: wire faults of the Extended
// level.
func init() {
	// A router without the close route: the request reaches the Harness
	// under a path it does not know, so it gets the Harness's own answer to
	// an unknown route (404 resource_not_found), as from a server that never
	// implemented close.
	wireFault(fault.Fault{Name: "session-close-not-offered",
		Doc:   "POST /v1/sessions/{id}/close is not offered: it answers 404 as an unknown route does",
		Fails: []string{"EXT-SESSION-005"}},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && closePath.MatchString(r.URL.Path) {
					env.Used()
					r.URL.Path += "-not-offered"
					r.URL.RawPath = ""
				}
				next.ServeHTTP(w, r)
			}), nil
		})
}
