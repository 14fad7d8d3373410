package reports

import (
	"encoding/json"
	"io"
)

// WriteJSON writes conform.json.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
