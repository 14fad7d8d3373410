package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	fixture "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/fidelity"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/tape"
)

// Live tapes (docs/replay.md, "Live tapes"; spec 003): the suite downloads
// the tapes of the fixture's source task and of its replays (each an
// Artifact of its task, with its CAS sidecar payloads as further
// artifacts, docs/replay.md "Tapes") into a temporary directory, validates
// them, and runs the fidelity oracle in the semantic mode. An exact replay
// must show no divergence (RPLY-MODE-002: it used only recorded material);
// the with_overrides replay must diverge exactly at the records of the
// overridden dependencies and nowhere else (RPLY-MODE-003). Each
// FidelityReport goes into the report as the spec's evidence. Each tape
// fetched is judged against spec 003's producer requirements (RPLY-TAPE-001,
// -002, -005, -006: each finding of tape.Validate under the id its code
// names), and an invalid tape blocks the oracle's comparison. A target that
// offers no tape leaves these specs not applicable (tapes as artifacts are
// conform's convention, docs/interpretations.md#replay-tapes-optional); the
// other specs of RPLY-MODE-002 and -003 still judge.

// tapeReqs are the producer requirements of spec 003 a live tape is judged
// against (internal/requirements/tapes.yaml).
var tapeReqs = []string{"RPLY-TAPE-001", "RPLY-TAPE-002", "RPLY-TAPE-005", "RPLY-TAPE-006"}

// Tape artifact metadata (docs/replay.md, "Tapes").
const (
	tapeMetaKey    = "conform.tape"
	tapeCASMetaKey = "conform.tape_cas"
	remedyTapes    = "offer each finished task's seed-003 tape as an Artifact of the task (docs/replay.md, \"Tapes\"): kind log, mime_type application/x-harn-tape, metadata {\"conform.tape\": true}, each payload spilled to the CAS sidecar as one more artifact of the task with metadata {\"conform.tape_cas\": <tape artifact id>, \"hash\": <payload hash>}"
)

var _ = Describe("Replay tapes, live", func() {
	It("offers tapes on which an exact replay shows no divergence from its source (semantic mode)", suite.Req(append([]string{"RPLY-MODE-002"}, tapeReqs...)...), func(ctx SpecContext) {
		r := theFixture(ctx)
		r.usable()
		if !r.exact.completed() {
			suite.Unverified("the fixture's exact replay did not complete, so it has no tape to compare: "+r.exact.ended(), "let an exact replay of a source whose material was retained complete")
		}
		dir := tapeDir()
		src := r.fetchTape(ctx, "RPLY-MODE-002", r.source, "the source task", filepath.Join(dir, "source.tape"))
		ex := r.fetchTape(ctx, "RPLY-MODE-002", r.exact.id, r.exact.what, filepath.Join(dir, "replay-exact.tape"))
		rep := oracle(src, ex, "source tape vs exact replay tape")
		if rep == nil || !inOrder(src, ex, "RPLY-MODE-002") {
			return
		}
		if rep.Status != fidelity.StatusEqual {
			suite.Check("RPLY-MODE-002", fmt.Errorf("%s: the exact replay's tape diverges from the source's in the semantic mode (%s): %s; an exact replay uses only recorded material",
				r.exact.what, rep.Summary(), divergences(rep)))
		}
	})

	It("offers tapes on which a with_overrides replay diverges from its source exactly at the overridden records", suite.Req(append([]string{"RPLY-MODE-003"}, tapeReqs...)...), func(ctx SpecContext) {
		r := theFixture(ctx)
		o := r.completedReplay()
		dir := tapeDir()
		src := r.fetchTape(ctx, "RPLY-MODE-003", r.source, "the source task", filepath.Join(dir, "source.tape"))
		ov := r.fetchTape(ctx, "RPLY-MODE-003", o.id, o.what, filepath.Join(dir, "replay-overrides.tape"))
		rep := oracle(src, ov, "source tape vs with_overrides replay tape")
		if rep == nil || !inOrder(src, ov, "RPLY-MODE-003") {
			return
		}
		suite.Check("RPLY-MODE-003", divergesExactly(rep, r.manifest.Scenario.Dependencies))
	})
})

