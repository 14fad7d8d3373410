// Package suite is the thin Ginkgo shell around conform's checks. Specs name
// the requirements they verify with Req, record each check's result with
// Must / Check / Should, and get a client whose exchanges are kept as the
// spec's transcript. Verdicts, transcripts and latencies travel to the
// report as Ginkgo report entries, so the conform binary, `go test` and the
// ginkgo CLI all produce the same data.
package suite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

var (
	unknownMu  sync.Mutex
	unknownIDs []string
)

// Req declares the requirement ids a spec verifies, as Ginkgo labels
// ("req:ID" and "level:LEVEL"). An id missing from the registry is recorded
// and reported by Validate before any spec runs: the registry is frozen.
func Req(ids ...string) Labels {
	reg, err := requirements.Default()
	labels := Labels{}
	levels := map[string]bool{}
	for _, id := range ids {
		labels = append(labels, evidence.ReqLabelPrefix+id)
		if err != nil {
			continue
		}
		r, ok := reg.Lookup(id)
		if !ok {
			unknownMu.Lock()
			unknownIDs = append(unknownIDs, id)
			unknownMu.Unlock()
			continue
		}
		if !levels[string(r.Level)] {
			levels[string(r.Level)] = true
			labels = append(labels, evidence.LevelLabelPrefix+string(r.Level))
		}
	}
	return labels
}

// Validate reports a broken registry or specs naming unknown requirement
// ids. Call it before RunSpecs.
func Validate() error {
	if _, err := requirements.Default(); err != nil {
		return err
	}
	unknownMu.Lock()
	defer unknownMu.Unlock()
	if len(unknownIDs) > 0 {
		ids := append([]string(nil), unknownIDs...)
		sort.Strings(ids)
		return fmt.Errorf("specs name requirement ids that are not in the registry: %s", strings.Join(ids, ", "))
	}
	return nil
}

// specState is the current spec's bookkeeping. Ginkgo runs the specs of one
// process one at a time, so a single slot suffices (ginkgo -p uses
// processes, each with its own slot).
type specState struct {
	rec    *client.Recorder
	client *client.Client

	vmu    sync.Mutex
	soft   []evidence.Verdict          // recorded failures that fail the spec at its end
	judged map[string]bool             // requirements with a verdict of their own in this spec
	fails  map[string]evidence.Verdict // each requirement's first failure (or error) in this spec
	blocks map[string][]string         // what each failure kept from being checked

	mu       sync.Mutex
	traffic  []client.Traffic // every exchange, for the OpenAPI oracle at the spec's end
	unjudged int              // exchanges past maxTraffic, which the oracle did not see

	atEnd []func() // AtSpecEnd's, run last first

	hooks []evidence.HookUse // the test hooks the spec used (UsedHook, and seen on the wire)

	object   string              // the object being judged (Judging); "" when none
	hookFree bool                // whether no test hook made or drove it
	free     map[string][]string // hook-free object -> requirements checked on it
	freeObjs []string            // the keys of free, in order
	partial  []string            // requirements hook-free objects do not verify alone (NeedsHooked)
}

// maxTraffic bounds what one spec keeps for the oracle.
const maxTraffic = 2000

func (st *specState) observe(t client.Traffic) {
	hooks := evidence.HooksIn(t)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, h := range hooks {
		st.addHook(evidence.HookUse{Hook: h, How: hookHow(t, h)})
	}
	if len(st.traffic) < maxTraffic {
		st.traffic = append(st.traffic, t)
		return
	}
	st.unjudged++
}

// addHook keeps one use of each hook for each set of requirements (the
// first one's how), and none narrower than a use of the same hook for all
// the spec's requirements. Call it with st.mu held.
func (st *specState) addHook(u evidence.HookUse) {
	for _, h := range st.hooks {
		if h.Hook == u.Hook && (len(h.Requirements) == 0 || slices.Equal(h.Requirements, u.Requirements)) {
			return
		}
	}
	if len(u.Requirements) == 0 {
		st.hooks = slices.DeleteFunc(st.hooks, func(h evidence.HookUse) bool { return h.Hook == u.Hook })
	}
	st.hooks = append(st.hooks, u)
}

