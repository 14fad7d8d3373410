package suite

import (
	"context"
	"net/http"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
)

// Offering is an operation a spec sent, whose answer may say the target
// does not offer it (docs/interpretations.md#offered-by-evidence).
type Offering struct {
	// Request is what was sent, and Answer its answer.
	Request client.Request
	Answer  *client.Response
	// Known names what the path names that the spec has just read, listed
	// or written ("session s1"); Shown, where the operation is shown to be
	// offered (check.Offer).
	Known, Shown []string
}

// Unoffered decides by evidence whether o's answer shows the target does
// not offer the operation (check.Unoffered). When the answer is a 404 and
// nothing shows the operation, it first sends the same request on a route
// that cannot exist beside the operation's (check.SiblingPath: the last
// literal segment of its OpenAPI path template made up), under reqs, to
// compare. why says why the operation is not offered ("" when it is); err
// is a failure of the caller's requirement: the answer refuses the
// operation as if it were not offered, and the evidence says it is.
func Unoffered(ctx context.Context, o Offering, reqs ...string) (why string, err error) {
	off := check.Offer{Answer: o.Answer, Known: o.Known, Shown: o.Shown}
	if o.Answer != nil && o.Answer.Status == http.StatusNotFound && len(o.Shown) == 0 {
		sib := o.Request
		template := ""
		if doc, err := openapi.Default(); err == nil {
			method := sib.Method
			if method == "" {
				method = http.MethodGet
			}
			if op, ok := doc.Match(method, sib.Path); ok {
				template = op.Template
			}
		}
		sib.Path = check.SiblingPath(o.Request.Path, template, Key("conform-no-such-route"))
		sib.IdempotencyKey = ""
		sib.Probe = "a route that cannot exist, beside " + o.Answer.String() + ": is that operation offered?"
		off.Sibling = Do(ctx, sib, reqs...)
	}
	return check.Unoffered(off)
}