// tapeDir is a temporary directory removed at the spec's end.
func tapeDir() string {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "conform-replay-tapes-")
	if err != nil {
		suite.Unverified("no temporary directory for the tapes: "+err.Error(), "let conform create a temporary directory (TMPDIR)")
	}
	DeferCleanup(os.RemoveAll, dir)
	return dir
}

// liveTape is a downloaded tape.
type liveTape struct {
	path string
	name string // how reports name it: "source.tape (task …)"
}

var casHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// maxSidecar bounds the sidecar payloads fetched for one tape: the
// fixture's runs spill one or two.
const maxSidecar = 64

// fetchTape downloads the tape of task (and its CAS sidecar) to path and
// validates it. A task that offers no tape ends the spec not applicable; a
// tape that is not a valid seed-003 tape with its sidecar fails req.
func (r *fixtureRun) fetchTape(ctx context.Context, req, task, what, path string) liveTape {
	GinkgoHelper()
	arts, err := r.artifacts(ctx, task)
	if err != nil {
		suite.Unverified(fmt.Sprintf("the artifacts of %s (task %s) cannot be listed, so its tape cannot be found: %v", what, task, err), remedyTapes)
	}
	var tapeArt map[string]any
	for _, a := range arts {
		if meta, _ := a["metadata"].(map[string]any); meta[tapeMetaKey] == true {
			tapeArt = a
		}
	}
	if tapeArt == nil {
		// Tapes as artifacts are conform's convention (docs/replay.md,
		// "Tapes"), not the protocol's: a target that offers none is not
		// judged by the oracle, and the event checks of RPLY-MODE-002 and
		// RPLY-MODE-003 (modes.go) still judge what its replays did.
		suite.NotApplicable(fmt.Sprintf("%s (task %s) offers no tape (none of its %d artifacts has metadata {%q: true}), so the fidelity oracle has nothing to compare; to have it run: %s", what, task, len(arts), tapeMetaKey, remedyTapes))
	}
	id, _ := tapeArt["id"].(string)
	lt := liveTape{path: path, name: fmt.Sprintf("%s (the tape artifact %s of task %s)", filepath.Base(path), id, task)}
	if err := r.download(ctx, id, path); err != nil {
		suite.Check(req, fmt.Errorf("%s offers the tape artifact %s, whose content cannot be read: %v", what, id, err))
		suite.Stop(req)
	}
	cas := tape.CASDir(path)
	fetched := 0
	for _, a := range arts {
		meta, _ := a["metadata"].(map[string]any)
		if meta[tapeCASMetaKey] != id {
			continue
		}
		if fetched++; fetched > maxSidecar {
			suite.Check(req, fmt.Errorf("%s: tape %s has more than %d sidecar artifacts; the fixture's tapes spill at most a few payloads", what, id, maxSidecar))
			break
		}
		h, _ := meta["hash"].(string)
		aid, _ := a["id"].(string)
		if !casHashRE.MatchString(h) {
			// Never a file name the target chose freely.
			suite.Check(req, fmt.Errorf("%s: the sidecar artifact %s of tape %s names hash %q, want 64 lowercase hex digits", what, aid, id, fxClip([]byte(h))))
			continue
		}
		if err := os.MkdirAll(cas, 0o755); err != nil {
			suite.Unverified("writing the tape's sidecar: "+err.Error(), "let conform write to its temporary directory")
		}
		if err := r.download(ctx, aid, filepath.Join(cas, h)); err != nil {
			suite.Check(req, fmt.Errorf("%s: the sidecar artifact %s of tape %s cannot be read: %v", what, aid, id, err))
		}
	}
	rep, err := tape.Validate(path)
	var te *tape.Error
	switch {
	case errors.As(err, &te) && te.Code.Requirement() != "" && te.Code != tape.CodeVersionUnsupported:
		tr := te.Code.Requirement()
		suite.Check(tr, fmt.Errorf("%s: the tape artifact %s is not a readable seed-003 tape: %v", what, id, err))
		suite.Stop(tr)
	case err != nil:
		// A newer format, or a limit of conform's reader: not the tape's
		// fault, and nothing conform can judge.
		suite.Unverified(fmt.Sprintf("%s: conform cannot read the tape artifact %s: %v", what, id, err), "offer tapes of format version 1 (spec 003), whose lines conform's reader takes (docs/tapes.md)")
	case !rep.Valid():
		byReq := map[string][]string{}
		var reqs []string
		for _, f := range rep.Findings {
			tr := f.Code.Requirement()
			if f.Warning || tr == "" {
				continue
			}
			if byReq[tr] == nil {
				reqs = append(reqs, tr)
			}
			byReq[tr] = append(byReq[tr], f.String())
		}
		if len(reqs) == 0 {
			// Only findings of conform's own reading (io_error): nothing
			// the tape broke.
			suite.Unverified(fmt.Sprintf("%s: the tape artifact %s could not be checked: %v", what, id, rep.Findings), "let conform read the downloaded tape and its sidecar in its temporary directory")
		}
		if rep.Dropped > 0 {
			byReq[reqs[0]] = append(byReq[reqs[0]], fmt.Sprintf("and %d more findings", rep.Dropped))
		}
		slices.Sort(reqs)
		for _, tr := range reqs {
			fs := byReq[tr]
			if len(fs) > 5 {
				fs = append(fs[:5], fmt.Sprintf("… %d more", len(fs)-5))
			}
			suite.Check(tr, fmt.Errorf("%s: the tape artifact %s (with its sidecar) breaks spec 003: %s", what, id, strings.Join(fs, "; ")))
		}
		suite.Stop(reqs...)
	}
	return lt
}