// hookHow says what an exchange sent through hook h.
func hookHow(t client.Traffic, h string) string {
	what := map[string]string{
		evidence.HookScenarios:    "with a conform.scenario",
		evidence.HookVaultSecrets: "with secret values",
	}[h]
	return strings.TrimSpace(t.Method + " " + t.Path + " " + what)
}

// Judging says that the checks that follow (Check, CheckBlocks), until the
// next Judging or EndJudging, judge one object: how names it, hookFree
// says that no test hook made or drove it (a plain task, its receipts).
// The requirements checked on a hook-free object are recorded
// (evidence.HookFree): a spec that also judges objects a hook made
// (UsedHook) then verifies them on the target's ordinary path as well, and
// the report counts them verified without a hook when the spec passes them
// (docs/interpretations.md#hook-attested). Call EndJudging before checks
// that judge several objects together.
func Judging(how string, hookFree bool) {
	st := current.Load()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.object, st.hookFree = Env().Redactor.String(how), hookFree
	st.mu.Unlock()
}

// EndJudging ends what Judging began: the checks that follow judge no
// single object.
func EndJudging() { Judging("", false) }

// NeedsHooked says that the spec's verdict on reqs needs the objects a
// hook made (a canary only a scenario hands over, a FAILED task only a
// scenario makes): their checks on hook-free objects (Judging) verify only
// part of them, so they are not recorded as verified without a hook.
func NeedsHooked(reqs ...string) {
	st := current.Load()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.partial = append(st.partial, reqs...)
	st.mu.Unlock()
}

// checkedOn records a check of req on the object being judged, when no
// hook made it.
func (st *specState) checkedOn(req string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.object == "" || !st.hookFree {
		return
	}
	if st.free == nil {
		st.free = map[string][]string{}
	}
	if _, ok := st.free[st.object]; !ok {
		st.freeObjs = append(st.freeObjs, st.object)
	}
	if !slices.Contains(st.free[st.object], req) {
		st.free[st.object] = append(st.free[st.object], req)
	}
}

// UsedHook records that some of the current spec's evidence came through
// the test hook named (evidence.Hooks), made as how says: the verdicts on
// reqs in this spec — on every requirement it names, when reqs is empty —
// are then hook-attested in the report
// (docs/interpretations.md#hook-attested). Requests the target accepted
// with a scenario, vault secrets or to a hook's route are recorded without
// it, as the spec's client sees them; call it for what the wire does not
// show: a hook used through another client (the OAuth test tokens), a
// probe whose hook the verdict rests on only sometimes (the verify
// extension), objects another spec made (a run shared between specs).
func UsedHook(hook, how string, reqs ...string) {
	st := current.Load()
	if st == nil {
		return
	}
	r := slices.Clone(reqs)
	slices.Sort(r)
	r = slices.Compact(r)
	st.mu.Lock()
	st.addHook(evidence.HookUse{Hook: hook, How: Env().Redactor.String(how), Requirements: r})
	st.mu.Unlock()
}

var (
	current   atomic.Pointer[specState]
	keyCount  atomic.Int64
	envOnce   sync.Once
	envValue  *target.Env
	envErr    error
	installed atomic.Pointer[target.Env]
)

var _ = BeforeEach(func() {
	st := &specState{rec: client.NewRecorder(), judged: map[string]bool{}, fails: map[string]evidence.Verdict{}, blocks: map[string][]string{}}
	current.Store(st)
	env := Env()
	startWatches(env)
	gate(env)
	switch {
	case env.Client == nil:
		// A profile run that drives an agent command has no HTTP client.
	case env.Config.Profile != "":
		// A profile speaks another protocol: the Harn OpenAPI traffic
		// oracle has nothing to say about its exchanges.
		st.client = env.Client.WithRecorder(st.rec)
	default:
		st.client = env.Client.WithRecorder(st.rec).WithObserver(st.observe)
	}
}, OncePerOrdered)

