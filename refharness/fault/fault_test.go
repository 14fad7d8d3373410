package fault

import (
	"strings"
	"testing"
	"time"
)

func TestCheckRefusesMalformedDeclarations(t *testing.T) {
	ok := Fault{Name: "a-b", Doc: "does a thing", Kind: InServer, Fails: []string{"CORE-X-001"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("a well-formed fault: %v", err)
	}
	for name, tc := range map[string]struct {
		edit func(*Fault)
		says string
	}{
		"name with spaces":            {func(f *Fault) { f.Name = "a b" }, "name"},
		"upper-case name":             {func(f *Fault) { f.Name = "A-b" }, "name"},
		"no doc":                      {func(f *Fault) { f.Doc = "" }, "doc"},
		"two-line doc":                {func(f *Fault) { f.Doc = "a\nb" }, "doc"},
		"no kind":                     {func(f *Fault) { f.Kind = "" }, "kind"},
		"breaks nothing":              {func(f *Fault) { f.Fails = nil }, "neither fails nor warns"},
		"warns and tolerates":         {func(f *Fault) { f.Fails, f.Warns, f.Tolerated = nil, []string{"CORE-X-002"}, []string{"CORE-X-003"} }, "only warns"},
		"malformed id":                {func(f *Fault) { f.Fails = []string{"core-x-1"} }, "requirement id"},
		"own and tolerated":           {func(f *Fault) { f.Tolerated, f.Why = []string{"CORE-X-001"}, "w" }, "both its own and tolerated"},
		"tolerated, no why":           {func(f *Fault) { f.Tolerated = []string{"CORE-X-002"} }, "need a Why"},
		"alone, no why":               {func(f *Fault) { f.Alone = true }, "need a Why"},
		"timeout, no why":             {func(f *Fault) { f.TaskTimeout = time.Second }, "need a Why"},
		"says outside a narrowed run": {func(f *Fault) { f.Says = "x" }, "narrowed runs"},
	} {
		f := ok
		tc.edit(&f)
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Check() = %v, want an error saying %q", name, err, tc.says)
		}
	}
	v := Variant{Name: "v", Doc: "does", Kind: Wire, Unverified: []string{"bad id"}}
	if err := v.Check(); err == nil {
		t.Error("a variant with a malformed id passed Check")
	}
}

func TestSetKeepsDeclarations(t *testing.T) {
	var s Set[Fault]
	for _, n := range []string{"b-fault", "a-fault"} {
		if got := s.Add(Fault{Name: n, Doc: "d", Kind: Wire, Warns: []string{"CORE-X-001"}}); got != n {
			t.Errorf("Add returned %q, want %q", got, n)
		}
	}
	if all := s.All(); len(all) != 2 || all[0].Name != "a-fault" || all[1].Name != "b-fault" {
		t.Errorf("All() = %v, want both, sorted by name", all)
	}
	if f, ok := s.Lookup("b-fault"); !ok || f.Kind != Wire {
		t.Errorf("Lookup(b-fault) = %v, %v", f, ok)
	}
	if _, ok := s.Lookup("c-fault"); ok {
		t.Error("Lookup found a fault never declared")
	}
	for name, d := range map[string]Fault{
		"a name declared twice": {Name: "a-fault", Doc: "d", Kind: Wire, Warns: []string{"CORE-X-001"}},
		"a malformed one":       {Name: "c-fault", Kind: Wire, Warns: []string{"CORE-X-001"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Add accepted %s", name)
				}
			}()
			s.Add(d)
		}()
	}
}

func TestWriteListsEveryRequirement(t *testing.T) {
	var b strings.Builder
	WriteFaults(&b, []Fault{{Name: "x-fault", Kind: Wire, Doc: "breaks x", Fails: []string{"CORE-X-001", "CORE-X-002"}, Warns: []string{"CORE-X-003"}}})
	for _, want := range []string{"x-fault", "wire", "CORE-X-001, -002; warns CORE-X-003", "breaks x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteFaults wrote %q, want it to hold %q", b.String(), want)
		}
	}
	b.Reset()
	WriteVariants(&b, []Variant{{Name: "y-variant", Kind: InServer, Doc: "varies y", Unverified: []string{"CORE-Y-001"}}})
	for _, want := range []string{"y-variant", "in-server", "varies y", "leaves CORE-Y-001 unverified"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteVariants wrote %q, want it to hold %q", b.String(), want)
		}
	}
}
