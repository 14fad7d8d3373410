package negative

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/openapi"
)

// Rule is one thing a target owes a malformed request; a suite maps each
// to the requirement of its level (suites/*/hostile.go).
type Rule string

const (
	// RuleAnswered: an HTTP answer below 500 (no server error, hang or
	// dropped connection).
	RuleAnswered Rule = "answered"
	// RuleRefused: a request the document declares invalid is refused
	// with a 4xx (400 invalid_request when one member is at fault and the
	// request is otherwise accepted).
	RuleRefused Rule = "refused"
	// RuleUnchanged: a refused request changes nothing a read shows.
	RuleUnchanged Rule = "unchanged"
	// RuleNoEcho: an error carries no credential the request carried.
	RuleNoEcho Rule = "no-echo"
	// RuleOpen: a member an open schema does not name is accepted.
	RuleOpen Rule = "open"
	// RuleParam: a 400 for one member names it in error.param (a SHOULD).
	RuleParam Rule = "param"
)

// Rules lists every rule.
var Rules = []Rule{RuleAnswered, RuleRefused, RuleUnchanged, RuleNoEcho, RuleOpen, RuleParam}

// Transport sends the pass's requests.
type Transport interface {
	Do(ctx context.Context, r client.Request) (*client.Response, error)
	// Stream opens r as an event stream and closes it at once: only the
	// answer's head (and a refusal's body) is judged.
	Stream(ctx context.Context, r client.Request) (*client.Response, error)
	// Alive reports whether the target answers a plain request (GET /v1).
	Alive(ctx context.Context) bool
	// Curl renders a request as a shell command.
	Curl(r client.Request) string
}

// Watch is a read whose answer a refused request must leave unchanged.
type Watch struct {
	Path  string // escaped, below the protocol root
	Query url.Values
	List  bool // a list: compare its item ids; else the whole object
}

// Target is one operation to probe.
type Target struct {
	Base    Base
	Watches []Watch
}

// Pass is one negative pass over a level's operations.
type Pass struct {
	Doc *openapi.Doc
	T   Transport
	// Seed makes the plan; Budget bounds the malformed requests (and their
	// shrinking). Bookkeeping (baselines, reads of the state, liveness
	// checks) is not counted: at most a few requests per operation.
	Seed   int64
	Budget int
	// Canary is a made-up API key the pass puts in the metadata of its
	// malformed requests; Secret reports whether a text holds a
	// configured secret (the run's key). No error may carry either.
	Canary string
	Secret func(string) bool
	// MaxHangs stops the pass after that many requests got no answer (0:
	// 2): a target that hangs on malformed input has its verdict.
	MaxHangs int
}

// Result is what a pass found.
type Result struct {
	Findings []Finding
	// Judged counts, per rule, the answers it looked at.
	Judged map[Rule]int
	// Sent counts the malformed requests (shrinking included), Bookkeeping
	// the rest.
	Sent, Bookkeeping int
	Ops               []string        // operations probed
	ByClass           map[Class]int   // malformed requests by class
	Notes             []string        // what a reader should know
	Unjudged          map[Rule]string // why a rule had nothing to look at, when it had not
	Stopped           string          // why the pass ended early
}

// Finding is one defect, shrunk: the same defect on several operations is
// one finding.
type Finding struct {
	Rule   Rule
	Op     openapi.Operation
	Others []string // other operations with the same defect
	Count  int      // requests that showed it
	Muts   []Mutation
	// Anchored: Muts ends with the anchor that keeps a write invalid.
	Anchored bool
	Curl     string
	Answer   string
	Err      error
	// From is what the shrinking started from, when it shrank.
	From string
}

