package refharness

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	openapidoc "github.com/harn-conform/conform/fixtures/openapi"
	"github.com/harn-conform/conform/internal/jsonv"
)

// The replay request body is checked against the OpenAPI's
// ReplayTaskRequest schema, compiled from the vendored document once per
// process. (internal/openapi holds the same check as its ValidateComponent;
// its tests drive this package, so this package compiles the one schema it
// needs itself rather than import it.)

const replayDocURL = "https://conform.invalid/refharness/openapi.json"

var replaySchema struct {
	once sync.Once
	s    *jsonschema.Schema
	err  error
}

type refuseSchemaLoader struct{}

func (refuseSchemaLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: only the vendored OpenAPI document is available", url)
}

func replayRequestSchema() (*jsonschema.Schema, error) {
	replaySchema.once.Do(func() {
		root, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapidoc.JSON))
		if err != nil {
			replaySchema.err = fmt.Errorf("the vendored OpenAPI document: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(refuseSchemaLoader{})
		if err := c.AddResource(replayDocURL, root); err != nil {
			replaySchema.err = err
			return
		}
		replaySchema.s, replaySchema.err = c.Compile(replayDocURL + "#/components/schemas/ReplayTaskRequest")
	})
	return replaySchema.s, replaySchema.err
}

// schemaProblem validates raw against ReplayTaskRequest and returns the
// first leaf problem: the JSON pointer of the offending member and what is
// wrong with it ("" and "" when the body conforms).
func schemaProblem(raw []byte) (ptr, msg string, err error) {
	s, err := replayRequestSchema()
	if err != nil {
		return "", "", err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "", "", err
	}
	verr := s.Validate(inst)
	if verr == nil {
		return "", "", nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return "", verr.Error(), nil
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	if r, ok := ve.ErrorKind.(*kind.Required); ok && len(r.Missing) > 0 {
		loc = append(loc[:len(loc):len(loc)], r.Missing[0]) // the missing member is the one to name
	}
	ptr = jsonv.Pointer(loc...)
	return ptr, ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)), nil
}
