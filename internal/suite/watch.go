package suite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// A Watch is an observation of the target that waits on one of the
// protocol's long timers (the WebSocket heartbeat, the auth frame's
// deadline) and runs beside the rest of the run instead of inside the spec
// that reports it (docs/interpretations.md#protocol-timers): a full run
// then takes about its longest timer, not the sum of them.
//
// A run starts every watch whose spec it will run as its first spec starts
// (early says when); in a run that selects specs by name or file, or whose
// label filter or levels leave the spec out, none starts early, and Result
// starts the observation when the spec asks, which then waits for it as it
// always did. Either way the verdicts are the spec's and do not depend on
// the order specs run in: the observation records none and must not call
// Ginkgo (it runs outside any spec); it returns what it saw, and the spec
// that calls Result judges it. It talks to the target through a client of
// its own, whose exchanges join the asking spec's transcript and OpenAPI
// oracle when that spec ends.
//
// An observation must end by itself, each of its waits bounded by a timer
// of the protocol or the run; Restart waits for the watches under way
// (AwaitWatches), since a restart would end the connections they observe.
type Watch[T any] struct {
	name   string
	labels Labels
	run    func(ctx context.Context, c *client.Client) T

	once    sync.Once
	started atomic.Bool
	done    chan struct{}
	value   T
	rec     *client.Recorder
	mu      sync.Mutex
	traffic []client.Traffic
}

// Late is the decorator of the specs that wait for watches: those that
// report one (Result) and those that restart the target (Restart). They
// run after every other spec (in random order among themselves), so the
// rest of the run happens while the watches are under way: a spec that
// waited for one early would hold every spec after it back.
var Late = SpecPriority(-1)

// watcher is what the run does with a watch of any type.
type watcher interface {
	early(env *target.Env) bool
	start()
	finished(ctx context.Context) error
	title() string
	begun() bool
	ended() bool
}

var (
	watchMu        sync.Mutex
	watches        []watcher
	watchesStarted sync.Once
	// watchCtx bounds every observation; Shutdown ends it.
	watchCtx, stopWatches = context.WithCancel(context.Background())
)

// NewWatch declares a watch (at package initialisation, as specs are
// declared): name says what it observes, labels are the labels of the spec
// that reports it (its suite.Req), and run makes the observation with c.
func NewWatch[T any](name string, labels Labels, run func(ctx context.Context, c *client.Client) T) *Watch[T] {
	w := newWatch(name, labels, run)
	watchMu.Lock()
	watches = append(watches, w)
	watchMu.Unlock()
	return w
}

// newWatch is a watch that the run does not know of.
func newWatch[T any](name string, labels Labels, run func(ctx context.Context, c *client.Client) T) *Watch[T] {
	return &Watch[T]{name: name, labels: labels, run: run, done: make(chan struct{})}
}

func (w *Watch[T]) title() string { return w.name }

// early reports whether the run will run the watch's spec (runsEarly).
func (w *Watch[T]) early(env *target.Env) bool {
	sc, _ := GinkgoConfiguration()
	return runsEarly(sc, env, w.labels)
}

// runsEarly reports whether a run configured by sc against env will run a
// spec with labels, as far as its configuration says before any spec ran:
// false for a run that selects specs by text or file (--focus), whose
// label filter leaves labels out, or that does not check one of the levels
// they name.
func runsEarly(sc types.SuiteConfig, env *target.Env, labels Labels) bool {
	if len(sc.FocusStrings)+len(sc.SkipStrings)+len(sc.FocusFiles)+len(sc.SkipFiles) > 0 {
		return false
	}
	if sc.LabelFilter != "" {
		f, err := types.ParseLabelFilter(sc.LabelFilter)
		if err != nil || !f(labels) {
			return false
		}
	}
	for _, l := range labels {
		name, ok := strings.CutPrefix(l, evidence.LevelLabelPrefix)
		if !ok {
			continue
		}
		lv, err := requirements.ParseAny(name)
		if err != nil || !env.Selected(lv).Run {
			return false
		}
	}
	return true
}

