// Package fault is how the reference implementations declare what they
// break on purpose (faults) and the legal-but-unusual behaviours they can
// show (variants): each once, as a typed value in the file of the area it
// belongs to, carrying everything a listing or a proof row needs. The lists
// are derived from the declarations: `conform serve --list-faults` and
// --list-variants, the self-check's proof rows (cmd/conform), and the test
// that every observable MUST has a fault that fails it.
//
// A fault is one of two kinds (docs/architecture.md, "Recipe: a new
// fault"). A wire fault's defect is visible in one exchange on the wire: an
// answer rewritten, a member dropped, a request edited on its way in; it is
// a middleware in front of the unmodified reference (package wrapfault). An
// in-server fault (a flag the reference reads where it acts) breaks what a
// rewrite of single answers cannot make consistently: ordering across
// requests, durability, concurrency, state kept between requests, or the
// reference's own conduct (what it signs, stores, emits and when).
//
// The package imports nothing of the project: the reference Harness, its
// profiles, its middlewares and the conform command all use it.
package fault

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Kind is how a fault or variant is made.
type Kind string

const (
	// InServer is a flag the reference implementation reads where it
	// acts (refharness.Options.Faults and Variants).
	InServer Kind = "in-server"
	// Wire is a middleware in front of the unmodified reference Harness
	// that rewrites requests or answers (package wrapfault).
	Wire Kind = "wire"
)

// Run is the proof run a fault's row belongs to, when it is not the
// shared pool of its level.
type Run string

const (
	// Pool (the zero value): the row shares runs with the other rows of
	// its level (cmd/conform/faultgroups_test.go), unless it runs alone.
	Pool Run = ""
	// Actors: the run holds the keys of the reference's further actors
	// (--second-api-key, --read-only-api-key); it runs alone.
	Actors Run = "actors"
	// Card: a run narrowed to the agent card's signature requirements
	// (EXT-CARD-001, EXT-CARD-002).
	Card Run = "card"
	// OAuth: a run narrowed to the OAuth2 requirements (EXT-OAUTH-*),
	// with the reference's OAuth2 client.
	OAuth Run = "oauth"
	// Restart: a run that restarts the target (--restart-cmd), which the
	// shared pool cannot give (cmd/conform/durability_test.go).
	Restart Run = "restart"
)

// Fault is one requirement (or a few that observe one behaviour) broken on
// purpose. Fails and Warns say what the suite must report against a
// target with this fault, and nothing else may fail but Tolerated.
type Fault struct {
	// Name is what --fault takes: lower-case words joined by hyphens.
	Name string
	// Doc is one line: what the broken target does.
	Doc  string
	Kind Kind
	// Fails are the MUSTs the suite must fail.
	Fails []string
	// Tolerated may fail as well: they observe the same broken behaviour
	// from another side (Why says how).
	Tolerated []string
	// Warns are the SHOULDs (or a MAY's conditions) the suite must warn
	// about. A fault that fails nothing must warn, and then fail nothing
	// at all.
	Warns []string
	// Why explains what is not plain from the ids: what the tolerated
	// requirements see, why the row runs alone or needs its flags.
	Why string

	// Run is the proof run the fault's row belongs to (Pool: its level's).
	Run Run
	// Hookless faults are caught on a target without the scenario hook
	// too (as a third-party server is run): a second row proves it.
	Hookless bool
	// SlowHookless faults are caught on a target without the scenario
	// hook whose agent works a second over a task and fails one with no
	// text (variants no-scenario-hook and slow-agent): the run judges the
	// target's own tasks caught running, canceled and failed. A further
	// row proves it.
	SlowHookless bool
	// Alone rows never share a run: their failure blocks the checks of
	// much of the level, so every partner would need a run of its own.
	Alone bool
	// TaskTimeout, when set, is the row's --task-timeout: its waits for a
	// task that never gets where the fault keeps it from last that long.
	// The row runs alone.
	TaskTimeout time.Duration
	// Says is what the finding must say (narrowed runs: Card, OAuth).
	Says string
	// Race faults plant a bug that shows only when clients race (issue
	// 23): the concurrency checks alone catch them, by chance in each
	// round; BenchmarkRaceDetection measures how often per round and per
	// run (docs/performance.md, "Races").
	Race bool
	// NotApplicable are requirements a narrowed run must then call not
	// applicable (skip) rather than pass.
	NotApplicable []string
}

// Own are the requirements the fault must fail or warn about.
func (f Fault) Own() []string { return slices.Concat(f.Fails, f.Warns) }

// Variant is a legal-but-unusual behaviour: a conformance suite must
// accept it.
type Variant struct {
	// Name is what --variant takes.
	Name string
	// Doc is one line: what the target does differently.
	Doc  string
	Kind Kind
	// Level, for a wire variant, is the level whose run against it must
	// fail, err and warn about nothing (empty: a test of its own proves
	// it; its declaration says which).
	Level string
	// Met says the suite must meet the changed behaviour (the middleware
	// counts its changes): a reading the suite never met proves nothing.
	Met bool
	// Unverified are the requirements the variant leaves nothing to check
	// for: the run must call them unverified with a remedy, never passed,
	// and fail nothing.
	Unverified []string
	// Warns are SHOULDs the legal behaviour still earns a warning for.
	Warns []string
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	idRE   = regexp.MustCompile(`^[A-Z]+(-[A-Z0-9]+)+$`)
)

