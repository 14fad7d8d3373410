package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPrintFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("format", FormatText, "`text|json`: what standard output carries")
	fs.String("keys", "", "key directory `FILE` to verify with")
	fs.String("target", "", "base URL (env CONFORM_TARGET, default none)")
	fs.Bool("chain", false, "check `links`")
	fs.Duration("wait", time.Second, "how long")
	var b bytes.Buffer
	PrintFlags(&b, fs, map[string]string{"target": "url"})
	want := `  --chain
        check links
  --format text|json
        what standard output carries (default text)
  --keys FILE
        key directory FILE to verify with
  --target url
        base URL (env CONFORM_TARGET, default none)
  --wait duration
        how long (default 1s)
`
	if b.String() != want {
		t.Errorf("PrintFlags =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestAsksHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"help"}, true},
		{[]string{"-h"}, true},
		{[]string{"a", "--help"}, true},
		{[]string{"a", "-help", "b"}, true},
		{[]string{"a", "help"}, false}, // a file named help, next to another
		{[]string{"--", "-h"}, false},  // after --, a file
		{[]string{"a", "b"}, false},
		{nil, false},
	} {
		if got := AsksHelp(tc.args); got != tc.want {
			t.Errorf("AsksHelp(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestWriteOut(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteOut(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteOut(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Errorf("file holds %q, want two", b)
	}
	if err := WriteOut(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("WriteOut(dir) = %v", err)
	}
	if err := WriteOut(filepath.Join(dir, "no", "such", "dir", "f"), []byte("x")); err == nil || !strings.HasPrefix(err.Error(), "--out: ") {
		t.Errorf("WriteOut into a missing directory = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestFileCommandArgs(t *testing.T) {
	c := FileCommand{Command: "conform thing", Subcommand: "check", Usage: func(w io.Writer) { io.WriteString(w, "usage: conform thing check\n") }}
	for _, tc := range []struct {
		args     []string
		rest     []string
		code     int
		done     bool
		out, err string
	}{
		{nil, nil, ExitError, true, "", "conform thing: missing subcommand (want check)\n\nusage: conform thing check\n"},
		{[]string{"-h"}, nil, ExitOK, true, "usage: conform thing check\n", ""},
		{[]string{"help"}, nil, ExitOK, true, "usage: conform thing check\n", ""},
		{[]string{"verify"}, nil, ExitError, true, "", "conform thing: unknown subcommand \"verify\" (want check)\n"},
		{[]string{"check", "a.json", "--help"}, nil, ExitOK, true, "usage: conform thing check\n", ""},
		{[]string{"check", "--", "-h"}, []string{"--", "-h"}, 0, false, "", ""},
		{[]string{"check", "a.json"}, []string{"a.json"}, 0, false, "", ""},
	} {
		var out, errb strings.Builder
		rest, code, done := c.Args(tc.args, &out, &errb)
		if !slices.Equal(rest, tc.rest) || code != tc.code || done != tc.done || out.String() != tc.out || errb.String() != tc.err {
			t.Errorf("Args(%q) = %q, %d, %v, stdout %q, stderr %q; want %q, %d, %v, %q, %q", tc.args, rest, code, done, out.String(), errb.String(), tc.rest, tc.code, tc.done, tc.out, tc.err)
		}
	}
	var errb strings.Builder
	if code := c.UsageError(&errb, errors.New("bad flag")); code != ExitError || errb.String() != "conform thing check: bad flag\n(conform thing check -h shows the usage)\n" {
		t.Errorf("UsageError = %d, %q", code, errb.String())
	}
}

func TestParseFiles(t *testing.T) {
	newFS := func() (*flag.FlagSet, *bool) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return fs, fs.Bool("v", false, "")
	}
	fs, v := newFS()
	files, err := ParseFiles(fs, []string{"a", "-v", "b", "--", "-c", "-v"}, "thing")
	if err != nil || !slices.Equal(files, []string{"a", "b", "-c", "-v"}) || !*v {
		t.Errorf("flags and files in any order, -- ends flags: %q, -v %v, %v", files, *v, err)
	}
	fs, _ = newFS()
	if _, err := ParseFiles(fs, []string{"-v"}, "thing"); err == nil || err.Error() != "no thing files given (use - for stdin)" {
		t.Errorf("no files: %v", err)
	}
	fs, _ = newFS()
	if _, err := ParseFiles(fs, []string{"a", "--nope"}, "thing"); err == nil {
		t.Error("an unknown flag after a file is accepted")
	}
	if err := OneStdin("-", "a", ""); err != nil {
		t.Errorf("one stdin: %v", err)
	}
	if err := OneStdin("-", "a", "-"); err == nil {
		t.Error("stdin twice is accepted")
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte("12345"), 0o644)
	if b, err := ReadFile(small, nil, 5); err != nil || string(b) != "12345" {
		t.Errorf("a file at the limit: %q, %v", b, err)
	}
	if _, err := ReadFile(small, nil, 4); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), small) {
		t.Errorf("a file over the limit: %v, want ErrTooLarge naming it", err)
	}
	if _, err := ReadFile(dir, nil, 10); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), nil, 10); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing file: %v", err)
	}
	if b, err := ReadFile("-", strings.NewReader("ab"), 2); err != nil || string(b) != "ab" {
		t.Errorf("stdin: %q, %v", b, err)
	}
	if _, err := ReadFile("-", strings.NewReader("abc"), 2); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "<stdin>") {
		t.Errorf("stdin over the limit: %v", err)
	}
	if _, err := ReadFile("-", nil, 2); err == nil {
		t.Error("stdin without one is read")
	}
	if DisplayName("-") != "<stdin>" || DisplayName("a.json") != "a.json" {
		t.Error("DisplayName")
	}
}