// start begins the observation in a goroutine of its own (once), with
// the run's client.
func (w *Watch[T]) start() {
	if w.started.Load() {
		return
	}
	w.startWith(Env().Client)
}

// startWith begins the observation with a copy of base that records into
// the watch's own transcript (once).
func (w *Watch[T]) startWith(base *client.Client) {
	w.once.Do(func() {
		w.started.Store(true)
		w.rec = client.NewRecorder()
		c := base.WithRecorder(w.rec).WithObserver(func(t client.Traffic) {
			w.mu.Lock()
			if len(w.traffic) < maxTraffic {
				w.traffic = append(w.traffic, t)
			}
			w.mu.Unlock()
		})
		go func() {
			defer close(w.done)
			w.value = w.run(watchCtx, c)
		}()
	})
}

// begun reports whether the observation was started.
func (w *Watch[T]) begun() bool { return w.started.Load() }

// ended reports whether a started observation has ended.
func (w *Watch[T]) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// finished waits for a started observation to end.
func (w *Watch[T]) finished(ctx context.Context) error {
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Start starts the observation if the run did not (a spec that reports
// it calls Start first and Result last, so that in a narrowed run the
// observation still runs beside the spec's other checks).
func (w *Watch[T]) Start() { w.start() }

// Result is what the watch saw: it starts the observation if the run did
// not, and waits for it to end. The observation's exchanges join the
// current spec's transcript and are judged by the OpenAPI oracle when the
// spec ends. The error is ctx's, when the spec was stopped first.
func (w *Watch[T]) Result(ctx context.Context) (T, error) {
	w.start()
	if err := w.finished(ctx); err != nil {
		var zero T
		return zero, err
	}
	AtSpecEnd(func() {
		st := current.Load()
		if st == nil {
			return
		}
		ex, _ := w.rec.Exchanges()
		st.rec.Include(ex)
		w.mu.Lock()
		traffic := w.traffic
		w.mu.Unlock()
		for _, t := range traffic {
			st.observe(t)
		}
	})
	return w.value, nil
}

// startWatches starts, once per run, every watch whose spec the run will
// run (early).
func startWatches(env *target.Env) {
	watchesStarted.Do(func() {
		if env.Client == nil || env.Config.Profile != "" {
			return
		}
		watchMu.Lock()
		defer watchMu.Unlock()
		for _, w := range watches {
			if w.early(env) {
				w.start()
			}
		}
	})
}

// awaitWatches waits until every watch started has ended, and says which
// were still under way and how long it waited ("" when none was).
func awaitWatches(ctx context.Context) (string, error) {
	watchMu.Lock()
	ws := append([]watcher(nil), watches...)
	watchMu.Unlock()
	return awaitAll(ctx, ws)
}

// awaitAll is awaitWatches for the watches ws.
func awaitAll(ctx context.Context, ws []watcher) (string, error) {
	start := time.Now()
	var names []string
	for _, w := range ws {
		if !w.begun() || w.ended() {
			continue
		}
		if err := w.finished(ctx); err != nil {
			return "", err
		}
		names = append(names, w.title())
	}
	if len(names) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s (%s)", strings.Join(names, ", "), time.Since(start).Round(time.Millisecond)), nil
}

// AwaitWatches waits until every observation under way (Watch) has ended,
// and notes what it waited for: a restart of the target would end the
// connections they observe, and their verdicts with them. Restart calls
// it; a spec that restarts the target calls it before it makes what the
// restart is to catch, so that the wait does not change that.
func AwaitWatches(ctx context.Context) error {
	waited, err := awaitWatches(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the observations under way before the restart: %w", err)
	}
	if waited != "" {
		Note("before restarting the target, the suite waited for the observations under way to end: " + waited)
	}
	return nil
}