var _ = AfterEach(func() {
	st := current.Load()
	if st == nil {
		return
	}
	st.mu.Lock()
	atEnd := st.atEnd
	st.atEnd = nil
	st.mu.Unlock()
	for i := len(atEnd) - 1; i >= 0; i-- {
		atEnd[i]()
	}
	judgeTraffic(st)
	st.mu.Lock()
	hooks := st.hooks
	st.hooks = nil
	free, freeObjs, partial := st.free, st.freeObjs, st.partial
	st.free, st.freeObjs, st.object, st.partial = nil, nil, "", nil
	st.mu.Unlock()
	for _, h := range hooks {
		AddReportEntry(evidence.EntryHook, h, ReportEntryVisibilityNever)
	}
	for _, o := range freeObjs {
		r := slices.DeleteFunc(slices.Clone(free[o]), func(id string) bool { return slices.Contains(partial, id) })
		if len(r) == 0 {
			continue
		}
		slices.Sort(r)
		AddReportEntry(evidence.EntryHookFree, evidence.HookFree{How: o, Requirements: r}, ReportEntryVisibilityNever)
	}
	ex, dropped := st.rec.Exchanges()
	if len(ex) > 0 {
		samples := make([]evidence.LatencySample, 0, len(ex))
		for _, e := range ex {
			if e.Error == "" && e.Status != 0 {
				samples = append(samples, evidence.LatencySample{Op: e.Op, MS: e.DurationMS})
			}
		}
		AddReportEntry(evidence.EntryLatency, samples, ReportEntryVisibilityNever)
	}
	st.vmu.Lock()
	failed := len(st.soft) > 0 || CurrentSpecReport().Failed()
	st.vmu.Unlock()
	if failed && len(ex) > 0 {
		AddReportEntry(evidence.EntryTranscript, evidence.Transcript{Exchanges: ex, Dropped: dropped}, ReportEntryVisibilityNever)
	}
	if soft := st.takeSoft(); len(soft) > 0 {
		Fail(failureText(soft))
	}
}, OncePerOrdered)

// takeSoft returns the recorded failures the spec's Ginkgo failure has not
// listed yet, and forgets them.
func (st *specState) takeSoft() []evidence.Verdict {
	st.vmu.Lock()
	defer st.vmu.Unlock()
	soft := st.soft
	st.soft = nil
	return soft
}

// failureText is the spec's failure message: one line per failed check.
// The report's verdicts come from the recorded entries, one per
// requirement and spec however often this text repeats a failure.
func failureText(vs []evidence.Verdict) string {
	var msgs []string
	for _, v := range vs {
		msgs = append(msgs, v.Req+": "+v.Message)
	}
	return strings.Join(msgs, "\n")
}

// AtSpecEnd registers f to run when the current spec ends, however it ends
// (passed, failed, unverified), before its exchanges are judged and its
// transcript is kept: for judgements over everything a spec saw, such as
// every frame of a WebSocket session, that must not be lost when the spec
// stopped early. f may record verdicts with Check, Should, NothingToCheck
// or Note, but must not end the spec (Must, Unverified, Fail): it runs in
// an AfterEach. Functions run last registered first.
func AtSpecEnd(f func()) {
	st := current.Load()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.atEnd = append(st.atEnd, f)
	st.mu.Unlock()
}

// Offline marks a spec that checks fixtures or the suite's own verifiers
// without talking to the target: it runs whatever levels are selected, and
// the report lists it under self_checks, never as a verdict on the target.
var Offline = Label(evidence.OfflineLabel)

