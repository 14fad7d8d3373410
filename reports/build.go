package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/redact"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// Input is everything Build needs besides the Ginkgo report.
type Input struct {
	Tool     Tool
	Env      *target.Env
	Registry *requirements.Registry
	Seed     int64
	Notes    []string
	// ProtocolVersion, when set, is what the report shows as
	// protocol_version in place of the configured Harn version (a profile
	// run names its profile's protocol).
	ProtocolVersion string
}

// inRun reports whether a level belongs to what the run checks: a run
// checks either Harn levels or one profile (docs/profiles.md), and its
// report holds the requirements and specs of that family only.
func inRun(env *target.Env, l requirements.Level) bool {
	profileRun := false
	for _, s := range env.Levels {
		if s.Level.IsProfile() {
			profileRun = true
		}
	}
	if !profileRun {
		return !l.IsProfile()
	}
	for _, s := range env.Levels {
		if s.Level == l {
			return true
		}
	}
	return false
}

// specInRun reports whether a spec belongs to the run's family: one with
// no level label (none exists today) or some level label of the family.
func specInRun(env *target.Env, labels []string) bool {
	seen := false
	for _, l := range labels {
		if name, ok := strings.CutPrefix(l, evidence.LevelLabelPrefix); ok {
			seen = true
			if inRun(env, requirements.Level(name)) {
				return true
			}
		}
	}
	return !seen
}

// specOutcome is one spec's result with its per-requirement verdicts.
type specOutcome struct {
	res     SpecResult
	reqs    map[string]Evidence
	offline bool // a self-check of the suite's verifiers: no verdict on the target
}

// Build computes every verdict of a run from its Ginkgo report.
func Build(in Input, gr types.Report) *Report {
	r := &Report{
		Format:          Format,
		Tool:            in.Tool,
		ProtocolVersion: cmp.Or(in.ProtocolVersion, in.Env.Config.ProtocolVersion),
		StartedAt:       gr.StartTime.UTC().Format(time.RFC3339Nano),
		FinishedAt:      gr.EndTime.UTC().Format(time.RFC3339Nano),
		DurationMS:      ms(gr.RunTime),
		Target:          in.Env.Redactor.String(in.Env.Config.Target),
		Config:          in.Env.Config.Redacted(),
		Seed:            in.Seed,
		Discovery:       in.Env.Discovery,
		Notes:           append([]string{}, in.Notes...),
		SuiteDefects:    []string{},
	}
	var outcomes []specOutcome
	lat := map[string][]float64{}
	// A run cut off by --max-duration (or an interrupt) leaves specs not
	// run: that is the suite's limit, never the target's failure.
	cutOff := ""
	for _, why := range gr.SpecialSuiteFailureReasons {
		if strings.Contains(why, "Timeout") || strings.Contains(why, "Interrupt") {
			cutOff = why
			r.Notes = append(r.Notes, "the run was cut off before every spec ran: "+why)
		}
	}
	for _, sr := range gr.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			if sr.State.Is(types.SpecStateFailureStates) {
				// A failing suite-level node (there should be none) is an
				// engine error that must not vanish from the report.
				r.Notes = append(r.Notes, fmt.Sprintf("suite node %s failed: %s", sr.LeafNodeType, in.Env.Redactor.String(sr.Failure.Message)))
			}
			continue
		}
		if !specInRun(in.Env, sr.Labels()) {
			continue // another family's spec, filtered out of this run
		}
		o := outcome(in, sr, cutOff)
		o.offline = slices.Contains(sr.Labels(), evidence.OfflineLabel)
		for _, e := range sr.ReportEntries {
			switch e.Name {
			case evidence.EntryLatency:
				samples, err := evidence.Decode[[]evidence.LatencySample](e)
				if err == nil {
					for _, s := range samples {
						lat[s.Op] = append(lat[s.Op], s.MS)
					}
				}
			case evidence.EntryNote:
				if n, err := evidence.Decode[string](e); err == nil && !slices.Contains(r.Notes, n) {
					r.Notes = append(r.Notes, n)
				}
			case evidence.EntryDefect:
				if n, err := evidence.Decode[string](e); err == nil && !slices.Contains(r.SuiteDefects, n) {
					r.SuiteDefects = append(r.SuiteDefects, n)
				}
			}
		}
		outcomes = append(outcomes, o)
	}
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].res.Name < outcomes[j].res.Name })
	var target []specOutcome
	r.Specs, r.SelfChecks = []SpecResult{}, []SpecResult{}
	for _, o := range outcomes {
		if o.offline {
			r.SelfChecks = append(r.SelfChecks, o.res)
			if o.res.Verdict == Fail || o.res.Verdict == Error {
				r.Notes = append(r.Notes, "self-check failed (the suite's own verifier, not the target): "+o.res.Name+": "+firstLine(o.res.Message))
			}
			continue
		}
		r.Specs = append(r.Specs, o.res)
		target = append(target, o)
	}
	r.Requirements = rollUpRequirements(in, target)
	r.Levels = rollUpLevels(in, r.Requirements)
	for _, q := range r.Requirements {
		if in.Env.Selected(requirements.Level(q.Level)).Run {
			r.Totals.add(q.Verdict)
		}
	}
	r.Latency = latencies(lat)
	r.Gate = &Gate{FailOn: cmp.Or(in.Env.Config.FailOn, config.FailOnUnverified)}
	applyGate(r)
	return scrub(r, in.Env.Redactor)
}

