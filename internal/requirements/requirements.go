// Package requirements is the registry of normative statements the suites
// verify. Requirements are data (one YAML file per level), with stable ids
// that are never renumbered or reused; every Ginkgo spec names the ids it
// verifies, and the registry is frozen: naming an unknown id is an error at
// start-up. The YAML files are the source; the build reads their JSON form,
// registry.json: after editing a YAML file, run
// `go generate ./internal/requirements` (TestRegistryJSONIsCurrent fails
// until then).
package requirements

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/harn-conform/conform/internal/suggest"
)

// Level is a conformance level of the narrative spec, or a profile: a
// related protocol checked on its own (docs/profiles.md). A profile's
// requirements are registry entries like any level's, whose level is the
// profile's name; a run checks either Harn levels or one profile.
type Level string

const (
	Core     Level = "core"
	Extended Level = "extended"
	Receipts Level = "receipts"
	Replay   Level = "replay"

	// OpenHarness is the OpenHarness v1 Engine profile (openharness.yaml).
	OpenHarness Level = "openharness"
	// ACPHarbor is the ACP Agent Harbor profile.
	ACPHarbor Level = "acp-harbor"
)

// Levels lists every Harn level in the order reports show them.
func Levels() []Level { return []Level{Core, Extended, Receipts, Replay} }

// Profiles lists every profile, in the order `conform list` shows them.
func Profiles() []Level { return []Level{OpenHarness, ACPHarbor} }

// IsProfile reports whether l is a profile rather than a Harn level.
func (l Level) IsProfile() bool {
	for _, p := range Profiles() {
		if l == p {
			return true
		}
	}
	return false
}

// ParseProfile accepts a profile name, case-insensitively.
func ParseProfile(s string) (Level, error) {
	l := Level(strings.ToLower(strings.TrimSpace(s)))
	if l.IsProfile() {
		return l, nil
	}
	return "", fmt.Errorf("unknown profile %q%s (want one of %s)", s, suggest.Hint(s, strs(Profiles()), "%q"), names(Profiles()))
}

// ParseAny accepts a Harn level or a profile name.
func ParseAny(s string) (Level, error) {
	if l, err := ParseLevel(s); err == nil {
		return l, nil
	}
	if l, err := ParseProfile(s); err == nil {
		return l, nil
	}
	return "", fmt.Errorf("unknown level or profile %q%s (want one of %s, or a profile: %s)", s, suggest.Hint(s, append(strs(Levels()), strs(Profiles())...), "%q"), names(Levels()), names(Profiles()))
}

func names(ls []Level) string { return strings.Join(strs(ls), ", ") }

func strs(ls []Level) []string {
	var out []string
	for _, l := range ls {
		out = append(out, string(l))
	}
	return out
}

