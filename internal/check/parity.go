package check

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Transport parity (EXT-TRANSPORT-004): one run, observed at the same time
// through several transports (REST polling, SSE streams, a WebSocket), must
// show the same Events in the same order. Parity compares the views and
// names the first event where each differs from the reference view.
//
// Why not the tape oracle (internal/fidelity): a seed-003 tape records the
// non-deterministic inputs a Harn script consumed (clock reads, LLM calls,
// file I/O, processes, MCP calls), with a closed set of record kinds, and
// fidelity.Compare fails every record of a kind it does not know, even
// against itself. An Event has no honest encoding in it: dressing events
// up as mcp_json_rpc or llm_call records would make the FidelityReport speak
// of digests and MCP methods where a reader needs event ids and payload
// members, and would hide the reordering and repeat cases behind
// "kind_mismatch" runs (the oracle aligns by position and never
// re-synchronises). So the comparison is this one, over the Events as
// decoded JSON.

// View is one transport's view of a run: the Events it delivered, in
// delivery order, as decoded JSON objects.
type View struct {
	// Transport is the transport's short name ("rest", "sse",
	// "websocket"); Name says which read it was (method and path).
	Transport, Name string
	Events          []map[string]any
}

func (v View) label() string {
	if v.Name == "" {
		return v.Transport
	}
	return v.Name
}

// DivergenceKind says how a view differs from the reference.
type DivergenceKind string

// The kinds of divergence, in the words of the findings.
const (
	// DivMissing: the reference has an event the other view never delivered.
	DivMissing DivergenceKind = "missing event"
	// DivExtra: the other view delivered an event the reference does not
	// have, or delivered one a second time.
	DivExtra DivergenceKind = "extra event"
	// DivID: at this position the views hold different events, neither of
	// which the other view has at all.
	DivID DivergenceKind = "different event id"
	// DivOrder: both views have both events, in another order.
	DivOrder DivergenceKind = "different order"
	// DivKind: the same event id with another kind (the Event's "event").
	DivKind DivergenceKind = "different kind"
	// DivPayload: the same event with another payload.
	DivPayload DivergenceKind = "different payload"
	// DivField: the same event with another resource, sequence or
	// created_at.
	DivField DivergenceKind = "different field"
)

// Divergence is the first place where a view differs from the reference.
type Divergence struct {
	Kind DivergenceKind
	// Ref and Other name the two views (Transport and Name).
	RefTransport, Ref, OtherTransport, Other string
	// Index is the 0-based position in both views where they first differ.
	Index int
	// Field is the JSON Pointer of the first differing member (DivKind,
	// DivPayload, DivField), e.g. "/payload/status".
	Field string
	// RefEvent and OtherEvent are the two events at Index as bounded,
	// redacted JSON text; "" where the view has none.
	RefEvent, OtherEvent string
	// Detail says what exactly differs.
	Detail           string
	RefLen, OtherLen int
}

