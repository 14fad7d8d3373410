package tape

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
)

// Every code names a registered requirement of spec 003 (or none, for a
// limit of this reader), and every code that can be found has one.
func TestCodesNameRegisteredRequirements(t *testing.T) {
	reg := requirements.MustDefault()
	codes := []Code{CodeVersionUnsupported, CodeMissingHeader, CodeMalformed, CodeTornLine, CodeLineTooLong, CodeIO,
		CodeCASMissing, CodeCASCorrupt, CodeInlineHash, CodeInlineTooBig, CodeSeqOrder, CodeUnknownKind, CodeCASUnexpected}
	limits := map[Code]bool{CodeLineTooLong: true, CodeIO: true, CodeCASUnexpected: true}
	for _, c := range codes {
		id := c.Requirement()
		if id == "" {
			if !limits[c] {
				t.Errorf("%s names no requirement", c)
			}
			continue
		}
		r, ok := reg.Lookup(id)
		if !ok || r.Source != "tape" {
			t.Errorf("%s names %s, which is no registered spec 003 requirement", c, id)
		}
	}
}

// The golden tapes are the failing inputs of the producer's requirements
// (docs/tapes.md, "Requirements"): each defective tape is refused under
// the requirement it breaks, and every observable RPLY-TAPE MUST has one.
func TestGoldenTapesFailTheirRequirement(t *testing.T) {
	cases := []struct {
		name string
		code Code
		warn bool // a warning: the tape stays valid
	}{
		{"torn-line", CodeTornLine, false},
		{"seq-not-increasing", CodeSeqOrder, false},
		{"cas-missing", CodeCASMissing, false},
		{"inline-too-large", CodeInlineTooBig, false},
		{"inline-hash-mismatch", CodeInlineHash, false},
		{"cas-corrupt", CodeCASCorrupt, false},
		{"unknown-kind", CodeUnknownKind, true},
		{"newer-version", CodeVersionUnsupported, false},
	}
	failed := map[string]bool{}
	for _, tc := range cases {
		rep, err := Validate(filepath.Join(goldenDir, tc.name, "run.tape"))
		var got []Code
		valid := err == nil && rep.Valid()
		var te *Error
		if errors.As(err, &te) {
			got = append(got, te.Code)
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rep != nil {
			for _, f := range rep.Findings {
				got = append(got, f.Code)
			}
		}
		found := false
		for _, c := range got {
			found = found || c == tc.code
		}
		if !found || valid != tc.warn {
			t.Errorf("%s: codes %v, valid %v; want %s and valid %v", tc.name, got, valid, tc.code, tc.warn)
		}
		if !tc.warn {
			failed[tc.code.Requirement()] = true
		}
	}
	rep, err := Validate(filepath.Join(goldenDir, "all-kinds", "run.tape"))
	if err != nil || !rep.Valid() || len(rep.Findings) != 0 {
		t.Errorf("all-kinds: %v, %+v; want valid with no finding", err, rep)
	}
	for _, r := range requirements.MustDefault().ByLevel(requirements.Replay) {
		if strings.HasPrefix(r.ID, "RPLY-TAPE-") && r.Observable && r.Keyword.Mandatory() && !failed[r.ID] {
			t.Errorf("%s has no golden tape that fails it", r.ID)
		}
	}
}
