package openharness

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/jsonv"
	oh "github.com/harn-conform/conform/internal/openharness"
	"github.com/harn-conform/conform/internal/suite"
)

// answer is one exchange: what was sent and what came back, decoded.
type answer struct {
	sent map[string]any // the request envelope (nil for a raw probe)
	resp *client.Response
	doc  map[string]any // the response envelope; nil when the body is none
	err  error          // why doc is nil
}

// at prefixes a finding with the exchange it is about ("POST /path →
// 200"), which is also how the report picks its curl line.
func (a answer) at(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", a.resp, err)
}

// post sends one request envelope. A target that cannot be spoken to ends
// the spec as an error, never a failure.
func post(ctx context.Context, env map[string]any) answer {
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Body: env, NoVersion: true})
	a := answer{sent: env, resp: resp}
	a.doc, a.err = oh.Decode(resp.Body)
	if resp.Truncated {
		a.doc, a.err = nil, fmt.Errorf("the body is longer than the %d-byte bound (--max-body-bytes)", suite.Env().Config.MaxBodyBytes)
	}
	return a
}

// postRaw sends bytes that are no request envelope, as a deliberate probe.
func postRaw(ctx context.Context, body []byte, why string) answer {
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, RawBody: body, NoVersion: true, Probe: why})
	a := answer{resp: resp}
	a.doc, a.err = oh.Decode(resp.Body)
	return a
}

// base is a plain request envelope with fresh identifiers and no auth
// member (transport authentication only, §7).
func base() map[string]any {
	return map[string]any{
		"protocol_version": oh.Version,
		"request_id":       suite.Key("req"),
		"correlation_id":   suite.Key("corr"),
		"request": map[string]any{
			"context": map[string]any{
				"session_id":  suite.Key("sess"),
				"user_intent": "conform: say hello",
				"shell":       map[string]any{"shell_kind": "command_shell", "shell_version": "conform", "locale": "en-US", "timezone": "UTC"},
			},
		},
	}
}

// with returns a deep copy of env changed by f.
func with(env map[string]any, f func(m map[string]any)) map[string]any {
	c := jsonv.Copy(env).(map[string]any)
	f(c)
	return c
}

// path returns the object at a path of member names, creating it.
func path(m map[string]any, names ...string) map[string]any {
	for _, n := range names {
		next, ok := m[n].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[n] = next
		}
		m = next
	}
	return m
}

// checkHTTP is OH-HTTP-001: one JSON response envelope, as
// application/json, with HTTP 200 for a success envelope. It returns the
// finding about the body (no envelope at all), which keeps the other
// checks of the answer from running, apart from the rest.
func checkHTTP(a answer) (body error, rest error) {
	if a.doc == nil {
		return a.at(fmt.Errorf("no response envelope: the body is %s", a.err)), nil
	}
	var errs []string
	ct := a.resp.Header.Get("Content-Type")
	mt, _, perr := mime.ParseMediaType(ct)
	if perr != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		errs = append(errs, fmt.Sprintf("Content-Type is %q, want application/json", ct))
	}
	if oh.Status(a.doc) == "success" && a.resp.Status != http.StatusOK {
		errs = append(errs, fmt.Sprintf("a success envelope came with HTTP %d, want 200", a.resp.Status))
	}
	if len(errs) > 0 {
		return nil, a.at(fmt.Errorf("%s", strings.Join(errs, "; ")))
	}
	return nil, nil
}

// checkNotStreamed is OH-STR-002 for a Shell that did not ask for
// streaming: the answer is no event stream.
func checkNotStreamed(a answer) error {
	mt, _, _ := mime.ParseMediaType(a.resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" || mt == "application/x-ndjson" {
		return a.at(fmt.Errorf("answered with %s to a Shell that did not ask for openharness.streaming", mt))
	}
	return nil
}

// named reports whether the current spec names the requirement.
func named(id string) bool { return slices.Contains(suite.SpecReqs(), id) }

// judge runs, on one answer, every per-response check whose requirement
// the spec names. It reports whether the answer was an envelope at all.
func judge(a answer) bool {
	if named("OH-STR-002") {
		suite.Should("OH-STR-002", checkNotStreamed(a))
	}
	bodyErr, restErr := checkHTTP(a)
	if bodyErr != nil {
		if named("OH-HTTP-001") {
			suite.CheckBlocks("OH-HTTP-001", bodyErr, perResponse...)
		}
		return false
	}
	if named("OH-HTTP-001") {
		suite.Check("OH-HTTP-001", restErr)
	}
	for _, c := range responseChecks {
		if named(c.id) {
			if c.should {
				suite.Should(c.id, a.at(c.f(a.doc)))
			} else {
				suite.Check(c.id, a.at(c.f(a.doc)))
			}
		}
	}
	return true
}

// responseChecks are the checks every response envelope answers to.
var responseChecks = []struct {
	id     string
	should bool
	f      func(map[string]any) error
}{
	{"OH-RESP-001", false, oh.CheckResponseSchema},
	{"OH-VER-001", false, oh.CheckVersion},
	{"OH-DIR-001", false, oh.CheckDirectives},
	{"OH-DIR-002", false, oh.CheckDirectiveValues},
	{"OH-ATT-002", false, func(d map[string]any) error { return oh.CheckNoBlobs(d) }},
	{"OH-ERR-002", true, oh.CheckErrorPresent},
	{"OH-ERR-003", false, oh.CheckErrorCode},
	{"OH-EXT-002", true, oh.CheckVendorMembers},
	{"OH-EXT-003", true, func(d map[string]any) error { return oh.CheckExtensionKeys(d) }},
}

// perResponse are the requirements judge checks on an envelope.
var perResponse = func() []string {
	var ids []string
	for _, c := range responseChecks {
		ids = append(ids, c.id)
	}
	return ids
}()