func (d Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s differs from %s at event %d (%s: %d events, %s: %d): %s", d.Other, d.Ref, d.Index+1, d.OtherTransport, d.OtherLen, d.RefTransport, d.RefLen, d.Kind)
	if d.Field != "" {
		fmt.Fprintf(&b, " at %s", d.Field)
	}
	if d.Detail != "" {
		b.WriteString(": " + d.Detail)
	}
	fmt.Fprintf(&b, "; %s event %d: %s; %s event %d: %s", d.RefTransport, d.Index+1, noneIfEmpty(d.RefEvent), d.OtherTransport, d.Index+1, noneIfEmpty(d.OtherEvent))
	return b.String()
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// ParityOptions tune Parity's findings.
type ParityOptions struct {
	// Redact scrubs secrets from event text before it is cut to size, so a
	// secret cut in half cannot slip past the redactor. nil: no scrubbing.
	Redact func(string) string
	// MaxEventText bounds each event's text in a finding (runes); 0: 400.
	MaxEventText int
}

// ParityFields are the Event members Parity compares, besides the id and
// the position: the members an event read back by id must keep
// (docs/interpretations.md#event-by-id). Extensions and the Event's own
// replayed flag are not compared.
var ParityFields = []string{"event", "payload", "resource", "sequence", "created_at"}

// Parity compares every view with views[0], the reference, and returns
// the first divergence of each view that differs from it (nil when all
// agree). Events are matched by id and position; members are compared as
// JSON values (member order, whitespace and number spelling do not
// matter).
func Parity(views []View, opt ParityOptions) []Divergence {
	if len(views) < 2 {
		return nil
	}
	var out []Divergence
	for _, v := range views[1:] {
		if d, ok := firstDivergence(views[0], v, opt); ok {
			out = append(out, d)
		}
	}
	return out
}

func eventID(e map[string]any) string { s, _ := e["id"].(string); return s }

// firstDivergence walks ref and other in step and describes the first
// position where they differ.
func firstDivergence(ref, other View, opt ParityOptions) (Divergence, bool) {
	refPos := positions(ref.Events)
	otherPos := positions(other.Events)
	d := Divergence{RefTransport: ref.Transport, Ref: ref.label(), OtherTransport: other.Transport, Other: other.label(),
		RefLen: len(ref.Events), OtherLen: len(other.Events)}
	at := func(kind DivergenceKind, i int, detail string) (Divergence, bool) {
		d.Kind, d.Index, d.Detail = kind, i, detail
		if i < len(ref.Events) {
			d.RefEvent = eventText(ref.Events[i], opt)
		}
		if i < len(other.Events) {
			d.OtherEvent = eventText(other.Events[i], opt)
		}
		return d, true
	}
	for i := 0; i < len(ref.Events) || i < len(other.Events); i++ {
		if i >= len(other.Events) {
			a := eventID(ref.Events[i])
			if j := firstBefore(refPos[a], i); j >= 0 {
				return at(DivExtra, i, fmt.Sprintf("%s (the reference) delivered %s again after the %d events %s has (first at event %d)", ref.Transport, describeID(a), len(other.Events), other.Transport, j+1))
			}
			return at(DivMissing, i, fmt.Sprintf("%s ended after %d events; %s then has %s and %d more", other.Transport, len(other.Events), ref.Transport, describeID(a), len(ref.Events)-i-1))
		}
		b := eventID(other.Events[i])
		if i >= len(ref.Events) {
			if j := firstBefore(refPos[b], len(ref.Events)); j >= 0 {
				return at(DivExtra, i, fmt.Sprintf("%s delivered %s again after the %d events %s has (first at event %d)", other.Transport, describeID(b), len(ref.Events), ref.Transport, j+1))
			}
			return at(DivExtra, i, fmt.Sprintf("%s delivered %s after the %d events %s has; %s never lists it", other.Transport, describeID(b), len(ref.Events), ref.Transport, ref.Transport))
		}
		a := eventID(ref.Events[i])
		if a != b {
			// The views agree on ids before i, so an id of other already
			// seen before i is a repeat.
			if j := firstBefore(refPos[b], i); j >= 0 {
				return at(DivExtra, i, fmt.Sprintf("%s delivered %s a second time (first at event %d) where %s has %s", other.Transport, describeID(b), j+1, ref.Transport, describeID(a)))
			}
			// The reference may repeat an event itself: the extra one is
			// then its own.
			if j := firstBefore(refPos[a], i); j >= 0 {
				return at(DivExtra, i, fmt.Sprintf("%s (the reference) delivered %s a second time (first at event %d) where %s has %s", ref.Transport, describeID(a), j+1, other.Transport, describeID(b)))
			}
			aLater := firstFrom(otherPos[a], i) >= 0
			bLater := firstFrom(refPos[b], i) >= 0
			switch {
			case aLater && bLater:
				return at(DivOrder, i, fmt.Sprintf("%s has %s here and %s at event %d; %s has %s at event %d", ref.Transport, describeID(a), describeID(b), firstFrom(refPos[b], i)+1,
					other.Transport, describeID(a), firstFrom(otherPos[a], i)+1))
			case bLater:
				return at(DivMissing, i, fmt.Sprintf("%s never delivered %s; it has %s (event %d of %s) here", other.Transport, describeID(a), describeID(b), firstFrom(refPos[b], i)+1, ref.Transport))
			case aLater:
				return at(DivExtra, i, fmt.Sprintf("%s delivered %s, which %s never lists, before %s (its event %d)", other.Transport, describeID(b), ref.Transport, describeID(a), firstFrom(otherPos[a], i)+1))
			default:
				return at(DivID, i, fmt.Sprintf("%s has %s, %s has %s, and neither view has the other's", ref.Transport, describeID(a), other.Transport, describeID(b)))
			}
		}
		for _, f := range ParityFields {
			va, vb := ref.Events[i][f], other.Events[i][f]
			if ptr, x, y, differ := jsonDiff("/"+f, va, vb); differ {
				kind := DivField
				switch f {
				case "event":
					kind = DivKind
				case "payload":
					kind = DivPayload
				}
				d.Field = ptr
				return at(kind, i, fmt.Sprintf("event %s: %s has %s, %s has %s", a, ref.Transport, valueText(x, opt), other.Transport, valueText(y, opt)))
			}
		}
	}
	return Divergence{}, false
}

func describeID(id string) string {
	if id == "" {
		return "an event without an id"
	}
	return "event " + strconv.Quote(id)
}

// positions maps each event id to the positions it holds.
func positions(evs []map[string]any) map[string][]int {
	m := map[string][]int{}
	for i, e := range evs {
		id := eventID(e)
		m[id] = append(m[id], i)
	}
	return m
}

// firstBefore is the first of ps below n, or -1.
func firstBefore(ps []int, n int) int {
	if len(ps) > 0 && ps[0] < n {
		return ps[0]
	}
	return -1
}

// firstFrom is the first of ps at or after n, or -1.
func firstFrom(ps []int, n int) int {
	for _, p := range ps {
		if p >= n {
			return p
		}
	}
	return -1
}

// jsonDiff compares two decoded JSON values and returns the JSON Pointer of
// the first difference (object members in sorted order) and the two values
// there. An absent member and a null one differ: "absent" is not "null".
func jsonDiff(ptr string, a, b any) (string, any, any, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return ptr, a, b, true
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			va, inA := x[k]
			vb, inB := y[k]
			p := ptr + "/" + jsonv.Token(k)
			if inA != inB {
				return p, memberOrAbsent(va, inA), memberOrAbsent(vb, inB), true
			}
			if q, u, v, d := jsonDiff(p, va, vb); d {
				return q, u, v, true
			}
		}
		return "", nil, nil, false
	case []any:
		y, ok := b.([]any)
		if !ok {
			return ptr, a, b, true
		}
		for i := 0; i < len(x) && i < len(y); i++ {
			if q, u, v, d := jsonDiff(ptr+"/"+strconv.Itoa(i), x[i], y[i]); d {
				return q, u, v, true
			}
		}
		if len(x) != len(y) {
			return ptr, arrayLen(len(x)), arrayLen(len(y)), true
		}
		return "", nil, nil, false
	case json.Number, float64, int, int64:
		if sameNumber(a, b) {
			return "", nil, nil, false
		}
		return ptr, a, b, true
	default:
		// string, bool, nil
		if a == b {
			return "", nil, nil, false
		}
		return ptr, a, b, true
	}
}