// scrub passes the whole report through the redactor once more. Everything
// in it was redacted where it was recorded; this is the backstop that makes
// "no secret in any report" hold for fields added later too.
func scrub(r *Report, red *redact.Redactor) *Report {
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	clean := red.String(string(b))
	if clean == string(b) {
		return r
	}
	var out Report
	if err := json.Unmarshal([]byte(clean), &out); err != nil {
		return r
	}
	return &out
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

func outcome(in Input, sr types.SpecReport, cutOff string) specOutcome {
	red := in.Env.Redactor
	o := specOutcome{
		res: SpecResult{
			Name:       sr.FullText(),
			Location:   Location(sr.LeafNodeLocation),
			DurationMS: ms(sr.RunTime),
		},
		reqs: map[string]Evidence{},
	}
	for _, l := range sr.Labels() {
		if id, ok := strings.CutPrefix(l, evidence.ReqLabelPrefix); ok {
			o.res.Requirements = append(o.res.Requirements, id)
		}
	}
	sort.Strings(o.res.Requirements)
	var recorded []evidence.Verdict
	var skip *evidence.Skip
	for _, e := range sr.ReportEntries {
		switch e.Name {
		case evidence.EntryVerdict:
			if v, err := evidence.Decode[evidence.Verdict](e); err == nil {
				v.Message = red.String(v.Message)
				recorded = append(recorded, v)
			}
		case evidence.EntrySkip:
			if k, err := evidence.Decode[evidence.Skip](e); err == nil {
				skip = &k
			}
		case evidence.EntryEvidence:
			if a, err := evidence.Decode[evidence.Attachment](e); err == nil {
				o.res.Evidence = append(o.res.Evidence, a)
			}
		case evidence.EntryHook:
			if h, err := evidence.Decode[evidence.HookUse](e); err == nil {
				h.How = red.String(h.How)
				o.res.Hooks = append(o.res.Hooks, h)
			}
		case evidence.EntryHookFree:
			if h, err := evidence.Decode[evidence.HookFree](e); err == nil {
				h.How = red.String(h.How)
				o.res.HookFree = append(o.res.HookFree, h)
			}
		case evidence.EntryTranscript:
			if t, err := evidence.Decode[evidence.Transcript](e); err == nil {
				o.res.Transcript, o.res.Dropped = t.Exchanges, t.Dropped
			}
		}
	}
	msg := red.String(strings.TrimSpace(sr.Failure.Message))
	switch {
	case sr.State == types.SpecStatePassed:
		o.res.Verdict = Pass
	case sr.NumAttempts == 0 && cutOff != "":
		o.res.Verdict, msg = Error, "not run: the run was cut off ("+cutOff+"); raise --max-duration to let it finish"
	case sr.NumAttempts == 0:
		// Filtered out by --label-filter or --focus: a narrowed run checked
		// nothing here, so nothing here is verified.
		o.res.Verdict, msg = Unverified, "not run: not selected by --label-filter or --focus"
		o.res.Remedy = "run without --label-filter and --focus"
	case sr.State == types.SpecStateSkipped || sr.State == types.SpecStatePending:
		// A skip is unverified unless the spec said the target's own claims
		// make it not applicable: a bare Skip never counts as a pass.
		o.res.Verdict = Unverified
		if skip != nil {
			msg = skip.Reason
			o.res.Remedy = skip.Remedy
			if skip.Kind == evidence.SkipNotApplicable {
				o.res.Verdict = Skip
			}
		} else if msg == "" {
			msg = "skipped"
		}
	case sr.State == types.SpecStateFailed:
		o.res.Verdict = Fail
		if len(recorded) > 0 && allErrors(recorded) {
			o.res.Verdict = Error
		}
	default: // panicked, interrupted, aborted, timed out: the suite's problem
		o.res.Verdict = Error
		msg = fmt.Sprintf("%s: %s", sr.State, msg)
	}
	o.res.Message = msg
	// Per requirement: what the spec recorded for it, else what the spec's
	// own state implies.
	for _, v := range recorded {
		ev := o.reqs[v.Req]
		nv := Verdict(v.Verdict)
		if ev.Verdict == "" || Worse(ev.Verdict, nv) == nv {
			o.reqs[v.Req] = Evidence{Spec: o.res.Name, Verdict: nv, Message: v.Message, Remedy: v.Remedy, Curl: cmp.Or(red.String(v.Repro), curlFor(o, v.Message, v.At))}
		}
	}
	for _, id := range o.res.Requirements {
		if _, ok := o.reqs[id]; ok {
			continue
		}
		switch o.res.Verdict {
		case Pass, Warn:
			o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Pass}
		case Skip:
			o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Skip, Message: msg}
		case Unverified:
			o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Unverified, Message: msg, Remedy: o.res.Remedy}
		case Fail:
			if sr.Failure.FailureNodeType == types.NodeTypeAfterEach {
				// The spec ran to its end and failed on other requirements'
				// checks (or the traffic oracle's): this one held.
				o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Pass}
			} else if len(recorded) > 0 {
				// A failure stopped the spec before this one was checked
				// (the suite records these itself; this covers any other stop).
				o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Unverified, Message: "not checked: blocked by the failure of " + failedReqs(recorded) + " in this spec",
					Remedy: "fix the failures reported for this spec's other requirements"}
			} else {
				o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Fail, Message: msg, Curl: curlFor(o, msg, 0)}
			}
		case Error:
			o.reqs[id] = Evidence{Spec: o.res.Name, Verdict: Error, Message: msg, Curl: curlFor(o, msg, 0)}
		}
	}
	if o.res.Verdict == Pass {
		for _, e := range o.reqs {
			o.res.Verdict = Worse(o.res.Verdict, e.Verdict)
		}
	}
	for id, e := range o.reqs {
		if e.Verdict != Skip {
			e.Hooks = hooksFor(o.res.Hooks, id)
			e.hookFree = len(e.Hooks) == 0 || slices.ContainsFunc(o.res.HookFree, func(f evidence.HookFree) bool { return slices.Contains(f.Requirements, id) })
			o.reqs[id] = e
		}
	}
	return o
}

