package refharness

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: how resources are rendered.
var (
	FaultNonUTCTimestamps = declare(fault.Fault{Name: "non-utc-timestamps",
		Doc:   "timestamps rendered with a +02:00 offset",
		Fails: []string{"CORE-READ-002"}})
	FaultWrongObjectField = declare(fault.Fault{Name: "wrong-object-field",
		Doc:   "resources carry a wrong \"object\" discriminator",
		Fails: []string{"CORE-CARD-001", "CORE-DISC-001", "CORE-READ-003"}})
	FaultOutcomeUsesTaskStatus = declare(fault.Fault{Name: "outcome-uses-task-status",
		Doc:       "Outcome.status uses the task enum (COMPLETED) instead of SUCCEEDED",
		Fails:     []string{"CORE-OUT-001"},
		Tolerated: []string{"CORE-CANCEL-004"},
		Why:       "the cancel races read the task's Outcomes and see the same task-enum status (CORE-CANCEL-004)"})
	FaultMissingRequiredField = declare(fault.Fault{Name: "missing-required-field",
		Doc:   "Task objects lack created_by",
		Fails: []string{"CORE-READ-004"}})
	FaultSessionNoMetadata = declare(fault.Fault{Name: "session-no-metadata",
		Doc:   "Session objects lack the envelope's metadata",
		Fails: []string{"CORE-READ-001"}})
	FaultSessionNoTranscript = declare(fault.Fault{Name: "session-no-transcript",
		Doc:   "Session objects lack transcript",
		Fails: []string{"CORE-READ-005"}})
	FaultPartNoVisibility = declare(fault.Fault{Name: "part-no-visibility",
		Doc:   "message parts are rendered without visibility",
		Fails: []string{"CORE-READ-006"}})
	FaultArtifactSHAPrefixed = declare(fault.Fault{Name: "artifact-sha-prefixed",
		Doc:      "Artifact.sha256 carries a \"sha256:\" prefix instead of bare hex",
		Fails:    []string{"CORE-READ-007"},
		Hookless: true})
	FaultLowercaseStatus = declare(fault.Fault{Name: "lowercase-status",
		Doc:      "task statuses are spelled in lower case (task objects and state event payloads)",
		Fails:    []string{"CORE-READ-004"},
		Hookless: true,
		Alone:    true,
		Why:      "CORE-READ-004 gates most reads: the suite reports what its failure blocks as unverified, so every partner would need a run of its own anyway; the run ends at the first task read, so no wait runs to its timeout"})
)

// Variants of this area.
var (
	VariantExtraFields   = declareVariant(fault.Variant{Name: "extra-fields", Doc: "an unknown extension field in every object"})
	VariantReorderedKeys = declareVariant(fault.Variant{Name: "reordered-keys", Doc: "JSON object keys in alphabetical order"})
)

// render marshals v for the wire. The plain path is a single json.Marshal;
// faults and variants that alter the shape work on a generic decoding, so
// each stays a few lines and cannot disturb the stored state.
func (s *Server) render(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	f, vs := s.opts.Faults, s.opts.Variants
	shape := f.Has(FaultNonUTCTimestamps) || f.Has(FaultWrongObjectField) || f.Has(FaultMissingRequiredField) ||
		f.Has(FaultOutcomeUsesTaskStatus) || vs.Has(VariantExtraFields) || vs.Has(VariantReorderedKeys) ||
		f.Has(FaultSessionNoMetadata) || f.Has(FaultSessionNoTranscript) || f.Has(FaultPartNoVisibility) ||
		f.Has(FaultArtifactSHAPrefixed) || f.Has(FaultLowercaseStatus) || f.Has(FaultPlainSkipsWork)
	if !shape {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	// Re-encoding a map writes keys sorted, a different order from the
	// structs; key order is never meaningful in JSON, so the shape faults may
	// carry that along (and VariantReorderedKeys is exactly that).
	return json.Marshal(s.reshape(g))
}

// reshape applies the shape faults and variants to every resource object.
func (s *Server) reshape(g any) any {
	f, vs := s.opts.Faults, s.opts.Variants
	switch x := g.(type) {
	case []any:
		for i := range x {
			x[i] = s.reshape(x[i])
		}
	case map[string]any:
		for k, v := range x {
			if f.Has(FaultNonUTCTimestamps) && strings.HasSuffix(k, "_at") {
				if str, ok := v.(string); ok {
					if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
						x[k] = t.In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
						continue
					}
				}
			}
			x[k] = s.reshape(v)
		}
		obj, _ := x["object"].(string)
		if obj == "" || obj == "list" {
			break
		}
		if f.Has(FaultWrongObjectField) {
			x["object"] = obj + "_resource"
		}
		if f.Has(FaultMissingRequiredField) && obj == "task" {
			delete(x, "created_by")
		}
		if f.Has(FaultOutcomeUsesTaskStatus) && obj == "outcome" {
			switch x["status"] {
			case "SUCCEEDED":
				x["status"] = StatusCompleted
			}
		}
		switch obj {
		case "task":
			if st, ok := x["status"].(string); ok && f.Has(FaultLowercaseStatus) {
				x["status"] = strings.ToLower(st)
			}
		case "event":
			if p, ok := x["payload"].(map[string]any); ok && f.Has(FaultPlainSkipsWork) && x["event"] == "task.completed" {
				delete(p, "previous_status") // only the terminal event, saying nothing of where it came from
			}
			if p, ok := x["payload"].(map[string]any); ok && f.Has(FaultLowercaseStatus) {
				for _, k := range []string{"status", "previous_status"} {
					if st, ok := p[k].(string); ok {
						p[k] = strings.ToLower(st)
					}
				}
			}
		case "session":
			if f.Has(FaultSessionNoMetadata) {
				delete(x, "metadata")
			}
			if f.Has(FaultSessionNoTranscript) {
				delete(x, "transcript")
			}
		case "message":
			if parts, ok := x["parts"].([]any); ok && f.Has(FaultPartNoVisibility) {
				for _, p := range parts {
					if pm, ok := p.(map[string]any); ok {
						delete(pm, "visibility")
					}
				}
			}
		case "artifact":
			if sum, ok := x["sha256"].(string); ok && f.Has(FaultArtifactSHAPrefixed) {
				x["sha256"] = "sha256:" + sum
			}
		}
		if vs.Has(VariantExtraFields) {
			x["x_conform_extension"] = map[string]any{"note": "unknown fields must be ignored"}
		}
	}
	return g
}