// Check reports what is wrong with a declaration: a name --fault cannot
// take, no doc line, no requirement, a malformed id, or proof fields that
// contradict each other.
func (f Fault) Check() error {
	var bad []string
	if !nameRE.MatchString(f.Name) {
		bad = append(bad, "name is not lower-case words joined by hyphens")
	}
	if f.Doc == "" || strings.Contains(f.Doc, "\n") {
		bad = append(bad, "doc is not one line")
	}
	if f.Kind != InServer && f.Kind != Wire {
		bad = append(bad, fmt.Sprintf("kind %q", f.Kind))
	}
	if len(f.Fails) == 0 && len(f.Warns) == 0 {
		bad = append(bad, "it neither fails nor warns about any requirement")
	}
	if len(f.Fails) == 0 && len(f.Tolerated) > 0 {
		bad = append(bad, "a fault that only warns may fail nothing, Tolerated included")
	}
	for _, id := range slices.Concat(f.Fails, f.Tolerated, f.Warns, f.NotApplicable) {
		if !idRE.MatchString(id) {
			bad = append(bad, fmt.Sprintf("requirement id %q", id))
		}
	}
	for _, id := range f.Tolerated {
		if slices.Contains(f.Own(), id) {
			bad = append(bad, id+" is both its own and tolerated")
		}
	}
	if (len(f.Tolerated) > 0 || f.Alone || f.TaskTimeout > 0) && f.Why == "" {
		bad = append(bad, "tolerated requirements, Alone and TaskTimeout need a Why")
	}
	if (f.Says != "" || len(f.NotApplicable) > 0) && f.Run != Card && f.Run != OAuth {
		bad = append(bad, "Says and NotApplicable are for narrowed runs (Card, OAuth)")
	}
	if len(bad) > 0 {
		return fmt.Errorf("fault %q: %s", f.Name, strings.Join(bad, "; "))
	}
	return nil
}

// Check reports what is wrong with a variant's declaration.
func (v Variant) Check() error {
	var bad []string
	if !nameRE.MatchString(v.Name) {
		bad = append(bad, "name is not lower-case words joined by hyphens")
	}
	if v.Doc == "" || strings.Contains(v.Doc, "\n") {
		bad = append(bad, "doc is not one line")
	}
	if v.Kind != InServer && v.Kind != Wire {
		bad = append(bad, fmt.Sprintf("kind %q", v.Kind))
	}
	for _, id := range slices.Concat(v.Unverified, v.Warns) {
		if !idRE.MatchString(id) {
			bad = append(bad, fmt.Sprintf("requirement id %q", id))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("variant %q: %s", v.Name, strings.Join(bad, "; "))
	}
	return nil
}

// Set is the declarations of one reference implementation, in the order
// they were declared. Its zero value is empty and ready; package-level
// variables fill it as the package initialises.
type Set[T declaration] struct {
	list  []T
	names map[string]int
}

// declaration is a Fault or a Variant.
type declaration interface {
	Check() error
	name() string
}

func (f Fault) name() string   { return f.Name }
func (v Variant) name() string { return v.Name }

// Add declares d and returns its name. A malformed declaration or a name
// declared twice is a programming error: it panics as the package
// initialises, so that no test or binary runs with it.
func (s *Set[T]) Add(d T) string {
	if err := d.Check(); err != nil {
		panic(err)
	}
	n := d.name()
	if s.names == nil {
		s.names = map[string]int{}
	}
	if _, dup := s.names[n]; dup {
		panic(fmt.Sprintf("fault: %q declared twice", n))
	}
	s.names[n] = len(s.list)
	s.list = append(s.list, d)
	return n
}

// All returns every declaration, sorted by name.
func (s *Set[T]) All() []T {
	out := slices.Clone(s.list)
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(a.name(), b.name()) })
	return out
}

// Lookup returns the declaration named n.
func (s *Set[T]) Lookup(n string) (T, bool) {
	i, ok := s.names[n]
	if !ok {
		var zero T
		return zero, false
	}
	return s.list[i], true
}

// WriteFaults writes fs, in the order given, as a table: one line each
// with its name, kind, the requirements it fails and warns about, and its
// doc line (`conform serve --list-faults`).
func WriteFaults(w io.Writer, fs []Fault) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tKIND\tBREAKS\tWHAT IT DOES")
	for _, f := range fs {
		breaks := compact(f.Fails)
		if len(f.Warns) > 0 {
			breaks = strings.TrimPrefix(breaks+"; warns "+compact(f.Warns), "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Kind, breaks, f.Doc)
	}
	return tw.Flush()
}

// compact joins ids, writing an id that shares the area of the one before
// by its number alone: CORE-IDEM-001, -002, EXT-WS-008.
func compact(ids []string) string {
	var b strings.Builder
	prev := ""
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		area, num, ok := cutLast(id)
		if ok && area == prev {
			b.WriteString("-" + num)
		} else {
			b.WriteString(id)
		}
		prev = area
	}
	return b.String()
}

func cutLast(id string) (string, string, bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return id, "", false
	}
	return id[:i], id[i+1:], true
}

// WriteVariants writes vs, in the order given, as a table: one line each
// with its name, kind and doc line, and what it leaves unverified or
// earns a warning for (`conform serve --list-variants`).
func WriteVariants(w io.Writer, vs []Variant) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tKIND\tWHAT IT DOES")
	for _, v := range vs {
		doc := v.Doc
		if len(v.Unverified) > 0 {
			doc += " (leaves " + compact(v.Unverified) + " unverified)"
		}
		if len(v.Warns) > 0 {
			doc += " (warns " + compact(v.Warns) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, v.Kind, doc)
	}
	return tw.Flush()
}
