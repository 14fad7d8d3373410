package refharness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harn-conform/conform/internal/testmain"
)

// A probe checks one behaviour and returns an error when it is broken. Each
// fault must break its own probe, every probe must pass on a clean server,
// under every variant, and under every other fault (a fault breaks one thing).
//
// Probes run in a synctest bubble: the harness's clock, its workers'
// timers and every wait of a probe are the bubble's, so time passes only
// when every goroutine of the bubble waits. A task that works for 30 ms is
// still working when the probe cancels it however loaded the machine is,
// and a wait "within 5s" ends early only if nothing can happen any more.

type probe func(p *probeEnv) error

// unjudged is a probe's answer when what it needs did not happen (a cancel
// that did not take, because the task had already ended): it cannot say
// whether the behaviour is broken. In the bubble it never happens; if it
// does, the probe is wrong, not the fault.
type unjudged struct{ error }

func cannotJudge(format string, args ...any) error { return unjudged{fmt.Errorf(format, args...)} }

// probeEnv is a fresh harness with a session and a completed echo task,
// each made when a probe first asks for it (most probes need neither).
type probeEnv struct {
	*harness
	sess, task string
	controls   int // keys of the race probes' controls (concurrency_test.go)
}

func newProbeEnv(t *testing.T, opts Options) *probeEnv {
	return &probeEnv{harness: newHarness(t, opts)}
}

// sessionID is the env's session.
func (p *probeEnv) sessionID() string {
	if p.sess == "" {
		p.sess = p.session()
	}
	return p.sess
}

// taskID is a completed echo task of the env's session (its agent message,
// outcome and receipt included).
func (p *probeEnv) taskID() string {
	if p.task == "" {
		p.task = p.submit(p.sessionID(), nil).str("id")
		p.waitTerminal(p.task)
	}
	return p.task
}

// waitTerminal waits until every task worker is done (in the bubble, a
// worker that never ends makes the bubble's time reach the limit).
func (h *harness) waitTerminal(id string) {
	h.t.Helper()
	done := make(chan struct{})
	go func() { h.s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		h.t.Fatalf("task %s worker still running after %s", id, waitLimit)
	}
}

// frames reads a whole stream, served into memory; a stream that does not
// end by itself is cut at the limit (the bubble's time) and is an error.
func (p *probeEnv) frames(path, last string) ([]sseFrame, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", path, nil)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	rec := httptest.NewRecorder()
	p.s.ServeHTTP(rec, req)
	if rec.Code != 200 {
		p.t.Fatalf("GET %s: status %d: %s", path, rec.Code, rec.Body)
	}
	fs, err := readFrames(context.Background(), bufio.NewReader(rec.Body), -1)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("GET %s: the stream did not end: %w", path, ctx.Err())
	}
	return fs, rec.Header().Get("Content-Type"), err
}

func errCode(r resp) (code, typ, param string, ok bool) {
	e, ok := r.Body["error"].(map[string]any)
	if !ok {
		return "", "", "", false
	}
	code, _ = e["code"].(string)
	typ, _ = e["type"].(string)
	param, _ = e["param"].(string)
	return code, typ, param, true
}

func statusIs(r resp, want int, what string) error {
	if r.Code != want {
		return fmt.Errorf("%s: status %d, want %d", what, r.Code, want)
	}
	return nil
}

func ws(p *probeEnv, key string) resp {
	hdr := []string{}
	if key != "" {
		hdr = []string{"Idempotency-Key", key}
	}
	return p.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/"}, hdr...)
}

