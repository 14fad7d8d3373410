package baseline

import (
	"regexp"
	"strings"
)

// The volatile parts of a failure message: ids, times and ports that
// differ from run to run. A reason written from a report keeps none of
// them, so a baseline written twice from the same behaviour is the same
// file and its diff in review is about behaviour only.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "<uuid>"},
	// RFC 3339 times, with or without fractions and offset.
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\b`), "<time>"},
	// Resource ids: kind_ then a ULID, hex or base32/62 run of 12 or more
	// characters with a digit in it (task_01HV…, msg_3f9a…), or a
	// sequence number (task_000012).
	{idRE, ""},
	// Ports of a URL or a loopback address.
	{regexp.MustCompile(`((?:https?|wss?)://[^/\s:@]+|\b127\.0\.0\.1|\blocalhost|\[::1\]):\d{1,5}\b`), "${1}:<port>"},
}

// idRE is a resource id: kind_ then a run of 12 or more letters and
// digits with a digit in it (task_01HV…, toolcall_3f9a…), or of 4 or more
// digits (task_000012). Words joined by _ are not ids.
var idRE = regexp.MustCompile(`\b([a-z][a-z0-9]*)_([0-9A-Za-z]{12,}|[0-9]{4,})\b`)

func stableID(m string) string {
	sm := idRE.FindStringSubmatch(m)
	if !strings.ContainsAny(sm[2], "0123456789") {
		return m
	}
	return sm[1] + "_<id>"
}

// Stable rewrites the volatile parts of a failure message (uuids, times,
// resource ids, ports) as placeholders: <uuid>, <time>, kind_<id>, :<port>.
func Stable(reason string) string {
	for _, v := range volatile {
		if v.re == idRE {
			reason = idRE.ReplaceAllStringFunc(reason, stableID)
			continue
		}
		reason = v.re.ReplaceAllString(reason, v.with)
	}
	return reason
}

// Change is what Merge did to a baseline.
type Change struct {
	Added   []string `json:"added"`   // ids the report adds
	Removed []string `json:"removed"` // ids that no longer fail or stay unverified
	Kept    []string `json:"kept"`    // ids still expected, with their reasons kept
}

// Merge brings old up to date with cur, the baseline a report makes
// (reports.BaselineFrom): an entry of old that cur does not list is
// removed (it passes again, or is no longer judged); with add, an entry of
// cur that old does not list is added, after old's, with cur's reason.
// The entries kept keep old's reasons (people write them).
func Merge(old, cur *File, add bool) (*File, Change) {
	in := map[string]bool{}
	for _, e := range cur.Requirements {
		in[e.ID] = true
	}
	out := &File{Format: Format, Requirements: []Entry{}}
	ch := Change{Added: []string{}, Removed: []string{}, Kept: []string{}}
	had := map[string]bool{}
	for _, e := range old.Requirements {
		had[e.ID] = true
		if !in[e.ID] {
			ch.Removed = append(ch.Removed, e.ID)
			continue
		}
		out.Requirements = append(out.Requirements, e)
		ch.Kept = append(ch.Kept, e.ID)
	}
	if add {
		for _, e := range cur.Requirements {
			if !had[e.ID] {
				out.Requirements = append(out.Requirements, e)
				ch.Added = append(ch.Added, e.ID)
			}
		}
	}
	return out, ch
}
