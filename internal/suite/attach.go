package suite

import (
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/evidence"
)

// MaxAttachmentBytes bounds one attached document: evidence, not a dump.
const MaxAttachmentBytes = 256 << 10

// Attach adds a document to the current spec's evidence in the report
// (the spec result's "evidence"), whatever the spec's verdict: a
// FidelityReport of a tape comparison, say. The document is redacted like
// every other output; one that is not JSON after redaction is kept as a
// JSON string, and one over MaxAttachmentBytes is left out with a note.
func Attach(name, schema string, doc any) {
	b, err := json.Marshal(doc)
	if err != nil {
		Note(fmt.Sprintf("%s: evidence %q could not be encoded: %v", CurrentSpecReport().FullText(), name, err))
		return
	}
	if len(b) > MaxAttachmentBytes {
		Note(fmt.Sprintf("%s: evidence %q is %d bytes, more than the %d kept in a report: left out", CurrentSpecReport().FullText(), name, len(b), MaxAttachmentBytes))
		return
	}
	clean := Env().Redactor.String(string(b))
	content := json.RawMessage(clean)
	if !json.Valid(content) {
		content, _ = json.Marshal(clean)
	}
	AddReportEntry(evidence.EntryEvidence, evidence.Attachment{Name: Env().Redactor.String(name), Schema: schema, Content: content}, ReportEntryVisibilityNever)
}

// Evidence records, in the current spec's evidence, where the object the
// checks of src.Requirements judge came from (evidence.Source): the
// target's own lists, a plain task of the run, a test hook, or a write of
// another level. A source of kind hook makes the verdicts on
// src.Requirements hook-attested (UsedHook).
func Evidence(src evidence.Source) {
	name := "source: " + src.Object
	if src.Kind == evidence.SourceHook {
		name += " (" + src.Hook + ")"
		// The verdicts on its requirements rest on the hook.
		UsedHook(src.Hook, src.Object+": "+src.How, src.Requirements...)
	}
	Attach(name, evidence.SourceSchema, src)
}