var probes = map[Fault]probe{
	FaultSkipVersionCheck: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/tasks", nil, "-"+VersionHeader, ""), 426, "no version header")
	},
	FaultNoSupportedVersions: func(p *probeEnv) error {
		r := p.do("GET", "/v1/tasks", nil, VersionHeader, "bogus")
		if _, _, _, envelope := errCode(r); envelope && r.Code == 426 && !strings.Contains(string(r.Raw), ProtocolVersion) {
			return fmt.Errorf("426 does not list supported versions: %s", r.Raw)
		}
		return nil
	},
	FaultAcceptMissingKey: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/tasks", nil, "-Authorization", ""), 401, "no key")
	},
	FaultAcceptAnyKey: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/tasks", nil, "Authorization", "Bearer wrong-key"), 401, "wrong key")
	},
	FaultEchoKeyInError: func(p *probeEnv) error {
		if r := p.do("GET", "/v1/tasks", nil, "Authorization", "Bearer canary-3141"); strings.Contains(string(r.Raw), "canary-3141") {
			return errors.New("error body echoes the API key")
		}
		return nil
	},
	FaultForgetIdempotency: func(p *probeEnv) error {
		if a, b := ws(p, "k").str("id"), ws(p, "k").str("id"); a != b {
			return fmt.Errorf("retry created %s, want %s", b, a)
		}
		return nil
	},
	FaultIdempotencyNoConflict: func(p *probeEnv) error {
		ws(p, "k2")
		r := p.do("POST", "/v1/workspaces", map[string]any{"name": "other", "root": "/"}, "Idempotency-Key", "k2")
		if r.Code == 200 || r.Code == 201 {
			if r.str("name") == "other" {
				return nil // no idempotency at all: another probe's business
			}
			return fmt.Errorf("same key, different body: status %d, want 409", r.Code)
		}
		return nil
	},
	FaultSSEPayloadDrift: func(p *probeEnv) error {
		fs, _, err := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		if err != nil {
			return err
		}
		list := p.do("GET", "/v1/tasks/"+p.taskID()+"/events?limit=200", nil) // the chatty agent has 60 messages
		rest := map[string]any{}
		for _, e := range list.list() {
			rest[fmt.Sprint(e["id"])] = e["payload"]
		}
		seen := 0
		for _, f := range fs {
			if f.Event != "agent.message" {
				continue
			}
			seen++
			var e map[string]any
			if json.Unmarshal([]byte(f.Data), &e) != nil {
				continue // not JSON: sse-data-not-json's probe, not a drift
			}
			if !reflect.DeepEqual(e["payload"], rest[fmt.Sprint(e["id"])]) {
				return fmt.Errorf("SSE %s payload %v, REST has %v", e["id"], e["payload"], rest[fmt.Sprint(e["id"])])
			}
		}
		if seen == 0 {
			return fmt.Errorf("no agent.message frame on the task stream")
		}
		return nil
	},
	FaultDropSSEID: func(p *probeEnv) error {
		fs, _, err := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		if err != nil {
			return err
		}
		for _, f := range fs {
			if !f.HasID {
				return fmt.Errorf("frame %s has no id", f.Event)
			}
		}
		return nil
	},
	FaultIgnoreLastEventID: func(p *probeEnv) error {
		all, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		rest, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", eventIDOf(all, 1))
		if len(rest) > 0 && len(all) > 0 && rest[0].Data == all[0].Data {
			return errors.New("resume started from the beginning")
		}
		return nil
	},
	FaultResumeRepeatsEvent: func(p *probeEnv) error {
		all, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		rest, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", eventIDOf(all, 1))
		if len(rest) > 0 && len(all) > 1 && rest[0].Data == all[1].Data {
			return errors.New("resume repeated the Last-Event-ID event")
		}
		return nil
	},
	FaultNoCursorExpiredFrame: func(p *probeEnv) error {
		fs, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", "event_999999999")
		if len(fs) == 0 || fs[0].Event != "error" || !strings.Contains(fs[0].Data, "cursor_expired") {
			return fmt.Errorf("expired cursor gave %v, want an error frame", fs)
		}
		return nil
	},
	FaultTerminalTaskMutable: func(p *probeEnv) error {
		p.do("POST", "/v1/tasks/"+p.taskID()+"/cancel", nil)
		if st := p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("status"); strings.ToUpper(st) != StatusCompleted {
			return fmt.Errorf("cancel moved a COMPLETED task to %s", st)
		}
		return nil
	},
	FaultCompletedAfterCancel: func(p *probeEnv) error {
		id := p.submit(p.sessionID(), []map[string]any{step("work", "ms", 30), step("complete")}).str("id")
		p.waitStatus(id, StatusWorking)
		if r := p.do("POST", "/v1/tasks/"+id+"/cancel", nil); strings.ToUpper(r.str("status")) != StatusCanceled {
			if err := p.stillWorking(id); err != nil {
				return err
			}
			return nil // a cancel that does not cancel: no CANCELED was recorded, so none can be replaced
		}
		p.waitTerminal(id)
		if st := p.do("GET", "/v1/tasks/"+id, nil).str("status"); strings.ToUpper(st) != StatusCanceled {
			return fmt.Errorf("canceled task later shows %s", st)
		}
		return nil
	},
	FaultCanceledHasCompletedAt: func(p *probeEnv) error {
		id := p.submit(p.sessionID(), []map[string]any{step("work", "ms", 5000)}).str("id")
		p.waitStatus(id, StatusWorking)
		r := p.do("POST", "/v1/tasks/"+id+"/cancel", nil)
		if strings.ToUpper(r.str("status")) != StatusCanceled {
			if err := p.stillWorking(id); err != nil {
				return err
			}
			return nil // a cancel that does not cancel: no CANCELED task to look at
		}
		if r.Body["completed_at"] != nil {
			return fmt.Errorf("CANCELED task has completed_at %v", r.Body["completed_at"])
		}
		return nil
	},
	FaultSkipTransitionEvent: func(p *probeEnv) error {
		kinds, evs := p.taskEvents(p.taskID())
		for i, k := range kinds {
			if k == "task.completed" && evs[i]["payload"].(map[string]any)["previous_status"] == StatusWorking && !contains(kinds, "task.started") {
				return fmt.Errorf("SUBMITTED->WORKING emitted no event: %v", kinds)
			}
		}
		return nil
	},
	FaultIllegalTransition: func(p *probeEnv) error {
		_, evs := p.taskEvents(p.taskID())
		for _, e := range evs {
			pl := e["payload"].(map[string]any)
			from, _ := pl["previous_status"].(string)
			to, _ := pl["status"].(string)
			if from != "" && !Allowed(strings.ToUpper(from), strings.ToUpper(to)) {
				return fmt.Errorf("illegal transition %s -> %s", from, to)
			}
		}
		return nil
	},
	FaultWrongCreateStatus: func(p *probeEnv) error { return statusIs(ws(p, ""), 201, "create workspace") },
	FaultErrorWithoutEnvelope: func(p *probeEnv) error {
		if _, _, _, ok := errCode(p.do("GET", "/v1/tasks/task_missing", nil)); !ok {
			return errors.New("error without envelope")
		}
		return nil
	},
	FaultWrongErrorType: func(p *probeEnv) error {
		code, typ, _, ok := errCode(p.do("GET", "/v1/tasks/task_missing", nil))
		if ok && typ != errorTypes[code] {
			return fmt.Errorf("error.type %s for code %s", typ, code)
		}
		return nil
	},
	FaultNotFoundAs400: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/tasks/task_missing", nil), 404, "missing task")
	},
	FaultNoParamOnBadRequest: func(p *probeEnv) error {
		_, _, param, ok := errCode(p.do("POST", "/v1/workspaces", map[string]any{"root": "/"}))
		if ok && param != "name" {
			return fmt.Errorf("error.param = %q, want name", param)
		}
		return nil
	},
	FaultNo413: func(p *probeEnv) error {
		big := map[string]any{"name": strings.Repeat("x", int(p.s.opts.MaxBodyBytes)), "root": "/"}
		return statusIs(p.do("POST", "/v1/workspaces", big), 413, "oversized body")
	},
	FaultLimitIgnored: func(p *probeEnv) error {
		ws(p, "")
		ws(p, "")
		if n := len(p.do("GET", "/v1/workspaces?limit=1", nil).list()); n != 1 {
			return fmt.Errorf("limit=1 returned %d items", n)
		}
		return nil
	},
	FaultPaginationRepeats: func(p *probeEnv) error {
		ws(p, "")
		ws(p, "")
		ws(p, "") // more than one page of 2
		seen := map[string]bool{}
		cursor := ""
		for i := 0; i < 10; i++ {
			r := p.do("GET", "/v1/workspaces?limit=2"+cursor, nil)
			for _, it := range r.list() {
				if seen[it["id"].(string)] {
					return fmt.Errorf("item %s repeated across pages", it["id"])
				}
				seen[it["id"].(string)] = true
			}
			pg, _ := r.Body["page"].(map[string]any)
			if pg["has_more"] != true {
				break
			}
			cursor = "&cursor=" + pg["next_cursor"].(string)
		}
		return nil
	},
	FaultNonUTCTimestamps: func(p *probeEnv) error {
		if at := p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("created_at"); !strings.HasSuffix(at, "Z") {
			return fmt.Errorf("created_at %q is not UTC", at)
		}
		return nil
	},
	FaultWrongObjectField: func(p *probeEnv) error {
		if o := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).str("object"); o != "session" {
			return fmt.Errorf("object = %q, want session", o)
		}
		return nil
	},
	FaultSequenceNotIncreasing: func(p *probeEnv) error {
		_, evs := p.taskEvents(p.taskID())
		last := -1.0
		for _, e := range evs {
			if e["resource"].(map[string]any)["id"] != p.taskID() {
				continue
			}
			if s := e["sequence"].(float64); s <= last {
				return fmt.Errorf("sequence %v after %v", s, last)
			} else {
				last = s
			}
		}
		return nil
	},
	FaultSSEWrongContentType: func(p *probeEnv) error {
		_, ct, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		if !strings.HasPrefix(ct, "text/event-stream") {
			return fmt.Errorf("Content-Type %q", ct)
		}
		return nil
	},
	FaultSSEDataNotJSON: func(p *probeEnv) error {
		fs, _, _ := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		for _, f := range fs {
			if !json.Valid([]byte(f.Data)) {
				return fmt.Errorf("data %q is not JSON", f.Data)
			}
		}
		return nil
	},
	FaultOutcomeUsesTaskStatus: func(p *probeEnv) error {
		p.taskID() // an outcome to list
		for _, o := range p.do("GET", "/v1/outcomes", nil).list() {
			if st := o["status"]; st != "SUCCEEDED" && st != "FAILED" && st != "CANCELED" {
				return fmt.Errorf("outcome status %v", st)
			}
		}
		return nil
	},
	FaultMissingRequiredField: func(p *probeEnv) error {
		if _, ok := p.do("GET", "/v1/tasks/"+p.taskID(), nil).Body["created_by"]; !ok {
			return errors.New("task lacks created_by")
		}
		return nil
	},
	FaultIDsNotStable: func(p *probeEnv) error {
		if id := p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("id"); id != p.taskID() {
			return fmt.Errorf("GET task %s answered id %s", p.taskID(), id)
		}
		return nil
	},
	FaultUnknownRouteNot404: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/no-such-route", nil), 404, "unknown route")
	},
	FaultEventsRepeatOnRange: func(p *probeEnv) error {
		_, evs := p.taskEvents(p.taskID())
		first := evs[0]["id"].(string)
		for _, e := range p.do("GET", "/v1/tasks/"+p.taskID()+"/events?after_event_id="+first, nil).list() {
			if e["id"] == first {
				return errors.New("after_event_id returned the cursor event itself")
			}
		}
		return nil
	},
	FaultPublicNeedsVersion: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1", nil, "-"+VersionHeader, ""), 200, "GET /v1 without version header")
	},
	FaultAcceptMalformedAuth: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/tasks", nil, "Authorization", "Basic "+testKey), 401, "Basic credential")
	},
	FaultSessionNoMetadata: func(p *probeEnv) error {
		if _, ok := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).Body["metadata"].(map[string]any); !ok {
			return errors.New("session lacks metadata")
		}
		return nil
	},
	FaultSessionNoTranscript: func(p *probeEnv) error {
		if _, ok := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).Body["transcript"]; !ok {
			return errors.New("session lacks transcript")
		}
		return nil
	},
	FaultPartNoVisibility: func(p *probeEnv) error {
		p.taskID() // the echo agent's message
		for _, m := range p.do("GET", "/v1/sessions/"+p.sessionID()+"/messages", nil).list() {
			for _, part := range m["parts"].([]any) {
				if _, ok := part.(map[string]any)["visibility"]; !ok {
					return fmt.Errorf("message %s has a part without visibility", m["id"])
				}
			}
		}
		return nil
	},
	FaultArtifactSHAPrefixed: func(p *probeEnv) error {
		a := p.do("POST", "/v1/artifacts", map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "content_base64": "aGk="})
		if sum := p.do("GET", "/v1/artifacts/"+a.str("id"), nil).str("sha256"); !hex64.MatchString(sum) {
			return fmt.Errorf("artifact sha256 %q is not 64 bare hex digits", sum)
		}
		return nil
	},
	FaultOutcomeNotListed: func(p *probeEnv) error {
		if n := len(p.do("GET", "/v1/outcomes?task_id="+p.taskID(), nil).list()); n != 1 {
			return fmt.Errorf("outcome list for a completed task has %d items, want 1", n)
		}
		return nil
	},
	FaultMessageNotReadable: func(p *probeEnv) error {
		m := p.do("POST", "/v1/sessions/"+p.sessionID()+"/messages", map[string]any{"message": map[string]any{"role": "user", "parts": []any{}}})
		return statusIs(p.do("GET", "/v1/messages/"+m.str("id"), nil), 200, "GET appended message")
	},
	FaultTaskListIgnoresSession: func(p *probeEnv) error {
		other := p.session()
		p.submit(other, nil)
		for _, t := range p.do("GET", "/v1/tasks?session_id="+p.sessionID(), nil).list() {
			if t["session_id"] != p.sessionID() {
				return fmt.Errorf("?session_id=%s listed task of session %v", p.sessionID(), t["session_id"])
			}
		}
		return nil
	},
	FaultIdempotencyIgnoresTarget: func(p *probeEnv) error {
		ws(p, "shared-key")
		r := p.do("POST", "/v1/sessions/"+p.sessionID()+"/messages", map[string]any{"message": map[string]any{"role": "user", "parts": []any{}}}, "Idempotency-Key", "shared-key")
		if r.Code == 409 {
			return errors.New("a key reused on another target conflicts")
		}
		return nil
	},
	FaultIdempotencyScopeNoActor: func(p *probeEnv) error {
		withActors(p.harness)
		mine := p.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/"}, "Idempotency-Key", "two-actors").str("id")
		theirs := p.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/"}, append(as(secondKey), "Idempotency-Key", "two-actors")...)
		if id := theirs.str("id"); theirs.Code/100 != 2 || id == mine {
			return fmt.Errorf("another actor's create with the same key and body: %d, workspace %q (the first actor's is %q), want a workspace of its own", theirs.Code, id, mine)
		}
		return nil
	},
	FaultMalformedJSONAs500: func(p *probeEnv) error {
		return statusIs(p.do("POST", "/v1/workspaces", `{"name":`), 400, "malformed JSON")
	},
	FaultEventByIDDiffers: func(p *probeEnv) error {
		_, evs := p.taskEvents(p.taskID())
		for _, e := range evs {
			one := p.do("GET", "/v1/events/"+e["id"].(string), nil)
			a, _ := json.Marshal(e["payload"])
			b, _ := json.Marshal(one.Body["payload"])
			if string(a) != string(b) {
				return fmt.Errorf("event %s by id has payload %s, the list has %s", e["id"], b, a)
			}
		}
		return nil
	},
	FaultIdempotencyKeyLength: func(p *probeEnv) error {
		return statusIs(ws(p, strings.Repeat("k", 256)), 400, "256-character Idempotency-Key")
	},
	// Trust faults (issue 9).
	FaultCancelNoop: func(p *probeEnv) error {
		id := p.submit(p.sessionID(), []map[string]any{step("work", "ms", 5000)}).str("id")
		p.waitStatus(id, StatusWorking)
		r := p.do("POST", "/v1/tasks/"+id+"/cancel", nil)
		if r.Code != 200 {
			return p.stillWorking(id) // refused: a probe of the cancel's answer has nothing to judge
		}
		if strings.ToUpper(r.str("status")) != StatusCanceled {
			return fmt.Errorf("cancel of a WORKING task answered 200 with status %v", r.Body["status"])
		}
		return nil
	},
	FaultLowercaseStatus: func(p *probeEnv) error {
		r := p.do("GET", "/v1/tasks/"+p.taskID(), nil)
		if st, _ := r.Body["status"].(string); st != strings.ToUpper(st) {
			return fmt.Errorf("task status %q is not upper case", st)
		}
		return nil
	},
	FaultPlainSkipsWork: func(p *probeEnv) error {
		kinds, evs := p.taskEvents(p.taskID())
		for i, k := range kinds {
			_, named := evs[i]["payload"].(map[string]any)["previous_status"]
			if k == "task.completed" && !named && !contains(kinds, "task.started") {
				return fmt.Errorf("the plain task went straight to COMPLETED, announced by task.completed alone: %v", kinds)
			}
		}
		return nil
	},
	// Breadth faults (issue 9).
	FaultEventsNotScoped: func(p *probeEnv) error {
		other := p.submit(p.sessionID(), nil).str("id")
		p.waitTerminal(other)
		_, evs := p.taskEvents(p.taskID())
		fs, _, err := p.frames("/v1/tasks/"+p.taskID()+"/stream", "")
		if err != nil {
			return err
		}
		for _, f := range fs {
			var e map[string]any
			if json.Unmarshal([]byte(f.Data), &e) == nil {
				evs = append(evs, e)
			}
		}
		for _, e := range evs {
			if e["task_id"] != p.taskID() && e["resource"].(map[string]any)["id"] != p.taskID() {
				return fmt.Errorf("task %s's events include event %v of task %v", p.taskID(), e["id"], e["task_id"])
			}
		}
		return nil
	},
	FaultEventIDsNotMonotonic: func(p *probeEnv) error {
		_, evs := p.taskEvents(p.taskID())
		for i := 1; i < len(evs); i++ {
			if a, b := evs[i-1]["id"].(string), evs[i]["id"].(string); a >= b {
				return fmt.Errorf("event id %s follows %s", b, a)
			}
		}
		return nil
	},
	FaultTerminalAcceptsMessage: func(p *probeEnv) error {
		for _, kind := range []string{"input", "interrupt"} {
			r := p.do("POST", "/v1/tasks/"+p.taskID()+"/messages", map[string]any{"kind": kind,
				"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "late", "visibility": "public"}}}})
			if r.Code != 400 && r.Code != 409 {
				return fmt.Errorf("%s message to a COMPLETED task: status %d, want 400 or 409", kind, r.Code)
			}
		}
		if st := p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("status"); strings.ToUpper(st) != StatusCompleted {
			return fmt.Errorf("messages moved a COMPLETED task to %s", st)
		}
		return nil
	},
	FaultIdempotencyByteCompare: func(p *probeEnv) error {
		first := ws(p, "equivalent").str("id")
		if ws(p, "equivalent").str("id") != first {
			return nil // identical retries already broken: another probe's business
		}
		r := p.do("POST", "/v1/workspaces", `{ "root": "/", "name": "w" }`, "Idempotency-Key", "equivalent")
		if r.Code < 200 || r.Code > 299 || r.str("id") != first {
			return fmt.Errorf("a retry with the keys reordered: status %d id %q, want the first answer %s", r.Code, r.str("id"), first)
		}
		return nil
	},
	FaultAuthOnlyOnTasks: func(p *probeEnv) error {
		// Enforced on one route and not another (a server that skips it
		// everywhere is accept-missing-key's).
		if p.do("GET", "/v1/tasks", nil, "-Authorization", "").Code != 401 {
			return nil
		}
		r := p.do("GET", "/v1/sessions/"+p.sessionID()+"/events", nil, "-Authorization", "")
		return statusIs(r, 401, "session events without Authorization")
	},
	FaultVersionOnlyOnTasks: func(p *probeEnv) error {
		if p.do("GET", "/v1/tasks", nil, "-"+VersionHeader, "").Code != 426 {
			return nil // skipped everywhere: skip-version-check's
		}
		r := p.do("GET", "/v1/sessions/"+p.sessionID(), nil, "-"+VersionHeader, "")
		return statusIs(r, 426, "session read without the version header")
	},
	FaultClosedTakesTasks: func(p *probeEnv) error {
		sess := p.session()
		p.do("POST", "/v1/sessions/"+sess+"/close", nil)
		body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "x", "visibility": "public"}}}}
		if r := p.do("POST", "/v1/sessions/"+sess+"/tasks", body); r.Code/100 == 2 {
			return fmt.Errorf("a CLOSED session accepted a task: %d", r.Code)
		}
		return nil
	},
}

