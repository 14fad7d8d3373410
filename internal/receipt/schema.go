package receipt

import (
	"sync"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaFile is the project's schema for the receipt envelope, in schemas.FS.
const SchemaFile = Format + ".schema.json"

// Format is the receipt format marker, the value of the "schema" member.
const Format = "receipt-2026-04-25"

// compiled is built once; the schema is embedded, so failure is a build
// defect and every Verify reports it rather than panicking.
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return schemas.Compile(SchemaFile)
})

// schemaProblems validates a decoded receipt and returns "pointer: message"
// lines sorted by location.
func schemaProblems(doc any) ([]string, error) {
	s, err := compiled()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range schemas.Problems(s, doc) {
		out = append(out, p.String())
	}
	return out, nil
}