// artifacts lists a task's artifacts, following at most 20 pages.
func (r *fixtureRun) artifacts(ctx context.Context, task string) ([]map[string]any, error) {
	GinkgoHelper()
	var out []map[string]any
	q := url.Values{"task_id": {task}, "limit": {"100"}}
	for range 20 {
		resp := r.h.do(ctx, client.Request{Path: "/v1/artifacts", Query: q})
		if err := check.Status(resp, http.StatusOK); err != nil {
			return out, err
		}
		p, err := check.ListPage(resp)
		if err != nil {
			return out, err
		}
		for _, a := range p.Items {
			// A target that ignores the filter lists others' artifacts too.
			if t, _ := a["task_id"].(string); t == task {
				out = append(out, a)
			}
		}
		if !p.HasMore || p.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", p.NextCursor)
	}
	return out, fmt.Errorf("more than 20 pages of artifacts")
}

// download writes an artifact's content to path.
func (r *fixtureRun) download(ctx context.Context, id, path string) error {
	GinkgoHelper()
	resp := r.h.do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(id) + "/content"})
	if err := check.Status(resp, http.StatusOK); err != nil {
		return err
	}
	if resp.Truncated {
		return fmt.Errorf("%s: more bytes than the client reads", resp)
	}
	return os.WriteFile(path, resp.Body, 0o644)
}

// oracle compares two downloaded tapes in the semantic mode and attaches
// the FidelityReport to the spec's evidence. A comparison that cannot run
// (the tapes validated, so it should) returns nil after recording why.
func oracle(a, b liveTape, what string) *fidelity.Report {
	GinkgoHelper()
	open := func(t liveTape) fidelity.Source {
		return fidelity.Source{Name: t.name, Open: func() (io.ReadCloser, error) { return os.Open(t.path) }}
	}
	rep, err := fidelity.Compare(open(a), open(b), fidelity.Options{Mode: fidelity.Semantic, MaxDivergences: 200})
	if rep != nil {
		suite.Attach("fidelity (semantic): "+what, fidelity.Schema, rep)
	}
	if err != nil {
		suite.Unverified("the fidelity oracle could not compare "+what+": "+err.Error(), remedyTapes)
	}
	return rep
}

