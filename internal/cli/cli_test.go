package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
