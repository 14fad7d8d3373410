package openharness

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeValidate feeds arbitrary bytes to the decoder and everything it
// accepts to the validator and every check, as both envelopes: none may
// panic or hang, and the decoder accepts JSON objects only.
func FuzzDecodeValidate(f *testing.F) {
	for _, dir := range []string{"valid", "invalid", "warn"} {
		for _, k := range []string{"request", "response"} {
			ents, _ := os.ReadDir(filepath.Join(corpus, dir, k))
			for _, e := range ents {
				if b, err := os.ReadFile(filepath.Join(corpus, dir, k, e.Name())); err == nil && len(b) < 4096 {
					f.Add(b)
				}
			}
		}
	}
	f.Add([]byte(`{"extensions":{"":{}},"response":{"action_directives":[null,1,{"action_type":{}}],"error":[]}}`))
	f.Add([]byte(`{"capability_denials":[1,{"capability":7}],"capabilities":[],"request_id":{"a":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := Decode(b)
		if err != nil {
			return
		}
		if doc == nil {
			t.Fatal("Decode returned neither an object nor an error")
		}
		KindOf(doc)
		for _, k := range []Kind{Request, Response} {
			r := Validate(doc, k)
			if r.Valid != (countErrors(r) == 0) {
				t.Fatalf("Valid = %v with findings %+v", r.Valid, r.Findings)
			}
		}
		CheckEcho("request_id", doc, doc)
		CheckDenialsAsked(doc, doc)
		CheckFailureStatus(doc, "fuzz")
		CheckNotEchoed(string(b), "x", map[string]string{"k": "v"})
	})
}

func countErrors(r Result) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}
