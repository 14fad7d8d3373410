package main

// The faults and variants `conform serve` takes (--fault, --variant) and
// lists (--list-faults, --list-variants), derived from their declarations
// (package fault): the reference Harness's in-server ones (refharness,
// each in the file of its area) and its wire ones (refharness/wrapfault,
// middlewares put in front of the Harness it serves).

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/refharness/wrapfault"
)

// servedFaults are the Harness's faults, in-server and wire, in the order
// --list-faults shows them: by the level they break, then by name.
func servedFaults() []fault.Fault {
	fs := slices.Concat(refharness.FaultDecls(), wrapfault.Faults())
	slices.SortFunc(fs, func(a, b fault.Fault) int {
		return cmp.Or(cmp.Compare(levelRank(a.Own()), levelRank(b.Own())), strings.Compare(a.Name, b.Name))
	})
	return fs
}

// servedVariants are the Harness's variants, in-server then wire, each
// sorted by name.
func servedVariants() []fault.Variant {
	return slices.Concat(refharness.VariantDecls(), wrapfault.Variants())
}

// faultLevel is the level of the requirements ids name ("" if the
// registry has none of them).
func faultLevel(ids []string) requirements.Level {
	reg, err := requirements.Default()
	if err != nil || len(ids) == 0 {
		return ""
	}
	r, _ := reg.Lookup(ids[0])
	return r.Level
}

func levelRank(ids []string) int {
	l := faultLevel(ids)
	if i := slices.Index(requirements.Levels(), l); i >= 0 {
		return i
	}
	return len(requirements.Levels())
}

// faultListing is a fault as --list-faults --format json writes it.
type faultListing struct {
	Name      string             `json:"name"`
	Kind      fault.Kind         `json:"kind"`
	Level     requirements.Level `json:"level"`
	Fails     []string           `json:"fails"`
	Tolerated []string           `json:"tolerated"`
	Warns     []string           `json:"warns"`
	Doc       string             `json:"doc"`
}

// variantListing is a variant as --list-variants --format json writes it.
type variantListing struct {
	Name       string     `json:"name"`
	Kind       fault.Kind `json:"kind"`
	Unverified []string   `json:"unverified"`
	Warns      []string   `json:"warns"`
	Doc        string     `json:"doc"`
}

// listFaults writes fs as a table, or as JSON.
func listFaults(w io.Writer, format string, fs []fault.Fault) error {
	if format != cli.FormatJSON {
		return fault.WriteFaults(w, fs)
	}
	out := []faultListing{}
	for _, f := range fs {
		out = append(out, faultListing{Name: f.Name, Kind: f.Kind, Level: faultLevel(f.Own()), Doc: f.Doc,
			Fails: ids(f.Fails), Tolerated: ids(f.Tolerated), Warns: ids(f.Warns)})
	}
	return writeJSON(w, out)
}

// listVariants writes vs as a table, or as JSON.
func listVariants(w io.Writer, format string, vs []fault.Variant) error {
	if format != cli.FormatJSON {
		return fault.WriteVariants(w, vs)
	}
	out := []variantListing{}
	for _, v := range vs {
		out = append(out, variantListing{Name: v.Name, Kind: v.Kind, Doc: v.Doc,
			Unverified: ids(v.Unverified), Warns: ids(v.Warns)})
	}
	return writeJSON(w, out)
}

// ids is a list of requirement ids that JSON writes as [] when empty.
func ids(l []string) []string { return append([]string{}, l...) }

// servedSetup is what --fault and --variant asked of the Harness: in-server
// faults and variants set in its options, wire ones put in front of it
// (in the order given; the first given is the innermost).
type servedSetup struct {
	opts  refharness.Options
	wires []string
}

// pick sorts the named faults and variants into setup; an unknown name is
// a usage error that says where the names are listed.
func (s *servedSetup) pick(faults, variants []string) error {
	s.opts.Faults, s.opts.Variants = refharness.Faults{}, refharness.Variants{}
	for _, n := range faults {
		_, in := refharness.Fault(n).Decl()
		_, wire := wrapfault.Fault(n)
		switch {
		case in:
			s.opts.Faults[refharness.Fault(n)] = true
		case wire:
			s.wires = append(s.wires, n)
		default:
			return fmt.Errorf("--fault %q: no such fault (conform serve --list-faults lists them)", n)
		}
	}
	for _, n := range variants {
		_, in := refharness.Variant(n).Decl()
		_, wire := wrapfault.Variant(n)
		switch {
		case in:
			s.opts.Variants[refharness.Variant(n)] = true
		case wire:
			s.wires = append(s.wires, n)
		default:
			return fmt.Errorf("--variant %q: no such variant (conform serve --list-variants lists them)", n)
		}
	}
	return nil
}

// wrap puts the wire faults and variants in front of h; key is the API key
// of actor_default, for the setup requests some of them make.
func (s *servedSetup) wrap(h http.Handler, key string) (http.Handler, error) {
	for _, n := range s.wires {
		var err error
		if h, err = wrapfault.Apply(n, h, wrapfault.Env{APIKey: key}); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	return h, nil
}