// Message is the finding as a report says it.
func (f Finding) Message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %v", f.Op.ID, f.Op.Method+" "+f.Op.Template, f.Err)
	var ms []string
	for i, m := range f.Muts {
		s := m.String()
		if f.Anchored && i == len(f.Muts)-1 && len(f.Muts) > 1 {
			s += ", the anchor that keeps the write invalid"
		}
		ms = append(ms, s)
	}
	if len(ms) > 0 {
		fmt.Fprintf(&b, "\n  minimal reproduction: %s", strings.Join(ms, "; "))
	}
	if f.From != "" {
		fmt.Fprintf(&b, " (shrunk from %s)", f.From)
	}
	if f.Curl != "" {
		fmt.Fprintf(&b, "\n  %s", f.Curl)
	}
	if f.Answer != "" {
		fmt.Fprintf(&b, "\n  answer: %s", f.Answer)
	}
	if len(f.Others) > 0 {
		fmt.Fprintf(&b, "\n  the same defect on %d more operation(s): %s", len(f.Others), strings.Join(f.Others, ", "))
	}
	if f.Count > 1 {
		fmt.Fprintf(&b, "\n  %d requests of the pass showed it", f.Count)
	}
	return b.String()
}

// shot is one request sent and its answer.
type shot struct {
	t     *Target
	p     Planned
	resp  *client.Response
	terr  error
	alive bool
	seq   int // send order
}

type run struct {
	*Pass
	res       *Result
	sent      int
	limit     int // malformed requests the plan may send (the rest is the shrinker's)
	hangs     int
	shots     []*shot
	baseline  map[string]*client.Response // write operations' valid base answers, when sent
	accepted  map[string]bool             // write operations that accepted a valid request
	stateFail []*Finding
}

// Run probes targets (ordered by template and method) and returns what it
// found.
func (p *Pass) Run(ctx context.Context, targets []Target) *Result {
	r := &run{Pass: p, res: &Result{Judged: map[Rule]int{}, ByClass: map[Class]int{}, Unjudged: map[Rule]string{}},
		baseline: map[string]*client.Response{}, accepted: map[string]bool{}}
	if p.MaxHangs <= 0 {
		p.MaxHangs = 2
	}
	ts := slices.Clone(targets)
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := ts[i].Base.Op, ts[j].Base.Op
		if a.Template != b.Template {
			return a.Template < b.Template
		}
		return a.Method < b.Method
	})
	reserve := p.Budget / 5
	r.limit = p.Budget - reserve
	quotas := r.quotas(ts)
	for i := range ts {
		t := &ts[i]
		r.res.Ops = append(r.res.Ops, t.Base.Op.ID)
		if r.over(ctx) {
			break
		}
		r.probe(ctx, t, quotas[i])
	}
	if !r.over(ctx) {
		for i := range ts {
			r.acceptPhase(ctx, &ts[i])
		}
	}
	r.limit = p.Budget
	r.findings(ctx)
	return r.res
}

// over reports whether the pass must stop sending.
func (r *run) over(ctx context.Context) bool {
	return ctx.Err() != nil || r.res.Stopped != ""
}

// quotas splits the plan's share of the budget over the targets, in
// proportion to how many classes of malformation each offers (a body with
// many members draws more than a read with one path id); the remainder
// goes to the first ones.
func (r *run) quotas(ts []Target) []int {
	q := make([]int, len(ts))
	if len(ts) == 0 || r.limit <= 0 {
		return q
	}
	weights := make([]int, len(ts))
	total := 0
	for i, t := range ts {
		classes := map[Class]bool{}
		for _, m := range Generate(r.Doc, t.Base, nil) {
			classes[m.Class] = true
		}
		weights[i] = max(1, len(classes))
		total += weights[i]
	}
	left := r.limit
	for i, w := range weights {
		q[i] = r.limit * w / total
		left -= q[i]
	}
	for i := 0; left > 0; i = (i + 1) % len(q) {
		q[i]++
		left--
	}
	return q
}