// ValidID reports whether id has the shape of a requirement id (a level's
// or profile's prefix, an area, a number): baselines and report readers
// use it to refuse what cannot name a requirement.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ParseLevel accepts a level name, case-insensitively.
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToLower(strings.TrimSpace(s)))
	for _, v := range Levels() {
		if l == v {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown level %q%s (want one of core, extended, receipts, replay)", s, suggest.Hint(s, strs(Levels()), "%q"))
}

// Keyword is the RFC 2119 keyword of a requirement.
type Keyword string

const (
	Must      Keyword = "MUST"
	MustNot   Keyword = "MUST NOT"
	Should    Keyword = "SHOULD"
	ShouldNot Keyword = "SHOULD NOT"
	May       Keyword = "MAY"
)

// Mandatory reports whether breaking the requirement makes a target
// nonconformant (MUST, MUST NOT) rather than earning a warning.
func (k Keyword) Mandatory() bool { return k == Must || k == MustNot }

// Source documents that requirements come from, with the base of their links.
var sources = map[string]string{
	"narrative": "https://harnlang.com/spec/agents-protocol/v1",
	"replay":    "https://github.com/burin-labs/harn/tree/main/agents-protocol-replay",
	// The OpenHarness document names no canonical URL (docs/openharness.md):
	// its links point at its own file name, PROTOCOL.md, under a
	// placeholder host, with the document's section names as anchors.
	"openharness": "https://openharness.invalid/docs/PROTOCOL.md",
	"acp-harbor":  "https://agent-harbor.invalid/specs/ACP.extensions.md",
	// Spec 003 (event tapes and the fidelity oracle) names no canonical
	// URL either (docs/interpretations.md#tape-registry): a placeholder
	// host with the section's name as anchor.
	"tape": "https://harnlang.invalid/docs/event-tape-format.md",
	// The base protocol the ACP Harbor profile also checks (its own
	// requirements cite these; docs/acp-harbor.md): the Agent Client
	// Protocol v1 documentation, whose anchors are a page and a section
	// ("initialization-version-negotiation"), and JSON-RPC 2.0.
	"acp":     "https://agentclientprotocol.com/protocol/",
	"jsonrpc": "https://www.jsonrpc.org/specification",
}

// Requirement is one normative statement.
type Requirement struct {
	ID         string   `yaml:"id" json:"id"`
	Level      Level    `yaml:"level" json:"level"`
	Keyword    Keyword  `yaml:"keyword" json:"keyword"`
	Source     string   `yaml:"source" json:"source"`
	Section    string   `yaml:"section" json:"section"`
	Anchor     string   `yaml:"anchor" json:"anchor"`
	Summary    string   `yaml:"summary" json:"summary"`
	Transports []string `yaml:"transports" json:"transports"`
	// Observable says whether a black-box client can see the requirement
	// kept or broken; Reason says why not when it cannot.
	Observable bool   `yaml:"observable" json:"observable"`
	Reason     string `yaml:"reason,omitempty" json:"reason,omitempty"`
	// Exclusion, when set, is why an observable requirement has no spec yet.
	// An excluded mandatory requirement keeps its level from "conformant".
	Exclusion string `yaml:"exclusion,omitempty" json:"exclusion,omitempty"`
	// Kind is KindConcurrency for a requirement only a race can break: its
	// checks fire requests at once, in rounds (docs/concurrency.md), and
	// its specs carry the label LabelConcurrency. Empty for the others.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
}

// KindConcurrency is the Kind of a requirement only a race can break.
const KindConcurrency = "concurrency"

// LabelConcurrency is the Ginkgo label of every spec that races clients
// against each other: `--label-filter '!concurrency'` leaves them out, and
// `--label-filter concurrency` runs only them.
const LabelConcurrency = "concurrency"

// Link is the requirement's spec section URL.
func (r Requirement) Link() string {
	switch {
	case r.Source == "acp":
		// The ACP documentation is one page per topic: the anchor names
		// the page ("initialization", "prompt-turn").
		return sources[r.Source] + r.Anchor
	case r.Source == "jsonrpc":
		// The JSON-RPC 2.0 page's anchors are snake_case (error_object).
		return sources[r.Source] + "#" + strings.ReplaceAll(r.Anchor, "-", "_")
	}
	return sources[r.Source] + "#" + r.Anchor
}

var (
	idPattern     = regexp.MustCompile(`^(CORE|EXT|RCPT|RPLY|OH|ACP)-[A-Z]+-[0-9]{3}$`)
	anchorPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	prefixOf      = map[Level]string{Core: "CORE-", Extended: "EXT-", Receipts: "RCPT-", Replay: "RPLY-", OpenHarness: "OH-", ACPHarbor: "ACP-"}
	// http is a profile's HTTP binding (OpenHarness), stdio a profile's
	// agent process spoken to over its standard streams (ACP).
	transports = map[string]bool{"rest": true, "sse": true, "websocket": true, "offline": true, "http": true, "stdio": true}
	keywords   = map[Keyword]bool{Must: true, MustNot: true, Should: true, ShouldNot: true, May: true}
)

// Validate checks one entry on its own.
func (r Requirement) Validate() error {
	var errs []string
	if !idPattern.MatchString(r.ID) {
		errs = append(errs, fmt.Sprintf("id %q does not match %s", r.ID, idPattern))
	}
	if p, ok := prefixOf[r.Level]; !ok {
		errs = append(errs, fmt.Sprintf("level %q is not one of %s, %s", r.Level, names(Levels()), names(Profiles())))
	} else if !strings.HasPrefix(r.ID, p) {
		errs = append(errs, fmt.Sprintf("id of a %s requirement must start with %s", r.Level, p))
	}
	if !keywords[r.Keyword] {
		errs = append(errs, fmt.Sprintf("keyword %q is not one of MUST, MUST NOT, SHOULD, SHOULD NOT, MAY", r.Keyword))
	}
	if _, ok := sources[r.Source]; !ok {
		errs = append(errs, fmt.Sprintf("source %q is not one of narrative, replay, tape, openharness, acp-harbor, acp, jsonrpc", r.Source))
	}
	if strings.TrimSpace(r.Section) == "" {
		errs = append(errs, "section is empty")
	}
	if !anchorPattern.MatchString(r.Anchor) {
		errs = append(errs, fmt.Sprintf("anchor %q is not lower-kebab-case", r.Anchor))
	}
	if len(strings.TrimSpace(r.Summary)) < 10 {
		errs = append(errs, "summary is missing or too short")
	}
	if len(r.Transports) == 0 {
		errs = append(errs, "transports is empty")
	}
	for _, t := range r.Transports {
		if !transports[t] {
			errs = append(errs, fmt.Sprintf("transport %q is not one of rest, sse, websocket, offline, http, stdio", t))
		}
	}
	if !r.Observable && strings.TrimSpace(r.Reason) == "" {
		errs = append(errs, "not observable but no reason given")
	}
	if r.Observable && r.Reason != "" {
		errs = append(errs, "observable requirements take no reason (use exclusion for unverified ones)")
	}
	if !r.Observable && r.Exclusion != "" {
		errs = append(errs, "exclusion only applies to observable requirements")
	}
	if r.Kind != "" && r.Kind != KindConcurrency {
		errs = append(errs, fmt.Sprintf("kind %q is not empty or %s", r.Kind, KindConcurrency))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", r.ID, strings.Join(errs, "; "))
	}
	return nil
}

// Registry is an immutable, validated set of requirements.
type Registry struct {
	all  []Requirement
	byID map[string]int
}

// Parse builds a registry from YAML documents (file name → bytes) and
// validates every entry and the set (ids unique).
func Parse(files map[string][]byte) (*Registry, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var entries []named
	for _, name := range names {
		var es []Requirement
		dec := yaml.NewDecoder(strings.NewReader(string(files[name])))
		dec.KnownFields(true)
		if err := dec.Decode(&es); err != nil {
			return nil, fmt.Errorf("requirements: %s: %w", name, err)
		}
		for _, r := range es {
			entries = append(entries, named{name, r})
		}
	}
	return build(entries)
}

// ParseJSON builds a registry from the JSON form Generate writes, with the
// same validation as Parse.
func ParseJSON(b []byte) (*Registry, error) {
	var es []Requirement
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&es); err != nil {
		return nil, fmt.Errorf("requirements: %s: %w", jsonFile, err)
	}
	entries := make([]named, len(es))
	for i, r := range es {
		entries[i] = named{jsonFile, r}
	}
	return build(entries)
}