// gate skips a spec whose level this run does not check, or all of whose
// requirements are in areas it does not check, with the reason.
func gate(env *target.Env) {
	labels := CurrentSpecReport().Labels()
	if slices.Contains(labels, evidence.OfflineLabel) {
		return
	}
	for _, l := range labels {
		name, ok := strings.CutPrefix(l, evidence.LevelLabelPrefix)
		if !ok {
			continue
		}
		lv, err := requirements.ParseAny(name)
		if err != nil {
			continue
		}
		if sel := env.Selected(lv); !sel.Run {
			NotApplicable(fmt.Sprintf("level %s not checked: %s", lv, sel.Reason))
		}
	}
	// A spec all of whose requirements are in areas the run does not
	// check (--areas, --skip-areas) is not run.
	var why []string
	for _, id := range specReqs() {
		ok, reason := env.AreaChecked(id)
		if ok {
			return
		}
		if !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	if len(why) > 0 {
		NotApplicable("not checked: " + strings.Join(why, "; "))
	}
}

// Install sets the run's environment (the conform binary does this before
// RunSpecs). Without it, Env builds one from CONFORM_* variables.
func Install(env *target.Env) { installed.Store(env) }

// Env returns the run's environment. Under `go test` or the ginkgo CLI it is
// built once from the CONFORM_* environment (see internal/config); with no
// target configured it starts the built-in reference Harness in-process.
func Env() *target.Env {
	if e := installed.Load(); e != nil {
		return e
	}
	envOnce.Do(func() { envValue, envErr = fromEnvironment() })
	if envErr != nil {
		AbortSuite("conform: " + envErr.Error())
	}
	return envValue
}

// Client returns the current spec's client: every exchange it makes is part
// of the spec's transcript.
func Client() *client.Client {
	st := current.Load()
	if st == nil || st.client == nil {
		return Env().Client
	}
	return st.client
}

// Key returns a value unique to this run and process, for idempotency keys
// and resource names, so specs never collide with each other or with other
// runs against the same target.
func Key(prefix string) string {
	return fmt.Sprintf("%s-%s-%d-%d", prefix, Env().RunID, GinkgoParallelProcess(), keyCount.Add(1))
}

func record(req, verdict string, err error) evidence.Verdict {
	return recordErr(req, verdict, Env().Redactor.String(err.Error()), err)
}

// Reproducible is an error that knows how to reproduce itself better than
// the last recorded request: a race names every request a round fired at
// once, and its reproduction is a script that fires them at once again
// (internal/load). The report shows Repro where it shows a curl line.
type Reproducible interface {
	error
	Repro() string
}

// recordErr is recordMsg for a failure err described by msg: its
// reproduction goes with it when err has one (Reproducible).
func recordErr(req, verdict, msg string, err error) evidence.Verdict {
	var r Reproducible
	repro := ""
	if errors.As(err, &r) {
		repro = Env().Redactor.String(r.Repro())
	}
	return recordVerdict(evidence.Verdict{Req: req, Verdict: verdict, Message: msg, Repro: repro})
}

// recordMsg adds one verdict entry and notes that req has a verdict of its
// own in this spec.
func recordMsg(req, verdict, msg, remedy string) evidence.Verdict {
	return recordVerdict(evidence.Verdict{Req: req, Verdict: verdict, Message: msg, Remedy: remedy})
}

func recordVerdict(v evidence.Verdict) evidence.Verdict {
	req, verdict := v.Req, v.Verdict
	st := current.Load()
	if st != nil {
		v.At = st.rec.Len()
	}
	AddReportEntry(evidence.EntryVerdict, v, ReportEntryVisibilityNever)
	if st != nil {
		st.vmu.Lock()
		st.judged[req] = true
		if verdict == evidence.VerdictFail || verdict == evidence.VerdictError {
			if _, ok := st.fails[req]; !ok {
				st.fails[req] = v
			}
		}
		st.vmu.Unlock()
	}
	return v
}

func classify(err error) string {
	var te *client.TransportError
	if errors.As(err, &te) {
		return evidence.VerdictError
	}
	return evidence.VerdictFail
}

// SpecReqs lists the requirement ids the current spec names.
func SpecReqs() []string { return specReqs() }

// specReqs lists the requirement ids the current spec names.
func specReqs() []string {
	var ids []string
	for _, l := range CurrentSpecReport().Labels() {
		if id, ok := strings.CutPrefix(l, evidence.ReqLabelPrefix); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// unjudged returns those of ids that the current spec names and that have
// no verdict of their own in it yet, leaving out except.
func unjudged(ids []string, except string) []string {
	st := current.Load()
	named := specReqs()
	var out []string
	for _, id := range ids {
		if id == except || !slices.Contains(named, id) || slices.Contains(out, id) {
			continue
		}
		if st != nil {
			st.vmu.Lock()
			j := st.judged[id]
			st.vmu.Unlock()
			if j {
				continue
			}
		}
		out = append(out, id)
	}
	return out
}

// summary shortens a failure message for the verdicts it blocks.
func summary(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:160]) + "…"
	}
	return msg
}