// withCanary is base with the canary key in its body's metadata (or its
// message's), where the schema has one.
func (r *run) withCanary(base Base) (Base, bool) {
	if r.Canary == "" || base.Body == nil {
		return base, false
	}
	s, ok := r.Doc.RequestSchema(base.Op.ID)
	if !ok {
		return base, false
	}
	sh := shapeOf(r.Doc, s)
	body, _ := jsonv.Copy(base.Body).(map[string]any)
	put := func(m map[string]any) {
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md["api_key"] = r.Canary
		m["metadata"] = md
	}
	switch {
	case sh.props["metadata"] != nil:
		put(body)
	case sh.props["message"] != nil:
		msg, ok := body["message"].(map[string]any)
		if !ok {
			return base, false
		}
		put(msg)
	default:
		return base, false
	}
	base.Body = body
	return base, true
}

// probe sends target's plan, reading its state before and after.
func (r *run) probe(ctx context.Context, t *Target, quota int) {
	op := t.Base.Op
	if !writes(op) && t.Base.Ready() {
		// The valid read first: what the malformed ones are told from.
		r.bookkeep(ctx, t, Planned{Base: t.Base, Built: Apply(t.Base, nil)})
	}
	base, _ := r.withCanary(t.Base)
	plan := Plan(r.Doc, base, r.Seed, quota)
	if len(plan) == 0 {
		return
	}
	watched := writes(op) && len(t.Watches) > 0
	var cur []string
	if watched {
		before := r.snap(ctx, t)
		cur = r.snap(ctx, t)
		switch {
		case before == nil || cur == nil:
			r.note(fmt.Sprintf("%s: the state a refused request must leave alone could not be read (%s); not judged there", op.ID, watchList(t)))
			watched = false
		case !slices.Equal(before, cur):
			r.note(fmt.Sprintf("%s: %s changed with nothing sent (work still running?); refused requests not judged there", op.ID, watchList(t)))
			watched = false
		}
	}
	// The state is read again after every chunk of requests, so a change
	// is blamed on one of a few.
	var chunk []*shot
	check := func(final bool) {
		if !watched || len(chunk) == 0 || !final && len(chunk) < stateChunk {
			return
		}
		now := r.snap(ctx, t)
		if now == nil {
			r.note(fmt.Sprintf("%s: %s could not be read again; not judged further", op.ID, watchList(t)))
			watched = false
			return
		}
		r.res.Judged[RuleUnchanged]++
		if !slices.Equal(cur, now) {
			r.blame(ctx, t, chunk, now)
			watched = false // the state is no longer the one compared
		}
		cur, chunk = now, nil
	}
	for _, pl := range plan {
		if r.sent >= r.limit || r.over(ctx) {
			break
		}
		s := r.send(ctx, t, pl)
		r.shots = append(r.shots, s)
		chunk = append(chunk, s)
		for _, m := range pl.Built.Muts {
			r.res.ByClass[m.Class]++
		}
		check(false)
	}
	if !r.over(ctx) {
		check(true)
	}
}

// stateChunk is how many requests go between two reads of the state.
const stateChunk = 8

func watchList(t *Target) string {
	var ws []string
	for _, w := range t.Watches {
		ws = append(ws, "GET "+w.Path)
	}
	return strings.Join(ws, ", ")
}

func (r *run) note(s string) { r.res.Notes = append(r.res.Notes, s) }

