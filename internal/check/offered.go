package check

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// "Not offered" by evidence, never by a status code
// (docs/interpretations.md#offered-by-evidence). A target may leave out an
// optional operation and answer it 404, 405 or 501; the same statuses also
// answer a resource that is missing or lost. Unoffered tells them apart
// from what the suite can show: where the operation is shown to exist
// (another transport did it, a list names what it reads, a write made
// what it reads), and how a route that cannot exist is answered.

// Offer is what the suite knows about one operation whose answer may say
// the target does not offer it.
type Offer struct {
	// Answer is the operation's answer.
	Answer *client.Response
	// Sibling is the same request on a route that cannot exist: the
	// operation's path with its last literal segment made up
	// (SiblingPath). Nil when it was not sent.
	Sibling *client.Response
	// Shown says where the operation is shown to be offered: discovery,
	// the agent card, another transport that did it, a list naming what it
	// reads, a write that made it. Empty when nothing shows it.
	Shown []string
	// Known names what the path names that the suite has just read,
	// listed or written ("session s1"); empty when the path names nothing.
	Known []string
}

// UnofferedStatus reports whether status is one a target may answer an
// operation it does not offer with.
func UnofferedStatus(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// errorCode is the error code of an answer, "" when it has no envelope.
func errorCode(resp *client.Response) string {
	if e, err := Envelope(resp); err == nil {
		return e.Code
	}
	return ""
}

func statusCode(resp *client.Response) string {
	if c := errorCode(resp); c != "" {
		return fmt.Sprintf("%d %s", resp.Status, c)
	}
	return fmt.Sprint(resp.Status)
}

// Unoffered decides whether o's answer shows that the target does not
// offer the operation. It returns:
//   - why non-empty: not offered, and the evidence (the caller may leave
//     what depends on the operation not applicable);
//   - err non-nil: the answer refuses the operation as if it were not
//     offered, but the evidence says it is: a failure of the operation's
//     requirement;
//   - both empty: the operation answered (any status but 404, 405 and
//     501); the caller judges the answer.
//
// The evidence, in order: an operation shown to exist (o.Shown) is
// offered, whatever it answers. A 405 or 501 otherwise says it is not. A
// 404 says it is not when a route that cannot exist (o.Sibling) is
// answered the same way (404 with the same error code): the target cannot
// tell the operation's route from a made-up one. A 404 a made-up route is
// not answered with (another code, or 405, or 501) is about a resource:
// the route exists, and what the path names is missing; so is a 404
// resource_not_found for what the suite has just read, listed or written
// when no comparison could be made.
func Unoffered(o Offer) (why string, err error) {
	a := o.Answer
	if a == nil || !UnofferedStatus(a.Status) {
		return "", nil
	}
	known := ""
	if len(o.Known) > 0 {
		known = " (" + strings.Join(o.Known, ", ") + ", which the suite has just read, listed or written)"
	}
	if len(o.Shown) > 0 {
		return "", fmt.Errorf("%s: %s%s, as if the operation were not offered, but it is offered: %s", a, statusCode(a), known, strings.Join(o.Shown, "; "))
	}
	if a.Status != http.StatusNotFound {
		return fmt.Sprintf("%s: %s: the target does not offer the operation", a, statusCode(a)), nil
	}
	s := o.Sibling
	if s != nil && UnofferedStatus(s.Status) {
		if s.Status == a.Status && errorCode(s) == errorCode(a) {
			return fmt.Sprintf("%s: %s, as a route that cannot exist is answered (%s: %s): the target does not offer the operation", a, statusCode(a), s, statusCode(s)), nil
		}
		return "", fmt.Errorf("%s: %s%s, but a route that cannot exist is answered otherwise (%s: %s): the operation's route exists, and its 404 says what it names is missing", a, statusCode(a), known, s, statusCode(s))
	}
	if len(o.Known) > 0 && errorCode(a) == "resource_not_found" {
		return "", fmt.Errorf("%s: 404 resource_not_found%s: the resource the operation names is missing, not the operation", a, known)
	}
	return fmt.Sprintf("%s: %s: the target does not offer the operation", a, statusCode(a)), nil
}

// SiblingPath is path (escaped, as client.Request.Path, without its
// query) with the segment of template's last literal segment replaced by
// name: a route that cannot exist beside the operation's. template is the
// operation's path template ("/v1/sessions/{session_id}/truncate"), ""
// when the operation is unknown (then the last segment is replaced):
// "/v1/sessions/s1/truncate" → "/v1/sessions/s1/NAME", "/v1/tools/t1" →
// "/v1/NAME/t1", "/health" → "/NAME".
func SiblingPath(path, template, name string) string {
	segs := strings.Split(path, "/")
	tsegs := strings.Split(template, "/")
	if template == "" || len(tsegs) != len(segs) {
		segs[len(segs)-1] = name
		return strings.Join(segs, "/")
	}
	for i := len(tsegs) - 1; i > 0; i-- {
		if t := tsegs[i]; t != "" && !strings.HasPrefix(t, "{") {
			segs[i] = name
			return strings.Join(segs, "/")
		}
	}
	segs[len(segs)-1] = name
	return strings.Join(segs, "/")
}