// hooksFor names the test hooks a spec's verdict on requirement id rests
// on: those it used for every requirement it names, or for id.
func hooksFor(uses []evidence.HookUse, id string) []string {
	var out []string
	for _, u := range uses {
		if (len(u.Requirements) == 0 || slices.Contains(u.Requirements, id)) && !slices.Contains(out, u.Hook) {
			out = append(out, u.Hook)
		}
	}
	sort.Strings(out)
	return out
}

// exchangeNamed finds "METHOD /path" in a finding's message (checks start
// their messages with "METHOD /path → status"; the OpenAPI oracle names
// the operation's path template, "GET /v1/tasks/{task_id}").
var exchangeNamed = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (/[^\s?#:→,;)]*)`)

// curlFor picks the reproducer for a finding: the failing exchange. at is
// how many exchanges the spec had made when the finding was recorded
// (0: not known, the spec's end). It is the last exchange up to at that
// the message names (its method, and a path that ends with the one named,
// a template's {parameters} matching any segment); for a message that
// names none, the last exchange up to at. A named exchange the transcript
// does not hold (dropped past its limit) gives no reproducer rather than
// another exchange's.
func curlFor(o specOutcome, msg string, at int) string {
	tr := o.res.Transcript
	end := len(tr)
	if at > 0 && at < end {
		end = at
	}
	m := exchangeNamed.FindStringSubmatch(msg)
	if m == nil {
		for i := end - 1; i >= 0; i-- {
			if tr[i].Curl != "" {
				return tr[i].Curl
			}
		}
		return ""
	}
	pat := regexp.QuoteMeta(m[2])
	pat = regexp.MustCompile(`\\\{[^/]*?\\\}`).ReplaceAllString(pat, `[^/]+`)
	re, err := regexp.Compile(pat + `$`)
	if err != nil {
		return ""
	}
	for i := end - 1; i >= 0; i-- {
		ex := tr[i]
		if ex.Curl == "" || ex.Method != m[1] {
			continue
		}
		if u, err := url.Parse(ex.URL); err == nil && (re.MatchString(u.Path) || re.MatchString(u.EscapedPath())) {
			return ex.Curl
		}
	}
	return ""
}

// failedReqs names the requirements whose checks failed in a spec.
func failedReqs(vs []evidence.Verdict) string {
	var ids []string
	for _, v := range vs {
		if (v.Verdict == evidence.VerdictFail || v.Verdict == evidence.VerdictError) && !slices.Contains(ids, v.Req) {
			ids = append(ids, v.Req)
		}
	}
	if len(ids) == 0 {
		return "an earlier check"
	}
	return strings.Join(ids, ", ")
}

func allErrors(vs []evidence.Verdict) bool {
	errs := 0
	for _, v := range vs {
		switch v.Verdict {
		case evidence.VerdictFail:
			return false
		case evidence.VerdictError:
			errs++
		}
	}
	return errs > 0
}

// rollUpRequirements gives every registry entry a verdict: the most severe
// over every spec that names it (fail > error > unverified > warn > pass),
// leaving out specs that were not applicable by the target's own claims. A
// requirement passes only when every spec that applied passed it; one that
// no applicable spec checked is unverified (or skip, when every spec that
// names it was not applicable).
func rollUpRequirements(in Input, outcomes []specOutcome) []ReqResult {
	var out []ReqResult
	for _, q := range in.Registry.All() {
		if !inRun(in.Env, q.Level) {
			continue
		}
		res := ReqResult{ID: q.ID, Level: string(q.Level), Keyword: string(q.Keyword), Section: q.Section,
			Link: q.Link(), Summary: q.Summary, Specs: []string{}}
		var judged, notApplicable []Evidence
		for _, o := range outcomes {
			ev, ok := o.reqs[q.ID]
			if !ok {
				continue
			}
			res.Specs = append(res.Specs, o.res.Name)
			res.DurationMS += o.res.DurationMS
			if ev.Verdict == Skip {
				notApplicable = append(notApplicable, ev)
			} else {
				judged = append(judged, ev)
				for _, h := range ev.Hooks {
					if !slices.Contains(res.Hooks, h) {
						res.Hooks = append(res.Hooks, h)
					}
				}
			}
		}
		sort.Strings(res.Hooks)
		sel := in.Env.Selected(q.Level)
		checked, notChecked := in.Env.AreaChecked(q.ID)
		switch {
		case !sel.Run:
			res.Verdict, res.Message, res.Hooks = Skip, fmt.Sprintf("level %s not checked: %s", q.Level, sel.Reason), nil
		case !checked && q.Observable:
			res.Verdict, res.Message, res.Hooks, res.Evidence, res.OptedOut = Skip, "not checked: "+notChecked, nil, nil, true
		case len(judged) > 0:
			res.Verdict = Pass
			for _, ev := range judged {
				res.Verdict = Worse(res.Verdict, ev.Verdict)
				if ev.Verdict != Pass {
					res.Evidence = append(res.Evidence, ev)
				}
			}
			// The message and remedy come from the most severe evidence,
			// and so do the hooks of a verdict other than pass: a failure
			// rests on the specs that saw it, a pass on every spec.
			found := false
			var hooks []string
			for _, ev := range res.Evidence {
				if ev.Verdict != res.Verdict {
					continue
				}
				if !found {
					res.Message, res.Remedy, found = ev.Message, ev.Remedy, true
				}
				for _, h := range ev.Hooks {
					if !slices.Contains(hooks, h) {
						hooks = append(hooks, h)
					}
				}
			}
			if res.Verdict != Pass {
				sort.Strings(hooks)
				res.Hooks = hooks
			}
			// A pass or warning some spec judged through a hook is still
			// verified without one when every spec that judged it either
			// used no hook for it or verified it on an object no hook made
			// as well (docs/interpretations.md#hook-attested).
			if (res.Verdict == Pass || res.Verdict == Warn) && len(res.Hooks) > 0 {
				res.HookFree = !slices.ContainsFunc(judged, func(ev Evidence) bool { return !ev.hookFree })
			}
		case !q.Observable:
			res.Verdict, res.Message = Skip, "not wire-observable: "+q.Reason
		case len(notApplicable) > 0:
			res.Verdict, res.Evidence = Skip, notApplicable
			res.Message = "not applicable: " + notApplicable[0].Message
		case q.Exclusion != "":
			res.Verdict, res.Message = Unverified, "not verified: "+q.Exclusion
		default:
			res.Verdict, res.Message = Unverified, "not verified: no spec checks this requirement yet"
		}
		out = append(out, res)
	}
	return out
}

// rollUpLevels gives every level its status from its requirements, and
// marks what fails the gate.
func rollUpLevels(in Input, reqs []ReqResult) []LevelResult {
	return levelsOf(in.Env.Levels, reqs, func(id string) bool {
		r, _ := in.Registry.Lookup(id)
		return r.Observable
	}, in.Env.Config.FailOn)
}

// blocksConformance says whether an unverified requirement keeps its level
// from "conformant": an unverified MUST that a client could observe does; a
// SHOULD, a MAY or an unobservable statement does not.
func blocksConformance(q ReqResult, observable func(id string) bool) bool {
	return requirements.Keyword(q.Keyword).Mandatory() && observable(q.ID)
}

// levelsOf computes each selected level's status, and marks in reqs what
// fails the gate (ReqResult.Gate) under failOn (config.FailOn…). A
// requirement a baseline expects (ReqResult.Expected) is counted under its
// verdict and as expected, but blocks nothing; one the run left out by the
// user's choice of areas (ReqResult.OptedOut) keeps its level from
// "conformant" but never fails the gate.
func levelsOf(sels []target.Selection, reqs []ReqResult, observable func(id string) bool, failOn string) []LevelResult {
	var out []LevelResult
	for _, sel := range sels {
		lr := LevelResult{Selection: sel}
		var failed, errored, unverified, expected, optedOut []string
		remedies := map[string][]string{}
		var order []string
		for i := range reqs {
			q := &reqs[i]
			if q.Level != string(sel.Level) {
				continue
			}
			q.Gate = ""
			lr.Counts.add(q.Verdict)
			if q.Stale {
				lr.Counts.Stale++
			}
			mandatory := requirements.Keyword(q.Keyword).Mandatory()
			if q.Verdict == Unverified && blocksConformance(*q, observable) {
				rm := q.Remedy
				if rm == "" {
					rm = "none available yet: the suite cannot verify this requirement against any target (" + q.Message + ")"
				}
				if _, ok := remedies[rm]; !ok {
					order = append(order, rm)
				}
				remedies[rm] = append(remedies[rm], q.ID)
			}
			if q.OptedOut && blocksConformance(*q, observable) {
				optedOut = append(optedOut, q.ID)
			}
			if q.Expected && q.Verdict != Error {
				lr.Counts.Expected++
				expected = append(expected, q.ID)
				continue
			}
			switch {
			case q.Verdict == Fail && mandatory:
				failed = append(failed, q.ID)
			case q.Verdict == Error:
				errored = append(errored, q.ID)
			case q.Verdict == Unverified && blocksConformance(*q, observable):
				unverified = append(unverified, q.ID)
			}
		}
		switch {
		case !sel.Run && !sel.Claimed:
			lr.Status, lr.Why = NotClaimed, sel.Reason
		case !sel.Run:
			lr.Status, lr.Why = NotRequested, sel.Reason
		case !sel.Claimed && len(failed) == 0 && len(errored) == 0:
			// Asked for by name (or with all) on a target that does not
			// claim the level: its checks ran, and what they could not
			// verify is the target's not offering it, not a shortfall.
			lr.Status, lr.Why = NotClaimed, sel.Reason+", but the target does not claim this level in discovery; its checks ran and none failed"
		case len(failed) > 0:
			lr.Status, lr.Why = Nonconformant, fmt.Sprintf("%d MUST requirement(s) failed: %s", len(failed), list(failed))
		case len(errored) > 0:
			lr.Status, lr.Why = Partial, fmt.Sprintf("%d requirement(s) could not be checked (suite or network error): %s", len(errored), list(errored))
		case len(unverified) > 0:
			lr.Status, lr.Why = Partial, fmt.Sprintf("%d observable MUST requirement(s) are unverified: %s", len(unverified), list(unverified))
		case len(optedOut) > 0:
			lr.Status, lr.Why = Partial, "every observable MUST requirement checked passed"
		case len(expected) > 0:
			lr.Status, lr.Why = Conformant, "every observable MUST requirement passed or is expected by the baseline"
		default:
			lr.Status, lr.Why = Conformant, "every observable MUST requirement passed"
		}
		if sel.Run && len(optedOut) > 0 {
			lr.Why += fmt.Sprintf("; %d observable MUST requirement(s) not checked by choice (--areas, --skip-areas): %s", len(optedOut), list(optedOut))
		}
		if sel.Run && len(expected) > 0 {
			lr.Why += fmt.Sprintf("; %d requirement(s) expected by the baseline: %s", len(expected), list(expected))
		}
		if sel.Run {
			for _, rm := range order {
				lr.ToVerify = append(lr.ToVerify, Remedy{Remedy: rm, Requirements: remedies[rm]})
			}
			lr.MUSTs = tallyMUSTs(string(sel.Level), reqs, observable)
			gateLevel(reqs, sel.Level, failed, errored, unverified, lr.Status != NotClaimed && failOn != config.FailOnFailures)
		}
		out = append(out, lr)
	}
	return out
}

// tallyMUSTs counts a level's observable MUSTs by how they ended and on
// what evidence: a requirement is verified without a hook when no spec
// judged it through a hook only (ReqResult.HookFree).
func tallyMUSTs(level string, reqs []ReqResult, observable func(id string) bool) *MustTally {
	t := &MustTally{}
	for _, q := range reqs {
		if q.Level != level || !requirements.Keyword(q.Keyword).Mandatory() || !observable(q.ID) {
			continue
		}
		t.Observable++
		switch q.Verdict {
		case Pass, Warn:
			if len(q.Hooks) == 0 || q.HookFree {
				t.VerifiedWithoutHook++
				continue
			}
			t.VerifiedWithHook++
			for _, h := range q.Hooks {
				if !slices.Contains(t.Hooks, h) {
					t.Hooks = append(t.Hooks, h)
				}
			}
		case Fail:
			t.Failed++
		case Skip:
			if q.OptedOut {
				t.NotRequested++
			} else {
				t.NotApplicable++
			}
		default:
			t.NotVerified++
		}
	}
	sort.Strings(t.Hooks)
	return t
}

func list(ids []string) string {
	if len(ids) > 8 {
		return strings.Join(ids[:8], ", ") + fmt.Sprintf(" and %d more", len(ids)-8)
	}
	return strings.Join(ids, ", ")
}

func latencies(lat map[string][]float64) []OpLatency {
	out := []OpLatency{}
	for op, xs := range lat {
		sort.Float64s(xs)
		out = append(out, OpLatency{Op: op, Count: len(xs), P50: pct(xs, 50), P95: pct(xs, 95), P99: pct(xs, 99)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}
