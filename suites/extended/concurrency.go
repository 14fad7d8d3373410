package extended

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/load"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The Extended concurrency checks (issue 23, docs/concurrency.md): every
// Extended write retried --concurrency ways at once with one
// Idempotency-Key (EXT-IDEM-006, -007), one write sent at once over REST
// and as its WebSocket command (EXT-WS-016), and WebSocket sessions
// opened at once while clients append (EXT-WS-017). Rounds, verdicts and
// reports as in the Core checks (suites/core/concurrency.go).

const (
	reqExtRaceSame = "EXT-IDEM-006"
	reqExtRaceDiff = "EXT-IDEM-007"
	reqWSMixed     = "EXT-WS-016"
	reqWSFanOut    = "EXT-WS-017"
)

// Default rounds of each check, sized so that each race the reference
// Harness's faults plant shows in at least 99 % of runs
// (docs/performance.md, "Concurrency checks").
// wsLag is how long after the commands EXT-WS-016's REST requests go in
// every other round (a few milliseconds: inside any window a late
// recorded key leaves, and short of a command's whole round trip).
const wsLag = 2 * time.Millisecond

const (
	roundsExtKeyed = 3
	roundsWSMixed  = 6
	roundsWSFanOut = 4
)

// raceWrite is an Extended write whose retries race.
type raceWrite struct {
	op, method, path string
	base             map[string]any
	// field is the body member a different body changes ("" when the
	// write's body has none to change: it races with one body only).
	field string
	vary  func(i int) any
	// named is what a success answer names (nil: its id).
	named func(*client.Response) string
}

// body is shot i's body: the base one, or with field changed.
func (w raceWrite) body(i int, same bool) map[string]any {
	b := map[string]any{}
	for k, v := range w.base {
		b[k] = v
	}
	if !same {
		b[w.field] = w.vary(i)
	}
	return b
}

func (w raceWrite) identity() func(*client.Response) string {
	if w.named != nil {
		return w.named
	}
	return check.AnswerID
}

// truncated names a truncate's answer by what it did.
func truncated(r *client.Response) string {
	m, err := r.Object()
	if err != nil || xStr(m, "session_id") == "" {
		return ""
	}
	return fmt.Sprintf("%s kept %v removed %v", xStr(m, "session_id"), m["kept_turn_count"], m["removed_turn_count"])
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// raceWrites are the Extended writes the checks race: the writes of
// EXT-IDEM-003 (keyedWrites) and artifact registration, each on state of
// its own, with the member a different body changes.
func raceWrites(ctx context.Context) []raceWrite {
	GinkgoHelper()
	vary := map[string]struct {
		field string
		vary  func(i int) any
	}{
		"createPersona":       {"description", func(i int) any { return fmt.Sprintf("conform persona, body %d", i+1) }},
		"updatePersona":       {"description", func(i int) any { return fmt.Sprintf("patched by body %d", i+1) }},
		"createWorkspace":     {"name", func(i int) any { return fmt.Sprintf("conform race workspace %d", i+1) }},
		"updateWorkspace":     {"name", func(i int) any { return fmt.Sprintf("patched by body %d", i+1) }},
		"createSessionBranch": {"base_ref", func(i int) any { return fmt.Sprintf("conform-race-%d", i+1) }},
		"truncateSession":     {"keep_first", func(i int) any { return i }},
		"createMemory":        {"content", func(i int) any { return fmt.Sprintf("conform race memory %d", i+1) }},
		"createVault":         {"provider", func(i int) any { return fmt.Sprintf("conform-test-%d", i+1) }},
	}
	var out []raceWrite
	for _, k := range keyedWrites(ctx) {
		w := raceWrite{op: k.op, method: k.method, path: k.path, base: asMap(k.body)}
		w.field, w.vary = vary[k.op].field, vary[k.op].vary
		if k.op == "truncateSession" {
			w.named = truncated
		}
		out = append(out, w)
	}
	sess := xID(xSession(ctx, xWorkspace(ctx), ""))
	return append(out, raceWrite{op: "registerArtifact", method: http.MethodPost, path: "/v1/artifacts", base: artifactBody(sess, nil),
		field: "metadata", vary: func(i int) any { return map[string]any{"conform.run": suite.Env().RunID, "conform.body": i + 1} }})
}

// extKeyedRound fires one write --concurrency ways with one key: one body
// (same), or each its own. offered is false when the target answered every
// request with 404, 405 or 501.
func extKeyedRound(ctx context.Context, d *load.Driver, req string, w raceWrite, same bool) (o load.Outcome, offered bool) {
	GinkgoHelper()
	key := suite.Key("race")
	shots := make([]load.Shot, d.Limits().N)
	for j := range shots {
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: w.method, Path: w.path, Body: w.body(j, same), IdempotencyKey: key}}
	}
	r, why := fireX(ctx, d, shots, req)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}, true
	}
	// docs/interpretations.md#offered-by-evidence: the round is judged
	// unless every answer refuses as if the write were not offered and the
	// evidence agrees; a refusal the evidence contradicts is the write's
	// own requirement's to judge (as in the sequential EXT-IDEM check).
	offered = slices.ContainsFunc(r.Answers, func(a load.Answer) bool { return !check.UnofferedStatus(a.Status) })
	if !offered {
		why, err := suite.Unoffered(ctx, suite.Offering{Request: shots[0].Req, Answer: r.Answers[0].Response()}, req)
		return load.Outcome{Round: r, Unjudged: cmp.Or(why, fmt.Sprint(err))}, false
	}
	o, _ = judgeKeyed(ctx, r, shots, fmt.Sprintf("%s %s (%s)", w.method, w.path, w.op), same, w.identity(), req)
	return o, true
}