// inOrder tells a replay that consumed its inputs out of the source's
// order from one that consumed other inputs: when the replay's tape holds
// the same kinds of records as the source's, in another order, the
// oracle's positional divergences say nothing about what was consumed, and
// the finding is RPLY-LOG-001's (the replay walks the source log in order),
// recorded here as the OpenAPI oracle records what it sees; req, which that
// keeps from being judged, is then unverified.
func inOrder(src, replay liveTape, req string) bool {
	GinkgoHelper()
	a, errA := tape.Load(src.path)
	b, errB := tape.Load(replay.path)
	if errA != nil || errB != nil {
		return true // validated already; the oracle reports what it can
	}
	kinds := func(t *tape.Tape) []string {
		out := make([]string, len(t.Records))
		for i, r := range t.Records {
			out[i] = r.KindName()
		}
		return out
	}
	ka, kb := kinds(a), kinds(b)
	if slices.Equal(ka, kb) {
		return true
	}
	sa, sb := slices.Clone(ka), slices.Clone(kb)
	slices.Sort(sa)
	slices.Sort(sb)
	if !slices.Equal(sa, sb) {
		return true
	}
	suite.CheckBlocks("RPLY-LOG-001", fmt.Errorf("%s holds the records of %s in another order (%s, the source's %s): the replay consumed the recorded inputs out of the source log's order",
		replay.name, src.name, strings.Join(kb, ", "), strings.Join(ka, ", ")), req)
	return false
}

// divergences lists the first divergences of a report for a message.
func divergences(rep *fidelity.Report) string {
	var out []string
	for i, d := range rep.Divergences {
		if i == 5 {
			out = append(out, fmt.Sprintf("… %d more", rep.DivergenceCount-5))
			break
		}
		out = append(out, fmt.Sprintf("%s at %s: %s", d.Category, recordAt(d), d.Message))
	}
	return strings.Join(out, "; ")
}

func recordAt(d fidelity.Divergence) string {
	if d.Index == nil {
		return "no record"
	}
	return fmt.Sprintf("record %d", *d.Index)
}

// divergesExactly checks a source-vs-override-replay report: every record
// of an overridden dependency diverges (in its content: a payload hash or a
// field), and nothing else does.
func divergesExactly(rep *fidelity.Report, deps []fixture.Dependency) error {
	want := map[int]string{}
	for _, d := range deps {
		if d.TapeIndex >= 0 {
			want[d.TapeIndex] = d.Key
		}
	}
	hit := map[int]bool{}
	var stray []string
	for _, d := range rep.Divergences {
		content := d.Category == fidelity.PayloadHashMismatch || d.Category == fidelity.FieldMismatch
		if d.Index != nil && content {
			if _, ok := want[*d.Index]; ok {
				hit[*d.Index] = true
				continue
			}
		}
		stray = append(stray, fmt.Sprintf("%s at %s (%s)", d.Category, recordAt(d), d.Message))
	}
	var problems []string
	if rep.Truncated {
		problems = append(problems, fmt.Sprintf("the report lists %d of %d divergences", len(rep.Divergences), rep.DivergenceCount))
	}
	var same []string
	idx := make([]int, 0, len(want))
	for i := range want {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		if !hit[i] {
			same = append(same, fmt.Sprintf("record %d (%s)", i, want[i]))
		}
	}
	if len(same) > 0 {
		problems = append(problems, "the overridden dependencies' records do not diverge, so their recorded material was replayed instead of the override: "+strings.Join(same, ", "))
	}
	if len(stray) > 0 {
		if len(stray) > 5 {
			stray = append(stray[:5], fmt.Sprintf("… %d more", len(stray)-5))
		}
		problems = append(problems, "the tapes diverge where no override applied: "+strings.Join(stray, "; "))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the with_overrides replay's tape vs the source's (semantic mode, %s): %s", rep.Summary(), strings.Join(problems, "; "))
}
