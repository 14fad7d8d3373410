// Package genfiles is what the generators of committed files share: the
// fixture generators (fixtures/*/gen) and the JSON conversions of vendored
// YAML (fixtures/openapi/gen, internal/requirements/gen). A generator builds
// every file in memory and hands its build function to Main; its test
// requires the committed tree to equal a fresh generation, and two
// generations to be equal (Check). Signed fixtures sign with keys anyone
// can derive (Key).
package genfiles

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Main is a generator's main: it writes the files build makes under the
// directory the -dir flag names (dir when the flag is not given). An error
// is printed, prefixed "gen:", and exits 1.
func Main(dir string, build func() (map[string][]byte, error)) {
	out := flag.String("dir", dir, "directory to write into")
	flag.Parse()
	files, err := build()
	if err == nil {
		err = Write(*out, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Key derives a test-only ed25519 key from public words: the fixture set
// it signs ("card", "receipt", "replay") and a label naming the key.
// Anyone can recompute it: it exists so that signed fixtures are
// reproducible, and must never sign anything real.
func Key(fixture, label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("conform " + fixture + " fixture key (public, test only): " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Indent is compact JSON indented by two spaces, with a final newline: how
// generators write the JSON files people read. It panics on text that is
// not JSON: generators indent only JSON they have just produced.
func Indent(compact []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		panic("genfiles: Indent: " + err.Error())
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Check is a generator's test: it builds the files twice, and lists what
// differs between the two builds (Differ) and between a build and the
// committed tree under root (Stale, with regen the command that
// regenerates it and dirs the folders that hold only generated files).
func Check(build func() (map[string][]byte, error), root, regen string, dirs ...string) []string {
	a, err := build()
	if err != nil {
		return []string{"build: " + err.Error()}
	}
	b, err := build()
	if err != nil {
		return []string{"second build: " + err.Error()}
	}
	return append(Differ(a, b), Stale(root, a, regen, dirs...)...)
}

// Write writes files (slash-separated paths relative to dir) under dir,
// creating directories, in name order.
func Write(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Stale compares the tree under root with files: a file missing or
// different, and a file under one of dirs (relative to root) that files
// does not hold, are each one problem, naming the command that fixes it.
func Stale(root string, files map[string][]byte, regen string, dirs ...string) []string {
	var out []string
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		switch {
		case err != nil:
			out = append(out, name+": "+err.Error()+" (run: "+regen+")")
		case !bytes.Equal(got, want):
			out = append(out, name+" differs from what gen writes (run: "+regen+")")
		}
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); files[rel] == nil {
				out = append(out, rel+" is not produced by gen: remove it or add it to gen")
			}
			return nil
		})
		if err != nil {
			out = append(out, err.Error())
		}
	}
	slices.Sort(out)
	return out
}

// Differ lists what differs between two generations (map-order leaks).
func Differ(a, b map[string][]byte) []string {
	var out []string
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			out = append(out, name+" differs between two builds")
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, name+" is only in the second build")
		}
	}
	slices.Sort(out)
	return out
}
