package reports

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
)

// SchemaFile is the schema every conform.json matches.
const SchemaFile = "conform-report.v1.schema.json"

var (
	reportSchemaOnce sync.Once
	reportSchema     *jsonschema.Schema
	reportSchemaErr  error
)

// SchemaProblems lists how r, encoded as conform.json, departs from its
// schema (nil when it matches). A report off its schema is conform's own
// defect, whatever the target did: WriteAllWith records it in
// SuiteDefects, where readers and the project's tests look.
func SchemaProblems(r *Report) []string {
	reportSchemaOnce.Do(func() { reportSchema, reportSchemaErr = schemas.Compile(SchemaFile) })
	if reportSchemaErr != nil {
		return []string{fmt.Sprintf("%s does not compile: %v", SchemaFile, reportSchemaErr)}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		return []string{fmt.Sprintf("conform.json does not encode: %v", err)}
	}
	inst, err := jsonschema.UnmarshalJSON(&b)
	if err != nil {
		return []string{fmt.Sprintf("conform.json does not decode: %v", err)}
	}
	p := schemas.Problems(reportSchema, inst)
	if len(p) == 0 {
		return nil
	}
	var msgs []string
	for i, x := range p {
		if i == 5 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(p)-i))
			break
		}
		msgs = append(msgs, x.String())
	}
	return []string{fmt.Sprintf("conform.json does not match %s: %s", SchemaFile, strings.Join(msgs, "; "))}
}