// judgeKeyed judges a round of keyed writes (KeyedRound) and the retries
// of what it refused as retryable (Settled).
func judgeKeyed(ctx context.Context, r *load.Round, shots []load.Shot, what string, same bool, named func(*client.Response) string, req string) (load.Outcome, string) {
	GinkgoHelper()
	resps := make([]*client.Response, len(r.Answers))
	for i, a := range r.Answers {
		resps[i] = a.Response()
	}
	winner, retry, err := check.KeyedRoundBy(what, same, resps, named)
	errs := []error{err}
	var after []load.Read
	for _, j := range retry {
		resp := suite.Do(ctx, shots[j].Req, req)
		winner, err = check.SettledBy(what, same, winner, resp, named)
		errs = append(errs, err)
		after = append(after, load.Read{What: resp.String() + " (the retry of " + shots[j].Label + ")", Saw: load.Answer{Status: resp.Status, Body: resp.Body}.Summary()})
	}
	return load.Outcome{Round: r, Err: errors.Join(errs...), After: after}, winner
}

// fireX fires a round (fire in the Core checks): a failure below HTTP
// ends the spec with an error verdict; a round the target kept refusing,
// or whose command frames got no answer, is unjudged.
func fireX(ctx context.Context, d *load.Driver, shots []load.Shot, req string) (*load.Round, string) {
	GinkgoHelper()
	r, err := d.Fire(ctx, shots)
	if err != nil {
		suite.Must(req, fmt.Errorf("firing a round: %w", err))
	}
	suite.Transport(r.TransportError(), req)
	for _, a := range r.Answers {
		if a.Err != nil {
			return r, fmt.Sprintf("%s got no answer: %v", a.Label, a.Err)
		}
	}
	if r.GaveUp {
		return r, "the target still refused (429 or 503) at the round's deadline"
	}
	return r, ""
}

