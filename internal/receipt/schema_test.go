package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/receipts"
	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/testmain"
)

// publishedSchema is the upstream schema on a development machine; it is
// read in place, never copied into the tree.
const publishedSchema = "/work/shared/reference/receipt-2026-04-25.schema.json"

func decodeNumbers(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// variants returns doc mutated one way at a time, each labelled: every
// member deleted, an unknown member added to every object, and every value
// replaced by values that probe type, enum, pattern, bound and format
// constraints.
func variants(doc any) map[string]any {
	out := map[string]any{}
	probes := []any{
		nil, true, json.Number("-1"), json.Number("1.5"), json.Number("7"), "", "x", "bogus_enum",
		"sha256:" + string(bytes.Repeat([]byte("a"), 64)), "SHA256:AB", "2026-04-25T19:00:00Z", "not-a-date",
		map[string]any{}, []any{}, []any{map[string]any{}},
	}
	var walk func(path string, v any, set func(any), del func())
	walk = func(path string, v any, set func(any), del func()) {
		root := doc
		record := func(label string, mutate func()) {
			mutate()
			out[label] = jsonv.Copy(root)
		}
		if del != nil {
			old := v
			record(path+" deleted", del)
			set(old)
		}
		for i, p := range probes {
			old := v
			record(fmt.Sprintf("%s = probe %d", path, i), func() { set(p) })
			set(old)
		}
		switch x := v.(type) {
		case map[string]any:
			x["zz_unknown"] = 1
			out[path+" + unknown member"] = jsonv.Copy(root)
			delete(x, "zz_unknown")
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				k := k
				walk(path+"/"+k, x[k], func(n any) { x[k] = n }, func() { delete(x, k) })
			}
		case []any:
			for i := range x {
				i := i
				walk(fmt.Sprintf("%s/%d", path, i), x[i], func(n any) { x[i] = n }, nil)
			}
		}
	}
	walk("", doc, func(any) {}, nil)
	return out
}

// TestSchemaEquivalentToPublished validates thousands of one-change variants
// of every fixture against our schema and the published one, and requires
// the same verdict from both: the schemas are written independently but
// must constrain identically.
func TestSchemaEquivalentToPublished(t *testing.T) {
	raw, err := os.ReadFile(publishedSchema)
	if os.IsNotExist(err) {
		t.Skipf("%s not present on this machine", publishedSchema)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("published.json", doc); err != nil {
		t.Fatal(err)
	}
	theirs, err := c.Compile("published.json")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := compiled()
	if err != nil {
		t.Fatal(err)
	}
	// Under the race detector, which finds nothing in pure validation and
	// makes it ten times dearer, every fifth variant (in label order);
	// builds without -race, and -proofs, validate them all (testmain.Full).
	sample := 1
	if !testmain.Full() {
		sample = 5
	}
	bases := []string{"valid/task-completed.json", "valid/replay-segment.json", "valid/signed.json", "valid/numbers.json", "valid/task-failed.json"}
	total, invalid := 0, 0
	for _, base := range bases {
		b, err := receipts.Read(base)
		if err != nil {
			t.Fatal(err)
		}
		vs := variants(decodeNumbers(t, b))
		labels := make([]string, 0, len(vs))
		for label := range vs {
			labels = append(labels, label)
		}
		sort.Strings(labels)
		for i, label := range labels {
			if i%sample != 0 {
				continue
			}
			v := vs[label]
			ourErr, theirErr := ours.Validate(v), theirs.Validate(v)
			total++
			if ourErr != nil {
				invalid++
			}
			if (ourErr == nil) != (theirErr == nil) {
				t.Errorf("%s, %s: ours valid=%v, published valid=%v\nours: %v\npublished: %v", base, label, ourErr == nil, theirErr == nil, ourErr, theirErr)
			}
		}
	}
	// Guard against a vacuous pass: most variants must be rejected.
	if total < 3000/sample || invalid < total/2 {
		t.Errorf("%d variants, %d invalid: the corpus is too weak", total, invalid)
	}
	t.Logf("%d variants, %d rejected by both schemas", total, invalid)
}
