// Package genfiles writes and checks generated fixture trees: the fixture
// generators (fixtures/*/gen) build every file in memory, write them with
// Write, and their tests require the committed tree to equal a fresh
// generation (Stale) and two generations to be equal (Differ).
package genfiles

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

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
