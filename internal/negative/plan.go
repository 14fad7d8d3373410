package negative

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"net/http"

	"github.com/harn-conform/conform/internal/openapi"
)

// Expect is what a request must get.
type Expect int

const (
	// Tolerate: the document allows the request (an empty string, a deep
	// value where any JSON is allowed) or leaves its reading open (a
	// query value, duplicate keys, invalid UTF-8, the Content-Type): any
	// answer but a server error, a hang or a dropped connection.
	Tolerate Expect = iota
	// Refuse: the document declares the request invalid (or its path
	// names no resource): a 4xx error, and nothing changed.
	Refuse
	// Accept: the request differs from the valid base only by members an
	// open schema allows: answered like the base.
	Accept
)

func (e Expect) String() string {
	switch e {
	case Refuse:
		return "refuse"
	case Accept:
		return "accept"
	}
	return "tolerate"
}

// Classify says what b must get, by the document: a hostile path id names
// no resource; a body that is not JSON, not an object or missing is
// invalid; otherwise the body's JSON is judged against the operation's
// schema by the document's validator (with a JSON Content-Type: the
// Content-Type's own reading is open, see Tolerate).
func Classify(d *openapi.Doc, b Built) (Expect, []openapi.Violation) {
	accept := len(b.Muts) > 0
	for _, m := range b.Muts {
		switch m.Class {
		case HostilePathID, NotAnObject, EmptyBody:
			return Refuse, nil
		case MalformedJSON:
			if !json.Valid(b.Body) { // single quotes in "{}" change nothing
				return Refuse, nil
			}
		}
		if m.Class != UnknownMember {
			accept = false
		}
	}
	if b.Body == nil || !b.Op.HasBody {
		return Tolerate, nil
	}
	body := b.Body
	if sized := small(b); sized != nil {
		body = sized
	}
	vs := d.ValidateOperationBody(b.Op.ID, http.Header{"Content-Type": {"application/json"}}, body)
	if len(vs) > 0 {
		return Refuse, vs
	}
	if accept {
		return Accept, nil
	}
	return Tolerate, nil
}

// classifySize is the size a sized value is judged at: whether a long
// string, a long array or a deep nesting is valid does not depend on how
// long or deep it is (the document bounds no body member's length, items or
// depth), and validating ten thousand items costs what sending them does.
const classifySize = 16

// small is b's body with its sized values cut to classifySize, nil when it
// has none (or its body was changed as a whole).
func small(b Built) []byte {
	var ms []Mutation
	cut := false
	for _, m := range b.Muts {
		if m.In == InBody && m.Whole != "" && m.Class != DuplicateKey || m.Body != nil {
			return nil
		}
		if m.Class.sized() && m.Size > classifySize {
			m.Size = classifySize
			cut = true
		}
		ms = append(ms, m)
	}
	if !cut {
		return nil
	}
	return Apply(Base{Op: b.Op, PathIDs: map[string]string{}, Body: b.base}, ms).Body
}

// Planned is one request of a plan.
type Planned struct {
	Base   Base // what Built was made from
	Built  Built
	Expect Expect
	// Anchored: a mutation the document allows, sent to an operation that
	// writes, was paired with one that makes the request invalid (the
	// anchor, last in Built.Muts), so that a target that takes it anyway
	// stores nothing it would keep.
	Anchored bool
}

// writes reports whether op changes state.
func writes(op openapi.Operation) bool {
	return op.Method != http.MethodGet && op.Method != http.MethodHead
}

// rngFor is the plan's random source for one operation: the same for a
// seed whatever else the run does.
func rngFor(seed int64, opID string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(opID))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// Plan draws up to quota requests for base from its candidates: each class
// in turn (Classes order), a random candidate of it each time, so that
// every operation gets the commonest defects first. Unknown members of open
// schemas are Accept's (AcceptTests), not drawn here. To an operation that
// writes, a request the document allows is sent only with an anchor that
// makes it invalid.
func Plan(d *openapi.Doc, base Base, seed int64, quota int) []Planned {
	rng := rngFor(seed, base.Op.ID)
	cands := Generate(d, base, rng)
	byClass := map[Class][]Mutation{}
	for _, m := range cands {
		if m.Class == UnknownMember && !isClosedMember(m) {
			continue
		}
		byClass[m.Class] = append(byClass[m.Class], m)
	}
	for _, c := range Classes {
		xs := byClass[c]
		rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	}
	anchors := anchorsOf(cands, rng)
	var out []Planned
	for quota > 0 {
		drew := false
		for _, c := range Classes {
			if quota == 0 {
				break
			}
			xs := byClass[c]
			if len(xs) == 0 {
				continue
			}
			m := xs[0]
			byClass[c] = xs[1:]
			drew = true
			if p, ok := planOne(d, base, m, anchors); ok {
				out = append(out, p)
				quota--
			}
		}
		if !drew {
			break
		}
	}
	return out
}

func isClosedMember(m Mutation) bool { return m.What == "a member the closed schema does not allow" }

// planOne builds m's request, anchored when it must be.
func planOne(d *openapi.Doc, base Base, m Mutation, anchors []Mutation) (Planned, bool) {
	b := Apply(base, []Mutation{m})
	e, _ := Classify(d, b)
	if e == Refuse || !writes(base.Op) || m.In == InPath {
		return Planned{Base: base, Built: b, Expect: e}, true
	}
	for _, a := range anchors {
		if a.Member() == m.Member() || len(m.Ptr) > 0 && len(a.Ptr) > 0 && a.Ptr[0] == m.Ptr[0] {
			continue
		}
		ab := Apply(base, []Mutation{m, a})
		if e, _ := Classify(d, ab); e == Refuse {
			return Planned{Base: base, Built: ab, Expect: Refuse, Anchored: true}, true
		}
	}
	return Planned{}, false
}

// anchorsOf are the mutations that make a request invalid on their own,
// best first: a required top-level member removed, then a top-level member
// of the wrong type.
func anchorsOf(cands []Mutation, rng *rand.Rand) []Mutation {
	var req, typ []Mutation
	for _, m := range cands {
		if m.In != InBody || len(m.Ptr) != 1 || m.Whole != "" {
			continue
		}
		switch {
		case m.Class == MissingRequired:
			req = append(req, m)
		case m.Class == WrongType && m.Value != nil:
			typ = append(typ, m)
		}
	}
	rng.Shuffle(len(req), func(i, j int) { req[i], req[j] = req[j], req[i] })
	rng.Shuffle(len(typ), func(i, j int) { typ[i], typ[j] = typ[j], typ[i] })
	return append(req, typ...)
}

// AcceptTests are the requests that differ from base only by a member an
// open schema does not name: at the top level, and at one nested object
// the seed picks.
func AcceptTests(d *openapi.Doc, base Base, seed int64) []Planned {
	if base.Body == nil || !base.Ready() {
		return nil
	}
	rng := rngFor(seed, base.Op.ID+"#accept")
	var top, nested []Mutation
	for _, m := range Generate(d, base, rng) {
		if m.Class != UnknownMember || isClosedMember(m) {
			continue
		}
		if len(m.Ptr) == 1 {
			top = append(top, m)
		} else {
			nested = append(nested, m)
		}
	}
	var out []Planned
	pick := top
	if len(nested) > 0 {
		pick = append(pick, nested[rng.IntN(len(nested))])
	}
	for _, m := range pick {
		b := Apply(base, []Mutation{m})
		if e, _ := Classify(d, b); e == Accept {
			out = append(out, Planned{Base: base, Built: b, Expect: Accept})
		}
	}
	return out
}