// blame finds which refused request changed the state (replaying halves,
// reading the state after each) and shrinks it.
func (r *run) blame(ctx context.Context, t *Target, sent []*shot, cur []string) {
	var refused []Planned
	for _, s := range sent {
		if s.p.Expect == Refuse && s.resp != nil && s.resp.Status >= 400 {
			refused = append(refused, s.p)
		}
	}
	changed := func(pls []Planned) (bool, *shot) {
		var last *shot
		for _, pl := range pls {
			last = r.replay(ctx, t, pl)
		}
		now := r.snap(ctx, t)
		if now == nil {
			return false, last
		}
		c := !slices.Equal(now, cur)
		cur = now
		return c, last
	}
	var find func(pls []Planned) (Planned, *shot, bool)
	find = func(pls []Planned) (Planned, *shot, bool) {
		if len(pls) == 0 || r.sent >= r.Budget || r.over(ctx) {
			return Planned{}, nil, false
		}
		if len(pls) == 1 {
			c, s := changed(pls)
			return pls[0], s, c
		}
		h := len(pls) / 2
		for _, part := range [][]Planned{pls[:h], pls[h:]} {
			if c, _ := changed(part); c {
				return find(part)
			}
		}
		return Planned{}, nil, false
	}
	pl, s, ok := find(refused)
	if !ok {
		r.note(fmt.Sprintf("%s: %s changed during the refused requests, but replaying them did not change it again: not blamed on any of them", t.Base.Op.ID, watchList(t)))
		return
	}
	diff := check.StateUnchanged(watchList(t), strings.Join(cur, "\n"), strings.Join(cur, "\n"))
	pred := func(c Planned) (*shot, bool) {
		before := r.snap(ctx, t)
		cs := r.replay(ctx, t, c)
		after := r.snap(ctx, t)
		ok := before != nil && after != nil && !slices.Equal(before, after) && cs.resp != nil && cs.resp.Status >= 400
		if ok {
			diff = check.StateUnchanged(watchList(t), strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
		return cs, ok
	}
	if _, ok := pred(pl); !ok {
		r.note(fmt.Sprintf("%s: %s changed after %s, refused, but not when it was sent again: not blamed on it", t.Base.Op.ID, watchList(t), requestLine(pl.Built)))
		return
	}
	min, ms, from := r.shrink(ctx, t, pl, s, pred)
	f := &Finding{Rule: RuleUnchanged, Op: t.Base.Op, Count: 1, Muts: min.Built.Muts, Anchored: min.Anchored,
		Err: fmt.Errorf("%s, refused with %s: %v", requestLine(min.Built), status(ms), diff), From: from}
	r.fill(f, min, ms)
	r.stateFail = append(r.stateFail, f)
}

// snap reads every watch of t (a list to its end, at most maxSnapPages
// pages), nil when one cannot be read.
func (r *run) snap(ctx context.Context, t *Target) []string {
	var out []string
	for _, w := range t.Watches {
		q := url.Values{}
		for k, v := range w.Query {
			q[k] = v
		}
		if w.List && q.Get("limit") == "" {
			q.Set("limit", "200")
		}
		var parts []string
		for range maxSnapPages {
			r.res.Bookkeeping++
			resp, err := r.T.Do(ctx, client.Request{Path: w.Path, Query: q})
			if err != nil {
				return nil
			}
			s, err := check.Snapshot(resp, w.List)
			if err != nil {
				return nil
			}
			parts = append(parts, s)
			if !w.List {
				break
			}
			p, _ := check.ListPage(resp)
			if !p.HasMore || len(p.IDs) == 0 {
				break
			}
			if strings.HasSuffix(w.Path, "/events") {
				q.Set("after_event_id", p.IDs[len(p.IDs)-1])
			} else if p.NextCursor != "" {
				q.Set("cursor", p.NextCursor)
			} else {
				break
			}
		}
		out = append(out, w.Path+": "+strings.Join(parts, " | "))
	}
	return out
}

// maxSnapPages bounds one read of a list's state.
const maxSnapPages = 10

func (r *run) request(pl Planned) client.Request {
	b := pl.Built
	req := client.Request{Method: b.Method, Path: b.Path, Query: b.Query, Header: b.Header.Clone()}
	switch pl.Expect {
	case Refuse:
		req.Probe = InvalidProbe + probeText(b)
	case Tolerate:
		req.Probe = probeText(b)
	}
	if b.Body != nil {
		req.RawBody = b.Body
	}
	return req
}

// InvalidProbe starts the Probe of a request the document declares
// invalid: a success answer to it is the pass's finding (RuleRefused), not
// a body to judge against the operation's success schema.
const InvalidProbe = "invalid: "

func probeText(b Built) string {
	var ms []string
	for _, m := range b.Muts {
		ms = append(ms, m.String())
	}
	if len(ms) == 0 {
		return ""
	}
	return "hostile input: " + strings.Join(ms, "; ")
}

// send sends a planned malformed request (counted against the budget).
func (r *run) send(ctx context.Context, t *Target, pl Planned) *shot {
	r.sent++
	r.res.Sent++
	return r.exchange(ctx, t, pl)
}

// replay is send for the shrinker and blame.
func (r *run) replay(ctx context.Context, t *Target, pl Planned) *shot { return r.send(ctx, t, pl) }

// bookkeep sends a valid request (not counted against the budget).
func (r *run) bookkeep(ctx context.Context, t *Target, pl Planned) *shot {
	r.res.Bookkeeping++
	return r.exchange(ctx, t, pl)
}

func (r *run) exchange(ctx context.Context, t *Target, pl Planned) *shot {
	req := r.request(pl)
	var resp *client.Response
	var err error
	if t.Base.Op.Stream && t.Base.Op.Method == http.MethodGet {
		resp, err = r.T.Stream(ctx, req)
	} else {
		resp, err = r.T.Do(ctx, req)
	}
	s := &shot{t: t, p: pl, resp: resp, terr: err, alive: true, seq: len(r.shots)}
	if err != nil && ctx.Err() == nil {
		var te *client.TransportError
		if !errors.As(err, &te) {
			// A request the client could not even build: the pass's own
			// problem, not an answer.
			s.terr = nil
			s.resp = nil
			r.note(fmt.Sprintf("%s: a request could not be sent: %v", t.Base.Op.ID, err))
			return s
		}
		r.res.Bookkeeping++
		s.alive = r.T.Alive(ctx)
		if te.Timeout() {
			r.hangs++
		}
		switch {
		case !s.alive:
			r.res.Stopped = fmt.Sprintf("the target stopped answering after %s", requestLine(pl.Built))
		case r.hangs >= r.MaxHangs:
			r.res.Stopped = fmt.Sprintf("%d malformed requests got no answer before the request timeout; the pass stopped there", r.hangs)
		}
	}
	return s
}

// acceptPhase sends, to a write target, the valid base with members an
// open schema allows; when one is refused, the base itself, to tell a
// refusal of the member from one of the request (the target's state may
// refuse both).
func (r *run) acceptPhase(ctx context.Context, t *Target) {
	if !writes(t.Base.Op) || t.Base.Body == nil || !t.Base.Ready() || r.over(ctx) {
		return
	}
	id := t.Base.Op.ID
	for _, pl := range AcceptTests(r.Doc, t.Base, r.Seed) {
		if r.over(ctx) {
			return
		}
		s := r.bookkeep(ctx, t, pl)
		r.shots = append(r.shots, s)
		if s.resp != nil && s.resp.Status/100 == 2 {
			r.accepted[id] = true
			continue
		}
		if _, sent := r.baseline[id]; !sent && s.resp != nil {
			bs := r.bookkeep(ctx, t, Planned{Base: t.Base, Built: Apply(t.Base, nil)})
			r.baseline[id] = bs.resp
			if bs.resp != nil && bs.resp.Status/100 == 2 {
				r.accepted[id] = true
			}
		}
	}
}

// strict reports whether a refusal of s must be 400 invalid_request: one
// body member (or the body as a whole) at fault, no anchor, and the same
// request without the mutation accepted.
func (r *run) strict(s *shot) bool {
	if s.p.Expect != Refuse || s.p.Anchored || len(s.p.Built.Muts) != 1 {
		return false
	}
	m := s.p.Built.Muts[0]
	if m.In != InBody && !(m.In == InHeader && m.Class == WrongContentType) || m.Class == WrongContentType {
		return false
	}
	return r.accepted[s.t.Base.Op.ID]
}

// judge applies every rule to one answer.
func (r *run) judge(s *shot) map[Rule]error {
	out := map[Rule]error{}
	if s.resp == nil && s.terr == nil {
		return out
	}
	if len(s.p.Built.Muts) == 0 {
		return out
	}
	out[RuleAnswered] = check.HostileAnswered(s.resp, s.terr, s.alive)
	if s.resp == nil {
		return out
	}
	switch s.p.Expect {
	case Refuse:
		strict := r.strict(s)
		out[RuleRefused] = check.HostileRefused(s.resp, strict, s.p.Built.Muts[0].Class.sized())
		if strict && s.resp.Status == http.StatusBadRequest {
			m := s.p.Built.Muts[0]
			if leaf := m.Leaf(); leaf != "" && m.Whole == "" {
				if e, err := check.Envelope(s.resp); err == nil && e.Code == "invalid_request" {
					out[RuleParam] = check.ParamNames(s.resp, e, leaf)
					if out[RuleParam] != nil && m.Remove && len(m.Ptr) > 1 && namesPath(e.Param, m.Ptr[:len(m.Ptr)-1]) {
						// A missing member named by the object that lacks
						// it, as JSON Schema validators report "required".
						out[RuleParam] = nil
					}
				}
			}
		}
	case Accept:
		// Judged against the valid base, sent when this was refused.
		if b := r.baseline[s.t.Base.Op.ID]; b != nil && b.Status/100 == 2 || s.resp.Status/100 == 2 {
			m := s.p.Built.Muts[0]
			out[RuleOpen] = check.HostileOpen(s.resp, b, m.Member())
		}
	}
	if s.resp.Status >= 400 {
		out[RuleNoEcho] = check.HostileNoEcho(s.resp, r.Canary, r.Secret)
	}
	return out
}

// findings judges every answer, groups the failures and shrinks one of
// each group.
func (r *run) findings(ctx context.Context) {
	type group struct {
		rule  Rule
		first *shot
		err   error
		ops   []string
		count int
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, s := range r.shots {
		res := r.judge(s)
		for _, rule := range Rules {
			err, ok := res[rule]
			if !ok {
				continue
			}
			r.res.Judged[rule]++
			if err == nil {
				continue
			}
			k := groupKey(rule, s)
			g := byKey[k]
			if g == nil {
				g = &group{rule: rule, first: s, err: err}
				byKey[k] = g
				groups = append(groups, g)
			}
			g.count++
			if id := s.t.Base.Op.ID; id != g.first.t.Base.Op.ID && !slices.Contains(g.ops, id) {
				g.ops = append(g.ops, id)
			}
		}
	}
	// Groups of one mutation are shrunk first: a group whose mutation
	// failed only with the anchor that keeps its write invalid is often
	// the anchor's own defect, found alone.
	sort.SliceStable(groups, func(i, j int) bool { return !groups[i].first.p.Anchored && groups[j].first.p.Anchored })
	final := map[string]int{} // a finding's minimal reproduction, by groupKey -> its index
	merge := func(k string, g *group) bool {
		i, ok := final[k]
		if !ok {
			return false
		}
		f := &r.res.Findings[i]
		f.Count += g.count
		for _, id := range append([]string{g.first.t.Base.Op.ID}, g.ops...) {
			if id != f.Op.ID && !slices.Contains(f.Others, id) {
				f.Others = append(f.Others, id)
			}
		}
		return true
	}
	for _, g := range groups {
		// The anchor alone already shown to fail the same way: the same
		// defect, not shrunk again.
		if g.first.p.Anchored && g.first.resp != nil {
			anchor := g.first.p.Built.Muts[len(g.first.p.Built.Muts)-1]
			if merge(string(g.rule)+"|"+fmt.Sprint(g.first.resp.Status)+"|"+mutKey(anchor), g) {
				continue
			}
		}
		f := Finding{Rule: g.rule, Op: g.first.t.Base.Op, Others: g.ops, Count: g.count, Err: g.err,
			Muts: g.first.p.Built.Muts, Anchored: g.first.p.Anchored}
		min, ms := g.first.p, g.first
		if g.first.terr == nil && !r.over(ctx) {
			rule := g.rule
			pred := func(c Planned) (*shot, bool) {
				cs := r.replay(ctx, g.first.t, c)
				e := r.judge(cs)[rule]
				return cs, e != nil
			}
			min, ms, f.From = r.shrink(ctx, g.first.t, g.first.p, g.first, pred)
			if e := r.judge(ms)[rule]; e != nil {
				f.Err = e
			}
			f.Muts, f.Anchored = min.Built.Muts, min.Anchored
		}
		// Shrunk to a reproduction another group shrank to: one finding.
		k := groupKey(g.rule, &shot{p: min, resp: ms.resp})
		if merge(k, g) {
			continue
		}
		r.fill(&f, min, ms)
		final[k] = len(r.res.Findings)
		r.res.Findings = append(r.res.Findings, f)
	}
	for _, f := range r.stateFail {
		r.res.Findings = append(r.res.Findings, *f)
	}
	if r.res.Judged[RuleOpen] == 0 {
		r.res.Unjudged[RuleOpen] = "no operation that writes accepted its valid base request, so no request with an unknown member could be compared with it"
	}
	if r.res.Judged[RuleUnchanged] == 0 {
		r.res.Unjudged[RuleUnchanged] = "no state a refused request could change was read before and after (no write operation was probed, or its state could not be read or kept changing)"
	}
	if r.res.Judged[RuleNoEcho] == 0 {
		r.res.Unjudged[RuleNoEcho] = "no error answer was seen"
	}
	if r.res.Judged[RuleParam] == 0 {
		r.res.Unjudged[RuleParam] = "no 400 for a single member of an otherwise accepted request was seen"
	}
}

// groupKey groups the same defect: the rule, the answer's status, and what
// was changed (class and member name, not the operation or the value).
func groupKey(rule Rule, s *shot) string {
	st := "no answer"
	if s.resp != nil {
		st = fmt.Sprint(s.resp.Status)
	}
	var ms []string
	for i, m := range s.p.Built.Muts {
		if s.p.Anchored && i == len(s.p.Built.Muts)-1 {
			continue
		}
		ms = append(ms, mutKey(m))
	}
	return string(rule) + "|" + st + "|" + strings.Join(ms, ",")
}

// namesPath reports whether param names the member at ptr: its tokens,
// in any of the spellings check.ParamNames takes (dotted, bracketed, a
// JSON Pointer), end with ptr's.
func namesPath(param string, ptr []string) bool {
	p := strings.ToLower(param)
	for _, sep := range []string{".", "/", "[", "]"} {
		p = strings.ReplaceAll(p, sep, " ")
	}
	toks := strings.Fields(p)
	if len(ptr) == 0 || len(toks) < len(ptr) {
		return false
	}
	tail := toks[len(toks)-len(ptr):]
	for i, t := range ptr {
		if tail[i] != strings.ToLower(t) {
			return false
		}
	}
	return true
}

// mutKey is what groupKey keeps of a mutation.
func mutKey(m Mutation) string {
	return string(m.Class) + ":" + m.Leaf() + ":" + m.Whole + ":" + m.What
}

func (r *run) fill(f *Finding, pl Planned, s *shot) {
	f.Curl = r.curl(pl)
	switch {
	case s == nil:
	case s.terr != nil:
		f.Answer = "no answer: " + s.terr.Error()
	case s.resp != nil:
		f.Answer = fmt.Sprintf("%d %s", s.resp.Status, jsonv.Clean(string(s.resp.Body), 400))
	}
}

func status(s *shot) string {
	if s == nil || s.resp == nil {
		return "no answer"
	}
	return fmt.Sprint(s.resp.Status)
}

func requestLine(b Built) string {
	l := b.Method + " " + b.Path
	if len(b.Query) > 0 {
		l += "?" + b.Query.Encode()
	}
	return l
}
