package openharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The message corpus (fixtures/schemas/testdata/openharness.v1):
// valid/{request,response}/* validate with no finding at all;
// invalid/KIND/REQ-…json are invalid with an error finding of REQ (the
// file name's prefix); warn/KIND/REQ-…json are valid with a warning of REQ
// and no error.
const corpus = "../../fixtures/schemas/testdata/openharness.v1"

func corpusFiles(t *testing.T, dir string) map[string]Kind {
	t.Helper()
	out := map[string]Kind{}
	for _, k := range []Kind{Request, Response} {
		ents, err := os.ReadDir(filepath.Join(corpus, dir, string(k)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out[filepath.Join(corpus, dir, string(k), e.Name())] = k
		}
	}
	if len(out) < 4 {
		t.Fatalf("%s: only %d files", dir, len(out))
	}
	return out
}

func validateFile(t *testing.T, path string, k Kind) Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Decode(b)
	if err != nil {
		return Result{Kind: k, Findings: []Finding{{Req: "DECODE", Severity: SeverityError, Message: err.Error()}}}
	}
	if got, err := KindOf(doc); err == nil && got != k {
		t.Errorf("%s: KindOf = %s, want %s", path, got, k)
	}
	return Validate(doc, k)
}

// reqOf is the requirement id a corpus file name starts with.
func reqOf(name string) string {
	parts := strings.SplitN(filepath.Base(name), "-", 4)
	return strings.Join(parts[:3], "-")
}

func TestCorpusValid(t *testing.T) {
	for path, k := range corpusFiles(t, "valid") {
		r := validateFile(t, path, k)
		if !r.Valid || len(r.Findings) > 0 {
			t.Errorf("%s: valid %v, findings %+v; want valid with none", path, r.Valid, r.Findings)
		}
	}
}

func TestCorpusInvalid(t *testing.T) {
	for path, k := range corpusFiles(t, "invalid") {
		r := validateFile(t, path, k)
		want := reqOf(path)
		found := false
		for _, f := range r.Findings {
			if f.Severity == SeverityError && (f.Req == want || f.Req == "DECODE" && want == "OH-RESP-001" || f.Req == "DECODE" && want == "OH-REQ-001") {
				found = true
			}
		}
		if r.Valid || !found {
			t.Errorf("%s: valid %v, findings %+v; want an error of %s", path, r.Valid, r.Findings, want)
		}
	}
}

func TestCorpusWarnings(t *testing.T) {
	for path, k := range corpusFiles(t, "warn") {
		r := validateFile(t, path, k)
		want := reqOf(path)
		found := false
		for _, f := range r.Findings {
			if f.Severity == SeverityWarning && f.Req == want {
				found = true
			}
		}
		if !r.Valid || !found {
			t.Errorf("%s: valid %v, findings %+v; want valid with a warning of %s", path, r.Valid, r.Findings, want)
		}
	}
}
