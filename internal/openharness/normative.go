package openharness

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	openharnessdoc "github.com/harn-conform/conform/fixtures/openharness"
	"github.com/harn-conform/conform/fixtures/schemas"
)

// The definitions of the normative schema (fixtures/openharness,
// PATCHES.md) conform validates against: one per envelope kind, and the
// action directive. The root's oneOf is not used: neither definition is
// closed, so a message with both a request and a response member matches
// both and fails it whatever it holds.
const (
	defRequest   = "requestMessage"
	defResponse  = "responseMessage"
	defDirective = "actionDirective"
)

var (
	normOnce sync.Once
	norm     map[string]*jsonschema.Schema
	normErr  error
)

// normative returns a definition of the normative schema, compiled under
// the schema's own $id with nothing fetched; its error is a defect of the
// build (TestNormativeSchemaCompiles).
func normative(def string) (*jsonschema.Schema, error) {
	normOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		c.UseLoader(refuseLoader{})
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openharnessdoc.Schema))
		if err == nil {
			err = c.AddResource(openharnessdoc.SchemaURL, doc)
		}
		if err != nil {
			normErr = fmt.Errorf("the normative schema openharness-v1.draft.json: %w", err)
			return
		}
		norm = map[string]*jsonschema.Schema{}
		for _, d := range []string{defRequest, defResponse, defDirective} {
			s, err := c.Compile(openharnessdoc.SchemaURL + "#/$defs/" + d)
			if err != nil {
				normErr = fmt.Errorf("the normative schema's %s: %w", d, err)
				return
			}
			norm[d] = s
		}
	})
	if normErr != nil {
		return nil, normErr
	}
	return norm[def], nil
}

// normativeTag ends the message of a problem the normative schema found.
const normativeTag = " (normative schema)"

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: only the vendored normative schema is available", url)
}

// normativeProblems validates doc against one definition of the normative
// schema, each problem's message saying which schema found it.
func normativeProblems(def string, doc any) ([]schemas.Problem, error) {
	s, err := normative(def)
	if err != nil {
		return nil, err
	}
	ps := schemas.Problems(s, doc)
	// The shape of protocol_version is OH-VER-001's (CheckVersion), whose
	// Semantic Versioning 2.0.0 pattern refuses everything the schema's
	// looser one does (docs/interpretations.md#oh-normative-schema).
	ps = slices.DeleteFunc(ps, func(p schemas.Problem) bool {
		return p.Location == "/protocol_version" && strings.Contains(p.Message, "pattern")
	})
	for i := range ps {
		ps[i].Message += normativeTag
	}
	return ps, nil
}

// bothSchemas validates doc against conform's schema name and the
// normative definition def, and returns their problems merged: sorted, the
// normative schema's repeat of a problem conform's schema found dropped.
func bothSchemas(name, def string, doc any) ([]schemas.Problem, error) {
	own, err := SchemaProblems(name, doc)
	if err != nil {
		return nil, err
	}
	nps, err := normativeProblems(def, doc)
	if err != nil {
		return nil, err
	}
	seen := map[schemas.Problem]bool{}
	for _, p := range own {
		seen[p] = true
	}
	out := slices.Clone(own)
	for _, p := range nps {
		bare := p
		bare.Message = strings.TrimSuffix(p.Message, normativeTag)
		if !seen[bare] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b schemas.Problem) int {
		return cmp.Or(cmp.Compare(a.Location, b.Location), cmp.Compare(a.Message, b.Message))
	})
	return out, nil
}

// directiveValue matches the location of a directive's priority, execution
// or risk_tier, in a response (/response/action_directives/N/…) or in a
// directive on its own (/…): their values are OH-DIR-002's, whichever
// schema finds them.
var directiveValue = regexp.MustCompile(`^(/response/action_directives/\d+)?/(priority|execution|risk_tier)$`)

// withoutDirectiveValues drops the problems OH-DIR-002 reports.
func withoutDirectiveValues(ps []schemas.Problem) []schemas.Problem {
	return slices.DeleteFunc(ps, func(p schemas.Problem) bool { return directiveValue.MatchString(p.Location) })
}
