package refharness

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
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