// extKeyedRace runs the rounds of every Extended write, and with the
// scenario hook of an approval answer, for req.
func extKeyedRace(ctx context.Context, req string, same bool) {
	GinkgoHelper()
	d := suite.Driver()
	d.Warm(ctx, d.Limits().N)
	ws := raceWrites(ctx)
	hook := suite.Env().Discovery.Scenarios() != ""
	rounds := suite.Rounds(roundsExtKeyed)
	t := load.NewTally(rounds * (len(ws) + 1))
	skipped := map[string]string{}
	i := 0
	for range rounds {
		for _, w := range ws {
			if _, skip := skipped[w.op]; skip || (!same && w.field == "") {
				continue
			}
			o, offered := extKeyedRound(ctx, d, req, w, same)
			if !offered {
				skipped[w.op] = fmt.Sprintf("%s (%s %s not offered: %s; %s)", w.op, w.method, w.path, o.Round.Answers[0].Summary(), o.Unjudged)
				continue
			}
			i++
			t.Add(i, o)
		}
		if hook {
			i++
			t.Add(i, approvalRound(ctx, d, req, same))
		}
	}
	var notes []string
	for _, why := range skipped {
		notes = append(notes, why)
	}
	if !hook {
		notes = append(notes, "approval answers: the target does not offer the conform.scenarios hook, so no task could be made to wait for an approval")
	}
	if len(notes) > 0 {
		suite.Note(fmt.Sprintf("%s: not raced: %s", req, strings.Join(notes, "; ")))
	}
	suite.Race(req, t)
}

// approvalRound makes a task wait for a tool approval and answers it
// --concurrency ways at once with one key: one body (same), or approvals
// and denials. The answers must have one winner, and the task must record
// one tool confirmation.
func approvalRound(ctx context.Context, d *load.Driver, req string, same bool) load.Outcome {
	GinkgoHelper()
	sess := xID(xSession(ctx, xWorkspace(ctx), ""))
	id := xSubmit(ctx, sess, nil, xStep("tool_approval", "tool", "conform.noop"))
	if m, ok := xAwaitStatus(ctx, id, check.AuthRequired); !ok {
		return load.Outcome{Unjudged: fmt.Sprintf("task %s with a tool_approval step is %v, not AUTH_REQUIRED", id, m["status"])}
	}
	key := suite.Key("race-approval")
	shots := make([]load.Shot, d.Limits().N)
	for j := range shots {
		part := xDecision("approve")
		if !same {
			// Every body its own: approvals and denials, each numbered.
			part = map[string]any{"type": "json", "value": map[string]any{"decision": []string{"approve", "deny"}[j%2], "conform.body": j + 1}, "visibility": "public"}
		}
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/messages", IdempotencyKey: key,
			Body: map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user", "parts": []any{part}}}}}
	}
	r, why := fireX(ctx, d, shots, req)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}
	}
	o, _ := judgeKeyed(ctx, r, shots, "POST /v1/tasks/"+id+"/messages (tool_confirmation)", same, check.AnswerID, req)
	xTerminal(ctx, id)
	k := xKinds(xEvents(ctx, id))
	o.After = append(o.After, load.Read{What: "GET /v1/tasks/" + id + "/events", Saw: fmt.Sprintf("%d user.tool_confirmation, %d tool.approved, %d tool.denied", k["user.tool_confirmation"], k["tool.approved"], k["tool.denied"])})
	if k["user.tool_confirmation"] > 1 || k["tool.approved"]+k["tool.denied"] > 1 {
		o.Err = errors.Join(o.Err, fmt.Errorf("task %s records %d user.tool_confirmation events and %d tool decisions for one approval answered %d ways at once with one Idempotency-Key, want one",
			id, k["user.tool_confirmation"], k["tool.approved"]+k["tool.denied"], len(shots)))
	}
	return o
}

