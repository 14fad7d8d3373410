package suite

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/load"
	"github.com/harn-conform/conform/internal/requirements"
)

// Concurrency is the label of every spec that races clients against each
// other (requirements.LabelConcurrency): `--label-filter '!concurrency'`
// leaves them out of a run.
var Concurrency = Label(requirements.LabelConcurrency)

// RemedyConcurrency is the remedy of a concurrency check a run with
// --concurrency 1 does not make.
const RemedyConcurrency = "run with --concurrency 2 or more (the default is 8) to let the suite race requests against each other"

// Driver is the current spec's load driver, bounded by the run's
// --concurrency, --concurrency-rate and --concurrency-round-timeout. A run
// with --concurrency 1 races nothing: the spec ends unverified.
func Driver() *load.Driver {
	GinkgoHelper()
	c := Env().Config.Concurrency
	if c.N < 2 {
		Unverified(fmt.Sprintf("--concurrency is %d: this check races at least two requests against each other", c.N), RemedyConcurrency)
	}
	return load.New(Client(), load.Limits{N: c.N, Rate: c.Rate, RoundTimeout: c.RoundTimeout})
}

// Rounds is how many rounds a concurrency check runs: --concurrency-rounds
// when set, else the check's own default (docs/performance.md says how
// each default was sized).
func Rounds(def int) int {
	if n := Env().Config.Concurrency.Rounds; n > 0 {
		return n
	}
	return def
}

// Race records the verdict of req over a check's rounds: a failure naming
// the first round that showed the race (its requests, their times and
// answers, what was read afterwards; its reproduction is a script that
// fires them at once again), with the round attached as evidence; or,
// when no round could be judged, unverified with why. Rounds the target
// refused under load (429, 503, honoured) are noted, never failed. It
// reports whether the race showed.
func Race(req string, t *load.Tally) bool {
	if t.Throttled > 0 {
		Note(fmt.Sprintf("%s: the target refused requests under load (429 or 503) in %d of %d rounds; the suite waited as asked and sent them again", req, t.Throttled, t.Run))
	}
	err := t.Race()
	if err == nil {
		if t.Judged == 0 {
			NothingToCheck(req, fmt.Sprintf("none of the %d rounds could be judged: %s", t.Run, t.Unjudged()),
				"let the target answer a burst of --concurrency requests within --concurrency-round-timeout (or lower --concurrency)")
		}
		return false
	}
	var race *load.Race
	if errors.As(err, &race) {
		Attach("race: "+req, load.SchemaRace, race.Doc(req))
	}
	Check(req, err)
	return true
}