// Generate is the JSON form of a registry: every requirement, sorted by
// id. The build embeds it (registry.json, written by `go generate
// ./internal/requirements` from the YAML files, which stay the source):
// decoding it costs a run a tenth of what parsing the YAML does.
func (g *Registry) Generate() ([]byte, error) {
	b, err := json.MarshalIndent(g.all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// jsonFile is the embedded JSON form of the registry.
const jsonFile = "registry.json"

// named is an entry and the file it came from, for error messages.
type named struct {
	file string
	r    Requirement
}

func build(entries []named) (*Registry, error) {
	reg := &Registry{byID: map[string]int{}}
	var errs []string
	for _, e := range entries {
		r := e.r
		r.Summary = strings.TrimSpace(r.Summary)
		if err := r.Validate(); err != nil {
			errs = append(errs, e.file+": "+err.Error())
			continue
		}
		if _, dup := reg.byID[r.ID]; dup {
			errs = append(errs, fmt.Sprintf("%s: %s: duplicate id", e.file, r.ID))
			continue
		}
		reg.byID[r.ID] = len(reg.all)
		reg.all = append(reg.all, r)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("requirements: %d invalid entries:\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
	sort.Slice(reg.all, func(i, j int) bool { return reg.all[i].ID < reg.all[j].ID })
	for i, r := range reg.all {
		reg.byID[r.ID] = i
	}
	return reg, nil
}

// All returns every requirement sorted by id (a copy).
func (g *Registry) All() []Requirement { return append([]Requirement(nil), g.all...) }

// Lookup finds a requirement by id.
func (g *Registry) Lookup(id string) (Requirement, bool) {
	i, ok := g.byID[id]
	if !ok {
		return Requirement{}, false
	}
	return g.all[i], true
}

// AreaOf is the area of a requirement id: the id without its number,
// "CORE-DUR" for CORE-DUR-001 (a level's prefix and the area's name).
func AreaOf(id string) string {
	i := strings.LastIndex(id, "-")
	if i < 0 {
		return ""
	}
	return id[:i]
}

// Areas lists the areas of the registry's requirements of level l (of
// every level when l is ""), sorted.
func (g *Registry) Areas(l Level) []string {
	var out []string
	for _, r := range g.all {
		if a := AreaOf(r.ID); (l == "" || r.Level == l) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// ByLevel returns the requirements of one level, sorted by id.
func (g *Registry) ByLevel(l Level) []Requirement {
	var out []Requirement
	for _, r := range g.all {
		if r.Level == l {
			out = append(out, r)
		}
	}
	return out
}

// files are the YAML sources of the registry.
//
//go:embed *.yaml
var files embed.FS

// registryJSON is their JSON form (Generate), which the build reads.
//
//go:generate go run ./gen
//go:embed registry.json
var registryJSON []byte

// YAMLFiles returns the YAML sources of the embedded registry, by file name.
func YAMLFiles() (map[string][]byte, error) {
	m := map[string][]byte{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		m[p] = b
		return err
	})
	return m, err
}

var (
	defaultOnce sync.Once
	defaultReg  *Registry
	defaultErr  error
)

// Default is the registry embedded in this build. Its error is a defect of
// the build (the tests of this package keep it nil, and registry.json the
// YAML sources' conversion).
func Default() (*Registry, error) {
	defaultOnce.Do(func() { defaultReg, defaultErr = ParseJSON(registryJSON) })
	return defaultReg, defaultErr
}

// MustDefault is Default for callers that have already checked the registry
// at start-up (the runner does, and exits 2 with the message if it is bad).
func MustDefault() *Registry {
	r, err := Default()
	if err != nil {
		panic(err)
	}
	return r
}
