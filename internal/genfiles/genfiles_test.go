package genfiles

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harn-conform/conform/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Main(m) }

// TestCheck: a build that matches the tree passes; a stale, missing or
// stray file, a build that differs from the next one and a failing build
// are each named.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	if err := Write(root, map[string][]byte{"out/a.json": []byte("a\n"), "out/b.json": []byte("b\n"), "note.txt": []byte("not generated")}); err != nil {
		t.Fatal(err)
	}
	fixed := func(files map[string][]byte) func() (map[string][]byte, error) {
		return func() (map[string][]byte, error) { return files, nil }
	}
	_, errMissing := os.ReadFile(filepath.Join(root, "out", "c.json"))
	calls := 0
	for _, tc := range []struct {
		name  string
		build func() (map[string][]byte, error)
		want  []string
	}{
		{"up to date", fixed(map[string][]byte{"out/a.json": []byte("a\n"), "out/b.json": []byte("b\n")}), nil},
		{"stale and stray", fixed(map[string][]byte{"out/a.json": []byte("A\n")}), []string{
			"out/a.json differs from what gen writes (run: regen)",
			"out/b.json is not produced by gen: remove it or add it to gen",
		}},
		{"missing", fixed(map[string][]byte{"out/a.json": []byte("a\n"), "out/b.json": []byte("b\n"), "out/c.json": []byte("c\n")}), []string{
			"out/c.json: " + errMissing.Error() + " (run: regen)",
		}},
		{"not deterministic", func() (map[string][]byte, error) {
			calls++
			if calls%2 == 0 {
				return map[string][]byte{"out/a.json": []byte("a\n"), "out/b.json": []byte("B\n")}, nil
			}
			return map[string][]byte{"out/a.json": []byte("a\n"), "out/b.json": []byte("b\n")}, nil
		}, []string{"out/b.json differs between two builds"}},
		{"build fails", func() (map[string][]byte, error) { return nil, errors.New("boom") }, []string{"build: boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check(tc.build, root, "regen", "out"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Check = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

// TestWrite writes nested files byte for byte.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{"x/y/z.bin": {0, 1, 2}, "top.json": []byte("{}\n")}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != string(b) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, b)
		}
	}
}

// TestKey: keys are a pure function of their words, and different words
// give different keys (the committed fixtures pin the derivation itself).
func TestKey(t *testing.T) {
	a, b := Key("card", "current"), Key("card", "current")
	if !a.Equal(b) || len(a) != ed25519.PrivateKeySize {
		t.Fatal("Key is not a pure function of its words")
	}
	for _, other := range []ed25519.PrivateKey{Key("card", "previous"), Key("receipt", "current")} {
		if a.Equal(other) {
			t.Error("different words give the same key")
		}
	}
}

func TestIndent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":[1,2],"b":{}}`, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n"},
		{`"<&>"`, "\"<&>\"\n"},
	} {
		if got := string(Indent([]byte(tc.in))); got != tc.want {
			t.Errorf("Indent(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Indent of text that is not JSON did not panic")
		}
	}()
	Indent([]byte("{not json"))
}
