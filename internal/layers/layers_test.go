package layers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/harn-conform/conform"

// mayImport is, for each top-level folder of the module, the folders of
// the module its non-test code may import: only the layers below it
// (docs/architecture.md, "Layers"). A new top-level folder needs a row.
var mayImport = map[string][]string{
	// The data packages import nothing; their generators (fixtures/*/gen)
	// use internal/.
	"fixtures":   {"fixtures", "internal"},
	"internal":   {"internal", "fixtures"},
	"reports":    {"reports", "internal", "fixtures"},
	"refharness": {"refharness", "hook", "internal", "fixtures"},
	"hook":       {"hook", "internal"},
	"suites":     {"suites", "internal", "fixtures"},
	"cmd":        {"cmd", "suites", "refharness", "hook", "reports", "internal", "fixtures"},
}

// above are the folders nothing under internal/ may reach, however
// indirectly.
var above = []string{"cmd", "suites", "refharness", "hook", "reports"}

// testFixtureImports are the test files under internal/ that import a
// higher layer, as a fixture, each with its reason. Non-test code has no
// such import; a new one needs a reason here, and one that is no longer
// made must go.
var testFixtureImports = map[string]string{
	"internal/openapi -> refharness": "the reference Harness's own traffic through the oracle: clean, and every wire fault caught",
	"internal/suite -> reports":      "the verdict machinery rolled up by reports.Build, as the conform binary does",
}

// pkg is one package of the module as go list sees it. Paths are
// module-relative: "internal/suite".
type pkg struct {
	imports []string // what its non-test code imports from the module
	tests   []string // what its test files import from the module
}

// graph is the module's packages by module-relative path.
type graph map[string]pkg

// rel is p relative to the module, or "" for a package outside it.
func rel(p string) string {
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return ""
}

func folder(p string) string {
	f, _, _ := strings.Cut(p, "/")
	return f
}

// listing is the module's graph as `go list -deps ./...` gives it, listed
// once per test binary.
var listing = sync.OnceValues(func() (graph, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is needed to list the packages: %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(gobin, "list", "-deps",
		"-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		path := rel(fields[0])
		if len(fields) != 3 || path == "" {
			continue
		}
		var p pkg
		for _, i := range strings.Fields(fields[1]) {
			if r := rel(i); r != "" {
				p.imports = append(p.imports, r)
			}
		}
		for _, i := range strings.Fields(fields[2]) {
			if r := rel(i); r != "" && r != path {
				p.tests = append(p.tests, r)
			}
		}
		g[path] = p
	}
	if _, ok := g["internal/suite"]; !ok || len(g) < 50 {
		return nil, fmt.Errorf("go list named %d packages of the module, internal/suite not among them: the listing is wrong", len(g))
	}
	return g, nil
})

func load(t *testing.T) graph {
	t.Helper()
	g, err := listing()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// upward lists every import of g's non-test code that goes up the layers.
func upward(g graph) []string {
	var bad []string
	for _, path := range g.paths() {
		from := folder(path)
		allowed, ok := mayImport[from]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: the top-level folder %s/ has no row in mayImport (docs/architecture.md: which layers may it import?)", path, from))
			continue
		}
		for _, i := range g[path].imports {
			if !slices.Contains(allowed, folder(i)) {
				bad = append(bad, fmt.Sprintf("%s imports %s: %s/ may import only %s (docs/architecture.md)", path, i, from, strings.Join(allowed, ", ")))
			}
		}
	}
	return bad
}

// reachesAbove lists every package above internal/ that an internal
// package depends on, directly or not, with the chain that reaches it: what
// `go list -deps ./internal/...` would name from cmd, suites, refharness or
// reports.
func reachesAbove(g graph) []string {
	var bad []string
	for _, root := range g.paths() {
		if folder(root) != "internal" {
			continue
		}
		// Breadth first, keeping how each package was reached.
		via := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if slices.Contains(above, folder(p)) {
				chain := []string{p}
				for q := via[p]; q != ""; q = via[q] {
					chain = append([]string{q}, chain...)
				}
				bad = append(bad, fmt.Sprintf("%s depends on %s: %s", root, p, strings.Join(chain, " → ")))
				continue
			}
			for _, i := range g[p].imports {
				if _, seen := via[i]; !seen {
					via[i] = p
					queue = append(queue, i)
				}
			}
		}
	}
	return bad
}