// stillWorking is the precondition of the cancel probes, checked when a
// cancel did not answer CANCELED: the task had not ended yet (else the
// cancel came too late to tell anything).
func (p *probeEnv) stillWorking(id string) error {
	if st := strings.ToUpper(p.do("GET", "/v1/tasks/"+id, nil).str("status")); Terminal(st) && st != StatusCanceled {
		return cannotJudge("task %s was already %s when the probe canceled it", id, st)
	}
	return nil
}

// eventIDOf is frame i's event id, from the JSON data if the id line is missing.
func eventIDOf(fs []sseFrame, i int) string {
	if i >= len(fs) {
		return ""
	}
	if fs[i].HasID {
		return fs[i].ID
	}
	var e struct{ ID string }
	json.Unmarshal([]byte(fs[i].Data), &e)
	return e.ID
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// probed are the faults probed here: all but the WebSocket faults, whose
// probes need the WebSocket adapter, which this package cannot import (it
// imports refharness). Package wsadapter has their probes and their matrix
// (refharness/wsadapter/faults_test.go); here they meet every REST probe,
// below, which none of them may break.
func probed() []Fault {
	return slices.DeleteFunc(AllFaults(), func(f Fault) bool { return slices.Contains(WSFaults(), f) })
}

func TestEveryFaultHasAProbe(t *testing.T) {
	seen := map[Fault]bool{}
	for _, f := range AllFaults() {
		if seen[f] {
			t.Errorf("fault %s listed twice", f)
		}
		seen[f] = true
		ws := slices.Contains(WSFaults(), f)
		if probes[f] == nil && !ws {
			t.Errorf("fault %s has no probe", f)
		}
		if probes[f] != nil && ws {
			t.Errorf("WebSocket fault %s has a probe here; its probe belongs in package wsadapter", f)
		}
	}
	for _, f := range WSFaults() {
		if !seen[f] {
			t.Errorf("WebSocket fault %s is not in AllFaults", f)
		}
	}
	if len(probes) != len(probed()) {
		t.Errorf("%d probes for %d faults", len(probes), len(probed()))
	}
}

// Under the race detector the clean harness and the one with every variant
// at once meet the probes (every variant's code runs, for races); each
// variant alone meets them in every build without -race, and with -proofs
// (testmain.Full), which the README's test command runs.
func TestProbesPassOnCleanServerAndVariants(t *testing.T) {
	configs := map[string]Options{"clean": {}}
	all := Variants{}
	for _, v := range AllVariants() {
		if v == VariantNoScenarioHook || v == VariantCoreOnly || v == VariantNoReplay {
			// The probes drive tasks by the hook, set up through the
			// Workspace API and replay tasks: the things these variants
			// take away.
			continue
		}
		if testmain.Full() {
			configs[string(v)] = Options{Variants: Variants{v: true}}
		}
		all[v] = true
	}
	configs["all variants"] = Options{Variants: all}
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				for _, f := range probed() {
					if err := probes[f](newProbeEnv(t, opts)); err != nil {
						t.Errorf("probe %s fails: %v", f, err)
					}
				}
			})
		})
	}
}

