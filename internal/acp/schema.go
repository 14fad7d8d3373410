package acp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
)

// schemaJSON is the ACP v1 JSON Schema exactly as github.com/coder/acp-go-sdk
// ships it (schema/schema.json of the version go.mod pins; SchemaVersion).
// The SDK generates its Go types from it, and it is the upstream
// agent-client-protocol schema. TestSchemaMatchesSDK keeps the copy equal
// to the module's file. Apache-2.0, © the acp-go-sdk authors.
//
//go:embed acp.schema.json
var schemaJSON []byte

// SchemaVersion is the acp-go-sdk release the embedded schema comes from.
const SchemaVersion = "v0.13.5"

const schemaURL = "https://agentclientprotocol.invalid/schema.json"

var (
	schemaOnce sync.Once
	schemaComp *jsonschema.Compiler
	schemaErr  error
	defsMu     sync.Mutex
	defs       = map[string]*jsonschema.Schema{}
)

// Validate checks raw JSON against one definition of the ACP schema
// ("InitializeResponse", "SessionNotification"…) and returns the findings,
// sorted by location; nil means valid. Its error is the checker's own
// defect (the embedded schema does not compile, no such definition).
func Validate(def string, raw json.RawMessage) ([]string, error) {
	s, err := schemaDef(def)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"not JSON: " + err.Error()}, nil
	}
	var out []string
	for _, p := range schemas.Problems(s, inst) {
		out = append(out, p.String())
	}
	return out, nil
}

func schemaDef(def string) (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			schemaErr = fmt.Errorf("acp: the embedded ACP schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		// The schema names Rust-style formats (uint16, int64, double) that
		// no validator knows; they are left as annotations, like the
		// upstream TypeScript and Python validators do. Ranges are asserted
		// by minimum/maximum where the schema states them.
		if err := c.AddResource(schemaURL, doc); err != nil {
			schemaErr = fmt.Errorf("acp: the embedded ACP schema: %w", err)
			return
		}
		schemaComp = c
	})
	if schemaErr != nil {
		return nil, schemaErr
	}
	if strings.ContainsAny(def, "/#~") {
		return nil, fmt.Errorf("acp: schema definition name %q", def)
	}
	defsMu.Lock()
	defer defsMu.Unlock()
	if s, ok := defs[def]; ok {
		return s, nil
	}
	s, err := schemaComp.Compile(schemaURL + "#/$defs/" + def)
	if err != nil {
		return nil, fmt.Errorf("acp: compiling ACP schema definition %s: %w", def, err)
	}
	defs[def] = s
	return s, nil
}

// SchemaJSON returns the embedded schema's bytes (for the test that keeps
// it equal to the SDK's).
func SchemaJSON() []byte { return bytes.Clone(schemaJSON) }