// RemedyBlocked is the remedy of a requirement a failure kept from being
// checked.
const RemedyBlocked = "fix the failure it is blocked by: this spec checks it only after that"

// BlockedPrefix starts the message of a requirement that a failed check of
// the same spec kept from being checked.
const BlockedPrefix = "not checked: blocked by the "

// blockedMessage says which failure kept a requirement from being checked.
func blockedMessage(by evidence.Verdict) string {
	what := "failure"
	if by.Verdict == evidence.VerdictError {
		what = "error"
	}
	m, _, _ := strings.Cut(by.Message, "; blocks: ")
	return fmt.Sprintf("%s%s of %s (%s)", BlockedPrefix, what, by.Req, summary(m))
}

// block records that the failure of by kept reqs (those the spec names
// that have no verdict of their own yet) from being checked: each is
// unverified (an error when by is a transport error) with a message naming
// by, and by's failure lists them as "blocks: …". It returns what it
// blocked.
func block(by evidence.Verdict, reqs []string) []string {
	blocked := unjudged(reqs, by.Req)
	if len(blocked) == 0 {
		return nil
	}
	verdict := evidence.VerdictUnverified
	if by.Verdict == evidence.VerdictError {
		verdict = evidence.VerdictError
	}
	msg := blockedMessage(by)
	for _, id := range blocked {
		recordMsg(id, verdict, msg, RemedyBlocked)
	}
	return blocked
}

// withBlocks is a failure's message with the requirements it blocked.
func withBlocks(msg string, blocked []string) string {
	if len(blocked) == 0 {
		return msg
	}
	return msg + "; blocks: " + strings.Join(blocked, ", ")
}

// Must records a check of a mandatory requirement whose failure leaves
// the rest of the spec nothing to check (no task id to follow, no list to
// read): it ends the spec. Every requirement the spec names that has no
// verdict of its own is then unverified, "not checked: blocked by the
// failure of req (…)", and req's failure lists them ("blocks: …"). A
// transport failure is recorded as an error, never blamed on the target,
// and so is everything it kept from being checked.
func Must(req string, err error) {
	GinkgoHelper()
	if err == nil {
		return
	}
	if classify(err) == evidence.VerdictError {
		Transport(err, req)
	}
	msg := Env().Redactor.String(err.Error())
	by := evidence.Verdict{Req: req, Verdict: evidence.VerdictFail, Message: msg}
	blocked := unjudged(specReqs(), req)
	v := recordErr(req, evidence.VerdictFail, withBlocks(msg, blocked), err)
	block(by, blocked)
	var soft []evidence.Verdict
	if st := current.Load(); st != nil {
		soft = st.takeSoft()
	}
	Fail(failureText(append(soft, v)))
}

// Check records a check of a mandatory requirement but lets the spec go on,
// so independent checks all report; the spec fails at its end. It reports
// whether the check passed: a caller that skips later checks because this
// one failed says which with CheckBlocks or Blocked, so they are not taken
// as passed.
func Check(req string, err error) bool {
	return CheckBlocks(req, err)
}