// unlistedFixtures lists the tests under internal/ that import a higher
// layer without a testFixtureImports entry, and the entries no test uses.
func unlistedFixtures(g graph, listed map[string]string) []string {
	var bad []string
	used := map[string]bool{}
	for _, path := range g.paths() {
		if folder(path) != "internal" {
			continue
		}
		for _, i := range g[path].tests {
			if !slices.Contains(above, folder(i)) {
				continue
			}
			edge := path + " -> " + i
			if _, ok := listed[edge]; !ok {
				bad = append(bad, fmt.Sprintf("a test of %s imports %s: a test under internal/ uses a higher layer only as a fixture listed in testFixtureImports, with its reason", path, i))
			}
			used[edge] = true
		}
	}
	for edge := range listed {
		if !used[edge] {
			bad = append(bad, fmt.Sprintf("testFixtureImports lists %s, which no test makes any more: delete it", edge))
		}
	}
	sort.Strings(bad)
	return bad
}

func (g graph) paths() []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Every import of every package of the module goes down the layers.
func TestImportsGoDown(t *testing.T) {
	for _, b := range upward(load(t)) {
		t.Error(b)
	}
}

// `go list -deps ./internal/...` names nothing from cmd, suites, refharness
// or reports.
func TestInternalReachesNothingAbove(t *testing.T) {
	g := load(t)
	n := 0
	for _, p := range g.paths() {
		if folder(p) == "internal" {
			n++
		}
	}
	if n < 20 {
		t.Fatalf("%d internal packages listed: the listing is wrong", n)
	}
	for _, b := range reachesAbove(g) {
		t.Error(b)
	}
}

// Test files under internal/ import a higher layer only as a listed
// fixture.
func TestInternalTestFixtures(t *testing.T) {
	for _, b := range unlistedFixtures(load(t), testFixtureImports) {
		t.Error(b)
	}
}

// The checks catch what they are for, on a made-up module: an internal
// package that reaches reports through another, a suite that imports the
// reference Harness, a folder without a row, an unlisted test fixture and
// a stale entry.
func TestChecksCatchBackEdges(t *testing.T) {
	g := graph{
		"internal/a":       {imports: []string{"internal/b", "fixtures/schemas"}},
		"internal/b":       {imports: []string{"reports"}, tests: []string{"refharness"}},
		"internal/c":       {imports: []string{"fixtures/schemas"}},
		"fixtures/schemas": {},
		"reports":          {imports: []string{"internal/c"}},
		"refharness":       {imports: []string{"internal/c"}},
		"suites/core":      {imports: []string{"internal/c", "refharness"}, tests: []string{"refharness/builtin"}},
		"tools/x":          {},
	}
	up := strings.Join(upward(g), "\n")
	for _, want := range []string{"internal/b imports reports", "suites/core imports refharness", "tools/ has no row"} {
		if !strings.Contains(up, want) {
			t.Errorf("upward missed %q:\n%s", want, up)
		}
	}
	if strings.Contains(up, "internal/a imports") || strings.Contains(up, "reports imports") {
		t.Errorf("upward flagged an import that goes down:\n%s", up)
	}
	reach := reachesAbove(g)
	if !slices.Contains(reach, "internal/a depends on reports: internal/a → internal/b → reports") ||
		!slices.Contains(reach, "internal/b depends on reports: internal/b → reports") || len(reach) != 2 {
		t.Errorf("reachesAbove = %q", reach)
	}
	fx := unlistedFixtures(g, map[string]string{"internal/c -> reports": "stale"})
	if len(fx) != 2 || !strings.Contains(fx[0], "a test of internal/b imports refharness") || !strings.Contains(fx[1], "internal/c -> reports, which no test makes") {
		t.Errorf("unlistedFixtures = %q", fx)
	}
	if got := unlistedFixtures(g, map[string]string{"internal/b -> refharness": "a fixture"}); len(got) != 0 {
		t.Errorf("a listed fixture was flagged: %q", got)
	}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