// TestEachFaultBreaksExactlyItsProbe runs every probe against every fault.
// The matrix is pure logic and N² harnesses: under the race detector, where
// it would cost ten times as much and find no race the other tests here do
// not, each fault meets its own probe only (and the clean harness meets
// every probe, above); the full matrix runs in every build without -race,
// and with -proofs (testmain.Full), which the README's test command runs.
func TestEachFaultBreaksExactlyItsProbe(t *testing.T) {
	for _, f := range AllFaults() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel() // N² harnesses: use every core
			synctest.Test(t, func(t *testing.T) {
				for _, g := range probed() {
					// A WebSocket fault has no probe here: without -race it
					// meets every probe (and must break none); under -race,
					// where each fault meets its own probe only, none.
					if !testmain.Full() && g != f {
						continue
					}
					err := probes[g](newProbeEnv(t, Options{Faults: Faults{f: true}}))
					var cannot unjudged
					switch {
					case errors.As(err, &cannot):
						t.Errorf("under fault %s, probe %s could not judge: %v", f, g, err)
					case g == f && err == nil:
						t.Errorf("fault %s does not break its probe", f)
					case g != f && err != nil:
						t.Errorf("fault %s also breaks probe %s: %v", f, g, err)
					}
				}
			})
		})
	}
}
