package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// The verdicts of the hostile-input pass (internal/negative): what a
// target owes a malformed request (docs/interpretations.md#hostile-input).

// HostileAnswered checks that a malformed request got an HTTP answer below
// 500: not a server error, not a hang, not a dropped connection. terr is
// the request's transport failure, if it had no answer; alive says whether
// the target answered a plain request right after (so the failure was this
// request's, not the network's).
func HostileAnswered(resp *client.Response, terr error, alive bool) error {
	if terr != nil {
		var te *client.TransportError
		what := "no answer"
		if errors.As(terr, &te) && te.Timeout() {
			what = "no answer before the request timeout (a hang)"
		} else if errors.As(terr, &te) {
			what = "the connection was dropped without an answer"
		}
		if !alive {
			return fmt.Errorf("%s: %v; the target did not answer a plain GET /v1 afterwards either (did it crash?)", what, terr)
		}
		return fmt.Errorf("%s: %v, while the target answers other requests", what, terr)
	}
	if resp == nil {
		return errors.New("no answer")
	}
	if resp.Status >= 500 {
		return fmt.Errorf("%s: a server error for a malformed request; want a 4xx error (request_error: \"malformed or semantically invalid request\")%s", resp, errorCodeHint(resp))
	}
	return nil
}

// HostileRefused checks that a request the document declares invalid was
// refused with a 4xx error. strict (the same request without the mutation
// is accepted, and one body member or the body as a whole is at fault)
// wants 400 invalid_request; sized (the fault is a value's size or depth)
// takes 413 payload_too_large too.
func HostileRefused(resp *client.Response, strict, sized bool) error {
	if resp == nil {
		return nil // HostileAnswered judges a missing answer
	}
	switch {
	case resp.Status < 400:
		return fmt.Errorf("%s: served an invalid request; want a 4xx error (invalid_request: \"Request shape or value is invalid\")", resp)
	case resp.Status >= 500:
		return nil // HostileAnswered's
	case !strict:
		return nil
	}
	e, err := Envelope(resp)
	if err != nil {
		// No envelope to read a code from: that is CORE-ERR-002's to
		// judge; the status is this one's.
		if resp.Status == http.StatusBadRequest || sized && resp.Status == http.StatusRequestEntityTooLarge {
			return nil
		}
	}
	if err == nil && resp.Status == http.StatusBadRequest && e.Code == "invalid_request" {
		return nil
	}
	if err == nil && sized && resp.Status == http.StatusRequestEntityTooLarge && e.Code == "payload_too_large" {
		return nil
	}
	want := "400 invalid_request"
	if sized {
		want += " (or 413 payload_too_large)"
	}
	return fmt.Errorf("%s%s: want %s for a request whose shape or value is invalid (the same request without this mutation is accepted)", resp, errorCodeHint(resp), want)
}

// HostileNoEcho checks that an error answer carries no credential the
// request carried: neither canary (a key the pass put in the body) nor a
// configured secret (contains, e.g. the run's redactor). It names where the
// credential was found, never the credential.
func HostileNoEcho(resp *client.Response, canary string, contains func(string) bool) error {
	if resp == nil || resp.Status < 400 {
		return nil
	}
	has := func(s string) bool {
		return canary != "" && strings.Contains(s, canary) || contains != nil && contains(s)
	}
	var where []string
	if has(string(resp.Body)) {
		where = append(where, "the body")
	}
	for _, k := range sortedHeaderNames(resp.Header) {
		for _, v := range resp.Header[k] {
			if has(v) {
				where = append(where, "header "+k)
				break
			}
		}
	}
	if len(where) == 0 {
		return nil
	}
	return fmt.Errorf("%s: a credential the request carried appears in %s of the error; API keys must never be in error details", resp, strings.Join(where, " and "))
}

func sortedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// HostileOpen checks that a request whose only change is a member an open
// schema does not name was answered as the same request without it: a
// success when that one succeeded, and never a refusal naming the member.
func HostileOpen(resp, baseline *client.Response, member string) error {
	if resp == nil || resp.Status/100 == 2 || baseline == nil || baseline.Status/100 != 2 {
		return nil
	}
	named := ""
	if e, err := Envelope(resp); err == nil && e.HasParam && strings.Contains(strings.ToLower(e.Param), strings.ToLower(member)) {
		named = fmt.Sprintf(", naming %q", e.Param)
	}
	return fmt.Errorf("%s%s%s: refused a request that differs from an accepted one (%d) only by the member %s, which the document's open schema allows; unknown members must be accepted",
		resp, errorCodeHint(resp), named, baseline.Status, member)
}

// Snapshot renders what a read shows of the state a refused request must
// not change: a list's item ids and whether more follow, or a whole
// object with its keys sorted.
func Snapshot(resp *client.Response, list bool) (string, error) {
	if resp == nil || resp.Status != http.StatusOK {
		return "", fmt.Errorf("%v: want 200 to read the state", resp)
	}
	if list {
		p, err := ListPage(resp)
		if err != nil {
			return "", err
		}
		ids := slices.Clone(p.IDs)
		slices.Sort(ids)
		return fmt.Sprintf("ids=%s has_more=%v", strings.Join(ids, ","), p.HasMore), nil
	}
	v, err := resp.JSON()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// StateUnchanged checks that a read shows the same state after refused
// requests as before them. where names the read.
func StateUnchanged(where, before, after string) error {
	if before == after {
		return nil
	}
	return fmt.Errorf("%s changed after a refused request: %s", where, diffSnapshots(before, after))
}

func diffSnapshots(before, after string) string {
	b, a := idsOf(before), idsOf(after)
	if b != nil && a != nil {
		var added, gone []string
		for _, id := range a {
			if !slices.Contains(b, id) {
				added = append(added, id)
			}
		}
		for _, id := range b {
			if !slices.Contains(a, id) {
				gone = append(gone, id)
			}
		}
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "new items "+strings.Join(clipList(added), ", "))
		}
		if len(gone) > 0 {
			parts = append(parts, "items gone "+strings.Join(clipList(gone), ", "))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
		return "the list's has_more changed"
	}
	return fmt.Sprintf("was %s, is %s", clipText(before, 160), clipText(after, 160))
}

func idsOf(s string) []string {
	rest, ok := strings.CutPrefix(s, "ids=")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, " has_more=")
	if rest == "" {
		return []string{}
	}
	return strings.Split(rest, ",")
}

func clipList(xs []string) []string {
	if len(xs) > 5 {
		return append(slices.Clone(xs[:5]), fmt.Sprintf("and %d more", len(xs)-5))
	}
	return xs
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errorCodeHint names the error code of an answer that has one.
func errorCodeHint(resp *client.Response) string {
	if !bytes.Contains(resp.Body, []byte(`"error"`)) {
		return ""
	}
	if e, err := Envelope(resp); err == nil {
		return " " + e.Code
	}
	return ""
}