// CheckBlocks is Check for a check whose failure keeps the requirements
// blocks from being checked by what follows (the caller skips those
// checks when it returns false): each of them that the spec names and that
// has no verdict of its own is unverified, "not checked: blocked by the
// failure of req (…)", and req's failure lists them.
func CheckBlocks(req string, err error, blocks ...string) bool {
	if st := current.Load(); st != nil {
		st.checkedOn(req)
	}
	if err == nil {
		return true
	}
	verdict := classify(err)
	msg := Env().Redactor.String(err.Error())
	blocked := unjudged(blocks, req)
	v := recordErr(req, verdict, withBlocks(msg, blocked), err)
	block(evidence.Verdict{Req: req, Verdict: verdict, Message: msg}, blocked)
	if st := current.Load(); st != nil {
		st.vmu.Lock()
		st.soft = append(st.soft, v)
		st.blocks[req] = append(st.blocks[req], blocked...)
		st.vmu.Unlock()
	}
	return false
}

// Blocked records that reqs could not be checked because of an earlier
// failure of by in this spec (a helper recorded it; the caller then
// skipped what depended on it). Each of reqs the spec names that has no
// verdict of its own is unverified, "not checked: blocked by the failure of
// by (…)", and by's failure is recorded once more listing everything it
// blocked (the report keeps one verdict per requirement and spec). Without
// a recorded failure of by it does nothing.
func Blocked(by string, reqs ...string) {
	st := current.Load()
	if st == nil {
		return
	}
	st.vmu.Lock()
	first, ok := st.fails[by]
	st.vmu.Unlock()
	if !ok {
		return
	}
	blocked := block(first, reqs)
	if len(blocked) == 0 {
		return
	}
	st.vmu.Lock()
	all := append(st.blocks[by], blocked...)
	st.blocks[by] = all
	st.vmu.Unlock()
	m, _, _ := strings.Cut(first.Message, "; blocks: ")
	AddReportEntry(evidence.EntryVerdict, evidence.Verdict{Req: by, Verdict: first.Verdict, Message: withBlocks(m, all)}, ReportEntryVisibilityNever)
}

// Stop ends the spec after a failure a helper recorded with Check (the
// first of by with a recorded failure in this spec), when nothing after it
// can run: like Must, every requirement the spec names that has no verdict
// of its own is then blocked by that failure, and the failure lists them.
func Stop(by ...string) {
	GinkgoHelper()
	st := current.Load()
	var first evidence.Verdict
	if st != nil {
		st.vmu.Lock()
		for _, b := range by {
			if v, ok := st.fails[b]; ok {
				first = v
				break
			}
		}
		st.vmu.Unlock()
	}
	if first.Req == "" {
		Fail("stopped: " + strings.Join(by, ", ") + " could not be checked")
	}
	Blocked(first.Req, specReqs()...)
	soft := st.takeSoft()
	if len(soft) == 0 {
		soft = []evidence.Verdict{first}
	}
	Fail(failureText(soft))
}

// Should records a recommendation: a miss is a warning and the spec passes.
func Should(req string, err error) {
	if err == nil {
		return
	}
	verdict := evidence.VerdictWarn
	if classify(err) == evidence.VerdictError {
		verdict = evidence.VerdictError
	}
	record(req, verdict, err)
}

// Transport is for errors from the client: it ends the spec with an error
// verdict when the target could not be spoken to (a refused connection, a
// timeout, a broken connection), for every requirement it names and for
// every requirement of the spec without a verdict of its own (the suite
// could not observe them), and otherwise does nothing. A set-up step of
// the spec that names no requirement thus still makes the spec an error,
// never a failure.
func Transport(err error, reqs ...string) {
	GinkgoHelper()
	if err == nil {
		return
	}
	var te *client.TransportError
	if !errors.As(err, &te) {
		Fail(err.Error())
	}
	for _, r := range reqs {
		record(r, evidence.VerdictError, err)
	}
	for _, r := range unjudged(specReqs(), "") {
		record(r, evidence.VerdictError, err)
	}
	Fail(Env().Redactor.String(err.Error()))
}