// wsCommandShot sends a user_message command on l, as a load shot whose
// REST equivalent is req.
func wsCommandShot(l *wsLink, label string, req client.Request, frame map[string]any) load.Shot {
	raw, _ := json.Marshal(frame)
	return load.Shot{Label: label, Transport: "websocket", Req: req, Script: string(raw),
		Send: func(ctx context.Context) (load.Answer, error) {
			f, err := l.Command(ctx, wsStream(), frame)
			if err != nil {
				return load.Answer{}, err
			}
			resp := frameResponse(l, "user_message", f)
			return load.Answer{Status: resp.Status, Body: resp.Body}, nil
		}}
}

// wsEventIDs are the event ids of a session's event frames, in order.
func wsEventIDs(s *client.WSSession) []string {
	var out []string
	for _, f := range s.Frames() {
		if f.Type == ws.TypeEvent {
			out = append(out, f.Str("event_id"))
		}
	}
	return out
}

var _ = Describe("Concurrency of Extended writes and WebSocket sessions", suite.Concurrency, func() {
	It("acts once on each Extended write and approval answer retried at once with one key and body", suite.Req(reqExtRaceSame), func(ctx SpecContext) {
		extKeyedRace(ctx, reqExtRaceSame, true)
	})

	It("lets one of an Extended write's bodies sent at once with one key win and refuses the others with 409", suite.Req(reqExtRaceDiff), func(ctx SpecContext) {
		extKeyedRace(ctx, reqExtRaceDiff, false)
	})

	It("acts once on a message sent at once over REST and as WebSocket commands with one idempotency key", suite.Req(reqWSMixed), func(ctx SpecContext) {
		wsAllowed()
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		k := max(1, n/2)
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		links := make([]*wsLink, k)
		for j := range links {
			links[j] = wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		}
		list := "/v1/sessions/" + client.Seg(sess) + "/messages"
		rounds := suite.Rounds(roundsWSMixed)
		t := load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			before := xIDs(xPrereqList(ctx, "reading the session's messages", "CORE-READ-011", list, nil))
			key := suite.Key("race-ws")
			msg := xText(fmt.Sprintf("conform message sent over REST and WebSocket at once, round %d", i))
			rest := client.Request{Method: http.MethodPost, Path: list, Body: map[string]any{"message": msg}, IdempotencyKey: key}
			// Every other round the REST requests go wsLag after the
			// commands: a REST request usually arrives first, and a
			// command path that looks its key up on arrival and records it
			// late races only requests that come after it.
			var lag time.Duration
			if i%2 == 1 {
				lag = wsLag
			}
			var shots []load.Shot
			for j := range n - k {
				shots = append(shots, load.Shot{Label: fmt.Sprintf("rest#%d", j+1), Req: rest, Lag: lag})
			}
			for j, l := range links {
				shots = append(shots, wsCommandShot(l, fmt.Sprintf("ws#%d", j+1), rest,
					map[string]any{"type": "user_message", "session_id": sess, "message": msg, "idempotency_key": key}))
			}
			r, why := fireX(ctx, d, shots, reqWSMixed)
			if why != "" {
				t.Add(i, load.Outcome{Round: r, Unjudged: why})
				continue
			}
			o, winner := judgeKeyed(ctx, r, shots, "POST "+list+" and user_message", true, check.AnswerID, reqWSMixed)
			after := xIDs(xPrereqList(ctx, "reading the session's messages", "CORE-READ-011", list, nil))
			o.Err = errors.Join(o.Err, check.Grew("GET "+list, before, after, winner))
			o.After = append(o.After, load.Read{What: "GET " + list, Saw: fmt.Sprintf("%d messages, %d new", len(after), len(after)-len(before))})
			t.Add(i, o)
		}
		suite.Race(reqWSMixed, t)
	})

	It("delivers every event once, in order, on each of several WebSocket sessions opened at once while clients append", suite.Req(reqWSFanOut), func(ctx SpecContext) {
		wsAllowed()
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		probe := wsOpen(ctx, client.WSDial{Path: sessionStream(xID(xSession(ctx, xWorkspace(ctx), ""))), Way: ws.ByHeaders})
		probe.Close()
		rounds := suite.Rounds(roundsWSFanOut)
		t := load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			o := wsFanOutRound(ctx, d, i)
			t.Add(i, o)
			if o.Err != nil {
				break // a session that lost events cost this round its deadline: one is enough
			}
		}
		suite.Race(reqWSFanOut, t)
	})
})

