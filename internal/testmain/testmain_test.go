package testmain

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestReexecEnv(t *testing.T) {
	base := []string{"HOME=/h", "PATH=/bin"}
	for _, tc := range []struct {
		name     string
		race     bool
		goos     string
		env      []string
		want     string // GORACE of the copy
		wantExec bool
	}{
		{"race binary, no GORACE", true, "linux", base, "atexit_sleep_ms=0", true},
		{"user options are kept", true, "linux", append(slices.Clone(base), "GORACE=halt_on_error=1 log_path=/tmp/r"), "halt_on_error=1 log_path=/tmp/r atexit_sleep_ms=0", true},
		{"an empty GORACE", true, "darwin", append(slices.Clone(base), "GORACE="), "atexit_sleep_ms=0", true},
		{"the user's own sleep is left alone", true, "linux", append(slices.Clone(base), "GORACE=atexit_sleep_ms=500"), "", false},
		{"already the copy", true, "linux", append(slices.Clone(base), "GORACE=atexit_sleep_ms=0"), "", false},
		{"no race detector", false, "linux", base, "", false},
		{"no exec on windows", true, "windows", base, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, ok := reexecEnv(tc.race, tc.goos, tc.env)
			if ok != tc.wantExec {
				t.Fatalf("exec = %v, want %v", ok, tc.wantExec)
			}
			if !ok {
				return
			}
			var got []string
			for _, kv := range env {
				if v, found := strings.CutPrefix(kv, "GORACE="); found {
					got = append(got, v)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("GORACE of the copy = %q, want exactly %q", got, tc.want)
			}
			for _, kv := range base {
				if !slices.Contains(env, kv) {
					t.Errorf("the copy lost %s", kv)
				}
			}
		})
	}
}

// This binary is a copy made by Setup when it runs under -race: the
// mechanism works end to end, not only on paper.
func TestThisBinaryWasReexecuted(t *testing.T) {
	if !RaceEnabled {
		t.Skip("only race binaries are re-executed")
	}
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms=") {
		t.Errorf("GORACE = %q in a race test binary: Setup did not exec the copy", g)
	}
}

// Every test binary of the module goes through Setup first: a package
// whose tests forget it costs every `go test -race ./...` a second.
func TestEveryTestPackageUsesIt(t *testing.T) {
	root := moduleRoot(t)
	dirs := map[string][]string{} // directory -> its _test.go files
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found test files in %d directories under %s: the walk is wrong", len(dirs), root)
	}
	for dir, files := range dirs {
		rel, _ := filepath.Rel(root, dir)
		if problem := checkTestMain(files); problem != "" {
			t.Errorf("%s: %s (func TestMain(m *testing.M) { testmain.Main(m) }, or testmain.Setup() as the first statement of its own)", rel, problem)
		}
	}
}

// checkTestMain says what is wrong with the TestMain of a package's test
// files ("" when nothing is).
func checkTestMain(files []string) string {
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return err.Error()
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
				continue
			}
			if len(fn.Body.List) == 0 {
				return "its TestMain is empty"
			}
			first, ok := fn.Body.List[0].(*ast.ExprStmt)
			if !ok {
				return "its TestMain does not start with testmain.Main or testmain.Setup"
			}
			call, ok := first.X.(*ast.CallExpr)
			if !ok {
				return "its TestMain does not start with testmain.Main or testmain.Setup"
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr: // testmain.Main, testmain.Setup
				if x, ok := fun.X.(*ast.Ident); ok && x.Name == "testmain" && (fun.Sel.Name == "Main" || fun.Sel.Name == "Setup") {
					return ""
				}
			case *ast.Ident: // inside this package
				if fun.Name == "Main" || fun.Name == "Setup" {
					return ""
				}
			}
			return "its TestMain does not start with testmain.Main or testmain.Setup"
		}
	}
	return "it has no TestMain"
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
