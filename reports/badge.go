package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Badge is a shields.io endpoint badge
// (https://shields.io/badges/endpoint-badge).
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// BadgeFor is a level's badge: label "harn LEVEL", the status as message
// ("not claimed" for not_claimed), and a colour by status. A level that is
// conformant only because a baseline expects some of its requirements says
// so in the message and is not green.
func BadgeFor(l LevelResult) Badge {
	b := Badge{SchemaVersion: 1, Label: "harn " + string(l.Level), Message: strings.ReplaceAll(string(l.Status), "_", " ")}
	switch l.Status {
	case Conformant:
		b.Color = "brightgreen"
		if l.Counts.Expected > 0 {
			b.Color = "yellowgreen"
			b.Message += fmt.Sprintf(" (%d known failure%s)", l.Counts.Expected, plural(l.Counts.Expected))
		}
	case Partial:
		b.Color = "yellow"
	case Nonconformant:
		b.Color = "red"
	default:
		b.Color = "lightgrey"
	}
	return b
}

// WriteBadge writes a level's badge-LEVEL.json.
func WriteBadge(w io.Writer, l LevelResult) error {
	enc := json.NewEncoder(w)
	return enc.Encode(BadgeFor(l))
}