// absent stands for a member a view does not have.
type absent struct{}

// arrayLen stands for an array whose elements agree up to the shorter
// one's length.
type arrayLen int

func memberOrAbsent(v any, ok bool) any {
	if !ok {
		return absent{}
	}
	return v
}

// sameNumber compares two JSON numbers by value: 1, 1.0 and 1e0 are
// equal. Numbers too large to compare by value (an exponent beyond ±400)
// are compared as written.
func sameNumber(a, b any) bool {
	x, ok1 := numberRat(a)
	y, ok2 := numberRat(b)
	if ok1 && ok2 {
		return x.Cmp(y) == 0
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func numberRat(v any) (*big.Rat, bool) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = n.String()
	case float64:
		s = strconv.FormatFloat(n, 'g', -1, 64)
	case int:
		s = strconv.Itoa(n)
	case int64:
		s = strconv.FormatInt(n, 10)
	default:
		return nil, false
	}
	// Bound the exponent: big.Rat would otherwise build 1e100000000 in full.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || e > 400 || e < -400 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// eventText shows an event by the members Parity compares (its id and
// ParityFields), so the bound keeps what the finding is about.
func eventText(e map[string]any, opt ParityOptions) string {
	shown := map[string]any{}
	for _, f := range append([]string{"id"}, ParityFields...) {
		if v, ok := e[f]; ok {
			shown[f] = v
		}
	}
	b, err := json.Marshal(shown)
	if err != nil {
		return bounded(fmt.Sprint(e), opt)
	}
	return bounded(string(b), opt)
}

func valueText(v any, opt ParityOptions) string {
	if _, ok := v.(absent); ok {
		return "no such member"
	}
	if n, ok := v.(arrayLen); ok {
		return fmt.Sprintf("an array of %d", int(n))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return bounded(fmt.Sprint(v), opt)
	}
	return bounded(string(b), opt)
}

// bounded redacts s, then cuts it to the option's bound.
func bounded(s string, opt ParityOptions) string {
	if opt.Redact != nil {
		s = opt.Redact(s)
	}
	n := opt.MaxEventText
	if n <= 0 {
		n = 400
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
