package load

import (
	"fmt"
	"strings"
)

// Outcome is what one round of a check showed.
type Outcome struct {
	Round *Round
	// Err is the race the round exposed (a verifier's finding); nil when
	// it showed none.
	Err error
	// After is what the check read after the round (shown with a race).
	After []Read
	// Unjudged says why the round could not be judged (the target kept
	// refusing under load, a prerequisite failed); "" when it was judged.
	Unjudged string
}

// Tally is the rounds of one check: how many were judged, how many showed
// the race, and the first that did.
type Tally struct {
	Of        int // rounds the check plans
	Run       int // rounds run
	Judged    int // rounds judged
	Showed    int // rounds that showed the race
	Throttled int // rounds in which the target refused and was waited for
	first     *Outcome
	index     int
	unjudged  []string
}

// NewTally starts the tally of a check of n rounds.
func NewTally(n int) *Tally { return &Tally{Of: n} }

// Add records round i (from 1).
func (t *Tally) Add(i int, o Outcome) {
	t.Run++
	if o.Round != nil && o.Round.Throttled {
		t.Throttled++
	}
	if o.Unjudged != "" {
		t.unjudged = append(t.unjudged, fmt.Sprintf("round %d: %s", i, o.Unjudged))
		return
	}
	t.Judged++
	if o.Err == nil {
		return
	}
	t.Showed++
	if t.first == nil {
		cp := o
		t.first, t.index = &cp, i
	}
}

// Race is the first race a round showed, as an error that names the
// round's requests and reproduces them (*Race); nil when none did.
func (t *Tally) Race() error {
	if t.first == nil {
		return nil
	}
	return &Race{Err: t.first.Err, Round: t.first.Round, Index: t.index, Of: t.Run, Showed: t.Showed, After: t.first.After}
}

// Unjudged says why rounds could not be judged ("" when all were).
func (t *Tally) Unjudged() string { return strings.Join(t.unjudged, "; ") }

// Merge joins rounds fired one after another (the waves of a burst) into
// one for a report: labels name their wave ("w2#3"), and every time is
// relative to the first wave's release.
func Merge(rs ...*Round) *Round {
	if len(rs) == 0 {
		return nil
	}
	out := &Round{Started: rs[0].Started, c: rs[0].c}
	for w, r := range rs {
		shift := r.Started.Sub(out.Started)
		for i, a := range r.Answers {
			a.Label = fmt.Sprintf("w%d%s", w+1, a.Label)
			a.Start += shift
			a.End += shift
			out.Answers = append(out.Answers, a)
			s := r.shots[i]
			s.Label = a.Label
			out.shots = append(out.shots, s)
		}
		out.Throttled = out.Throttled || r.Throttled
		out.GaveUp = out.GaveUp || r.GaveUp
	}
	return out
}