// wsFanOutRound opens half of --concurrency WebSocket sessions on a fresh
// Session's stream at once with as many clients appending, then
// --concurrency clients append at once; each session must deliver the
// Session's whole event list once, in order.
func wsFanOutRound(ctx context.Context, d *load.Driver, i int) load.Outcome {
	GinkgoHelper()
	n := d.Limits().N
	k := max(2, n/2)
	sess := xID(xSession(ctx, xWorkspace(ctx), ""))
	list := "/v1/sessions/" + client.Seg(sess) + "/messages"
	appends := func(m int, label string) []load.Shot {
		var out []load.Shot
		for j := range m {
			out = append(out, load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: list, IdempotencyKey: suite.Key("append"),
				Body: map[string]any{"message": xText(fmt.Sprintf("conform client %d, %s", j+1, label))}}})
		}
		return out
	}
	sessions := make([]*client.WSSession, k)
	opened := make([]string, k)
	shots := appends(n-k, fmt.Sprintf("round %d, with the sessions", i))
	for j := range k {
		req := client.Request{Path: sessionStream(sess)}
		shots = append(shots, load.Shot{Label: fmt.Sprintf("ws#%d", j+1), Transport: "websocket", Req: req, Script: "a harn-ws.v1 upgrade of GET " + req.Path,
			Send: func(ctx context.Context) (load.Answer, error) {
				s, resp, err := suite.Client().OpenWS(context.WithoutCancel(ctx), client.WSDial{Path: req.Path, Way: ws.ByHeaders})
				if s == nil {
					if resp != nil {
						return load.Answer{Status: resp.Status, Body: resp.Body}, nil
					}
					return load.Answer{}, err
				}
				sessions[j] = s
				if _, err := wsReady(ctx, s); err != nil {
					opened[j] = err.Error()
				}
				return load.Answer{Status: s.Response.Status}, nil
			}})
	}
	first, why := fireX(ctx, d, shots, reqWSFanOut)
	for _, s := range sessions {
		if s != nil {
			suite.AtSpecEnd(func() { s.Close(); judgeFrames(s) })
		}
	}
	if why != "" {
		return load.Outcome{Round: first, Unjudged: why}
	}
	burst, why := fireX(ctx, d, appends(n, fmt.Sprintf("round %d", i)), reqWSFanOut)
	r := load.Merge(first, burst)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}
	}
	evs := sessionEvents(ctx, sess)
	want := eventIDs(evs)
	errs := []error{}
	after := []load.Read{{What: "GET /v1/sessions/" + sess + "/events", Saw: fmt.Sprintf("%d events", len(want))}}
	for j, s := range sessions {
		switch {
		case s == nil:
			errs = append(errs, fmt.Errorf("session %d of %d: the upgrade of %s was not accepted: %s", j+1, k, sessionStream(sess), first.Answers[n-k+j].Summary()))
			continue
		case opened[j] != "":
			errs = append(errs, fmt.Errorf("session %d of %d on %s: %s", j+1, k, sessionStream(sess), opened[j]))
			continue
		}
		if len(want) > 0 {
			_, _ = s.Await(ctx, wsStream(), 0, withEventID(want[len(want)-1]))
		}
		got := wsEventIDs(s)
		after = append(after, load.Read{What: fmt.Sprintf("session %d, event frames", j+1), Saw: fmt.Sprintf("%d events", len(got))})
		errs = append(errs, check.SeenOnce(fmt.Sprintf("WebSocket session %d of %d on %s, opened at once with the others", j+1, k, sessionStream(sess)), got, want))
	}
	return load.Outcome{Round: r, Err: errors.Join(errs...), After: after}
}