// Do performs a REST exchange with the spec's client. If the target cannot
// be spoken to, the spec ends with an error verdict for reqs.
func Do(ctx context.Context, req client.Request, reqs ...string) *client.Response {
	GinkgoHelper()
	resp, err := Client().Do(ctx, req)
	Transport(err, reqs...)
	return resp
}

// Note records an informational finding for the report's notes: something
// a reader should know that is not a verdict on any requirement.
func Note(msg string) {
	AddReportEntry(evidence.EntryNote, Env().Redactor.String(msg), ReportEntryVisibilityNever)
}

// Remedies: what an implementer can do so that an unverified requirement is
// verified by the next run.
const (
	RemedyScenarios = "implement the conform.scenarios test hook (docs/scenarios.md) so the suite can drive tasks into this state"
	RemedyAgentEnds = "let the target's agent finish a plain text task within --task-timeout, or implement the conform.scenarios hook (docs/scenarios.md)"
	// RemedyRunning and RemedyFailed are for checks that take a task of
	// the target's own agent caught in the state before they ask the hook
	// (docs/interpretations.md#evidence-sources).
	RemedyRunning = "implement the conform.scenarios test hook (docs/scenarios.md), or let the target's agent take a moment over a plain task, so that the suite can catch one running"
	RemedyFailed  = "implement the conform.scenarios test hook (docs/scenarios.md), or let the target's agent fail a task it has no text to work on (an empty prompt), so that the suite can see a FAILED task"
)

// Unverified ends the spec without a verdict on the target: the check could
// not run for want of the test hook, of data, or of a prerequisite. Every
// requirement the spec names that has no verdict of its own is then
// unverified — never passed — and remedy tells the implementer what to do
// so that a later run verifies it.
func Unverified(reason, remedy string) {
	GinkgoHelper()
	AddReportEntry(evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: Env().Redactor.String(reason), Remedy: remedy}, ReportEntryVisibilityNever)
	Skip("unverified: " + reason)
}

// NotApplicable ends the spec because, by the target's own claims (a level
// or capability it does not advertise), the behaviour does not apply. The
// spec is left out of its requirements' roll-up.
func NotApplicable(reason string) {
	GinkgoHelper()
	AddReportEntry(evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipNotApplicable, Reason: Env().Redactor.String(reason)}, ReportEntryVisibilityNever)
	Skip("not applicable: " + reason)
}

// NothingToCheck records that one requirement had nothing to look at in
// this spec (no receipt id to follow, no outcome to read…): it is
// unverified, never passed. The spec goes on with its other checks.
func NothingToCheck(req, reason, remedy string) {
	recordMsg(req, evidence.VerdictUnverified, Env().Redactor.String(reason), remedy)
}

// NotApplicableTo records that, by what the target did within its rights (a
// MAY it did not take up, an optional field it did not set), one
// requirement does not apply in this spec. The spec goes on; the
// requirement is judged by the other specs that name it.
func NotApplicableTo(req, reason string) {
	recordMsg(req, evidence.VerdictNotApplicable, Env().Redactor.String(reason), "")
}

// ReqWSEventFrame is the requirement an event frame's Event is judged
// under: the full Event, as the REST event list holds it.
const ReqWSEventFrame = "EXT-WS-007"

