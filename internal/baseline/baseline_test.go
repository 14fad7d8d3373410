package baseline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		ids       string // comma-joined; "" with err
		err       string // substring of the error; "" = valid
	}{
		{"full", "format: conform-baseline/v1\nrequirements:\n  - id: CORE-AUTH-002\n    reason: gateway answers 400\n  - CORE-DUR-001\n", "CORE-AUTH-002,CORE-DUR-001", ""},
		{"empty list", "format: conform-baseline/v1\nrequirements: []\n", "", ""},
		{"no list", "format: conform-baseline/v1\n", "", ""},
		{"json", `{"format":"conform-baseline/v1","requirements":[{"id":"RCPT-SIG-001","reason":"r"},"CORE-VER-001"]}`, "RCPT-SIG-001,CORE-VER-001", ""},
		{"spaces trimmed", "format: conform-baseline/v1\nrequirements:\n  - id: ' CORE-AUTH-002 '\n", "CORE-AUTH-002", ""},
		{"empty file", "", "", "empty file"},
		{"wrong format", "format: conform-baseline/v2\nrequirements: []\n", "", `format "conform-baseline/v2"`},
		{"no format", "requirements: [CORE-AUTH-002]\n", "", `format ""`},
		{"unknown top field", "format: conform-baseline/v1\nexpected: [CORE-AUTH-002]\n", "", "expected"},
		{"unknown entry field", "format: conform-baseline/v1\nrequirements:\n  - id: CORE-AUTH-002\n    why: x\n", "", `unknown field "why"`},
		{"bad id", "format: conform-baseline/v1\nrequirements: [core-auth-2]\n", "", `"core-auth-2" is not a requirement id`},
		{"number entry", "format: conform-baseline/v1\nrequirements: [12]\n", "", "requirement id or {id, reason}"},
		{"list entry", "format: conform-baseline/v1\nrequirements: [[CORE-AUTH-002]]\n", "", "requirement id or {id, reason}"},
		{"duplicate", "format: conform-baseline/v1\nrequirements: [CORE-AUTH-002, {id: CORE-AUTH-002}]\n", "", "CORE-AUTH-002 is listed twice"},
		{"long reason", "format: conform-baseline/v1\nrequirements:\n  - id: CORE-AUTH-002\n    reason: " + strings.Repeat("x", MaxReason+1) + "\n", "", "reason longer than"},
		{"two documents", "format: conform-baseline/v1\n---\nformat: conform-baseline/v1\n", "", "more than one YAML document"},
		{"not yaml", "format: [unclosed\n", "", "not a baseline"},
		{"alias bomb", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n", "", "not a baseline"},
		{"too large", "format: conform-baseline/v1\n#" + strings.Repeat("x", MaxBytes), "", "larger than"},
	} {
		f, err := Parse([]byte(tc.doc))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.err)
		case tc.err == "" && strings.Join(f.IDs(), ",") != tc.ids:
			t.Errorf("%s: ids = %v, want %s", tc.name, f.IDs(), tc.ids)
		}
	}
}

func TestLoadAndCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "known.yaml")
	os.WriteFile(path, []byte("format: conform-baseline/v1\nrequirements: [CORE-AUTH-002, CORE-NOPE-999]\n"), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := f.Reason("CORE-AUTH-002"); !ok || r != "" {
		t.Errorf("Reason = %q, %v", r, ok)
	}
	err = f.Check(requirements.MustDefault())
	var ue *UnknownError
	if !errors.As(err, &ue) || len(ue.IDs) != 1 || ue.IDs[0] != "CORE-NOPE-999" || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "CORE-NOPE-999") {
		t.Errorf("Check = %v, want an UnknownError naming CORE-NOPE-999 and the file", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, bytes.Repeat([]byte("#"), MaxBytes+10), 0o644)
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), "big.yaml") {
		t.Errorf("Load of a huge file: %v", err)
	}
}

// Whatever a reason holds, Write produces a file Parse reads back the same.
func TestWriteRoundTrip(t *testing.T) {
	f := &File{Requirements: []Entry{
		{ID: "CORE-AUTH-002", Reason: "fail: GET /v1/tasks → 200: \"quoted\" #not-a-comment: {x: [y]} & *alias !tag"},
		{ID: "CORE-DUR-001"},
		{ID: "RCPT-SIG-001", Reason: "- looks like a list\n---\nformat: evil"},
	}}
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# conform known-failures baseline") {
		t.Errorf("no header comment:\n%s", b.String())
	}
	back, err := Parse(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(back.Requirements) != 3 {
		t.Fatalf("read back %d entries", len(back.Requirements))
	}
	for i, e := range back.Requirements {
		if e != f.Requirements[i] && !(strings.TrimSpace(f.Requirements[i].Reason) == e.Reason && e.ID == f.Requirements[i].ID) {
			t.Errorf("entry %d = %+v, want %+v", i, e, f.Requirements[i])
		}
	}
	var empty bytes.Buffer
	if err := Write(&empty, &File{}); err != nil {
		t.Fatal(err)
	}
	if f, err := Parse(empty.Bytes()); err != nil || len(f.Requirements) != 0 {
		t.Errorf("empty baseline: %v %v", f, err)
	}
	if err := Write(&bytes.Buffer{}, &File{Requirements: []Entry{{ID: "nope"}}}); err == nil {
		t.Error("Write accepted an invalid id")
	}
}