// judgeTraffic runs the OpenAPI oracle over every exchange of the spec:
// each response against its operation's declared schemas, each request the
// suite sent against its operation. A response that breaks the document
// fails the requirement the oracle maps it to (with the JSON pointer and
// value), whichever spec saw it. (Some hand-written checks still judge the
// same shapes; a broken field may then be reported twice under one id.)
// A request that matches no operation and is not a registered
// negative probe is the suite's own defect: it goes to the report's
// suite_defects, never to a verdict on the target.
func judgeTraffic(st *specState) {
	st.mu.Lock()
	traffic, unjudged := st.traffic, st.unjudged
	st.traffic, st.unjudged = nil, 0
	st.mu.Unlock()
	if unjudged > 0 {
		Note(fmt.Sprintf("%s: %d exchanges past the first %d were not checked against the OpenAPI document", CurrentSpecReport().FullText(), unjudged, maxTraffic))
	}
	if len(traffic) == 0 {
		return
	}
	doc, err := openapi.Default()
	if err != nil {
		AddReportEntry(evidence.EntryDefect, "the vendored OpenAPI document does not load: "+err.Error(), ReportEntryVisibilityNever)
		return
	}
	reg, err := requirements.Default()
	if err != nil {
		return // Validate reported it before the run
	}
	env := Env()
	type finding struct {
		first string
		more  int
	}
	byReq := map[string]*finding{}
	var order []string
	// A retry with an Idempotency-Key used on the same target may answer
	// 200 with the first response's resource ("a retry MAY return the
	// in-flight Task"; docs/interpretations.md): the document's 201/202
	// binds a first answer only. Concurrent retries complete in any order,
	// so every exchange of a key sent more than once may be the replay.
	keyUses := map[string]int{}
	keyOf := func(t client.Traffic) string {
		if k := t.RequestHeader.Get("Idempotency-Key"); k != "" {
			return t.Method + " " + t.Path + " " + k
		}
		return ""
	}
	for _, t := range traffic {
		keyUses[keyOf(t)]++
	}
	for _, t := range traffic {
		retry := keyOf(t) != "" && keyUses[keyOf(t)] > 1
		for _, v := range doc.ValidateTraffic(t) {
			if t.Kind == client.KindWSFrame && v.Kind == openapi.KindResponse && v.Req != "" {
				// The Event of a WebSocket event frame is the REST copy
				// (docs/websocket.md): one that breaks the Event
				// component breaks the frame's requirement; the REST
				// list's own copy is Core's to judge.
				v.Req = ReqWSEventFrame
			}
			if retry && t.Status == http.StatusOK && v.UndeclaredSuccess {
				continue
			}
			if v.Kind == openapi.KindResponse && t.Status/100 == 2 && strings.HasPrefix(t.Probe, negative.InvalidProbe) {
				// A success answer to a request the document declares
				// invalid is the hostile-input pass's finding; its body
				// answers no valid request.
				continue
			}
			msg := env.Redactor.String(v.Error())
			if v.Kind != openapi.KindResponse {
				// The suite's own request: no verdict on the target.
				AddReportEntry(evidence.EntryDefect, msg, ReportEntryVisibilityNever)
				continue
			}
			if v.Req == "" {
				continue // an operation no requirement of the registry covers yet
			}
			r, ok := reg.Lookup(v.Req)
			if !ok || !env.Selected(r.Level).Run {
				continue
			}
			if checked, _ := env.AreaChecked(v.Req); !checked {
				continue // an area the user left out
			}
			if f := byReq[v.Req]; f != nil {
				f.more++
				continue
			}
			byReq[v.Req] = &finding{first: msg}
			order = append(order, v.Req)
		}
	}
	for _, req := range order {
		f := byReq[req]
		msg := "OpenAPI: " + f.first
		if f.more > 0 {
			msg += fmt.Sprintf(" (and %d more like it in this spec)", f.more)
		}
		verdict := evidence.VerdictFail
		if r, _ := reg.Lookup(req); !r.Keyword.Mandatory() {
			verdict = evidence.VerdictWarn
		}
		v := recordMsg(req, verdict, msg, "")
		if verdict == evidence.VerdictFail {
			st.vmu.Lock()
			st.soft = append(st.soft, v)
			st.vmu.Unlock()
		}
	}
}
