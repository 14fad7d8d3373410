// Package negative generates malformed requests from the OpenAPI document
// (internal/openapi) and shrinks the ones a target mishandles to a minimal
// reproduction: the hostile-input pass of the suites (suites/core/hostile.go,
// suites/extended/hostile.go, …).
//
// A request is a valid base request of one operation (real ids in its path,
// a body the operation takes) with one or more Mutations applied: a member
// removed, given a value of the wrong type, an enum value from a newer
// version, a number out of range, an empty or oversized string or array, a
// deeply nested value, malformed JSON, a wrong Content-Type, a duplicate
// key, invalid UTF-8, a hostile path id or query value. Which requests the
// document declares invalid is not guessed: the document's own validator
// (openapi.Doc.ValidateRequestBody) says so. Generation is deterministic for
// a seed; a budget bounds how many requests a pass sends. The verdicts are
// internal/check's (hostile.go): this package only builds, sends, shrinks
// and groups.
package negative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/openapi"
)

// Class is a kind of malformation.
type Class string

// The classes, in the order a plan draws them (the first ones are the
// defects servers have most often: each operation gets them first).
const (
	WrongType        Class = "wrong-type"
	MissingRequired  Class = "missing-required"
	OutOfEnum        Class = "out-of-enum"
	MalformedJSON    Class = "malformed-json"
	HostilePathID    Class = "hostile-path-id"
	NotAnObject      Class = "not-an-object"
	OutOfRange       Class = "out-of-range"
	BadFormat        Class = "bad-format"
	HostileQuery     Class = "hostile-query"
	OversizedString  Class = "oversized-string"
	DeepNesting      Class = "deep-nesting"
	DuplicateKey     Class = "duplicate-key"
	InvalidUTF8      Class = "invalid-utf8"
	WrongContentType Class = "wrong-content-type"
	EmptyString      Class = "empty-string"
	EmptyArray       Class = "empty-array"
	OversizedArray   Class = "oversized-array"
	EmptyBody        Class = "empty-body"
	UnknownMember    Class = "unknown-member"
)

// Classes lists every class in draw order.
var Classes = []Class{WrongType, MissingRequired, OutOfEnum, MalformedJSON, HostilePathID, NotAnObject, OutOfRange,
	BadFormat, HostileQuery, OversizedString, DeepNesting, DuplicateKey, InvalidUTF8, WrongContentType, EmptyString,
	EmptyArray, OversizedArray, EmptyBody, UnknownMember}

// sized classes shrink by size.
func (c Class) sized() bool {
	return c == OversizedString || c == OversizedArray || c == DeepNesting
}

// Where a mutation acts.
const (
	InBody   = "body"
	InQuery  = "query"
	InPath   = "path"
	InHeader = "header"
)

// Mutation is one change to a valid request.
type Mutation struct {
	Class Class
	In    string   // InBody, InQuery, InPath, InHeader
	Ptr   []string // body: the member's path (array indexes as decimals); query, path, header: [name]
	// Value is what is put there: a body value (decoded JSON, raw or
	// big), a query value ([]string), a path segment (escaped as sent) or a
	// header value. Remove removes a body member or query parameter.
	Value  any
	Remove bool
	// Whole, for a body-wide change, names it: "truncated", "trailing-comma",
	// "single-quotes", "trailing-garbage", "comment", "first-wins",
	// "last-wins"; Body replaces the whole body (not an object, empty).
	Whole string
	Body  []byte
	// Size is the size of a sized class's value (characters, items or
	// depth): the shrinker makes it as small as still fails.
	Size int
	// What says what the value is, for a reader: "a number where the
	// document wants a string".
	What string
}

// Member names a body member as a dotted path ("message.parts[0].role"),
// a parameter by its name, "" for a body-wide change.
func (m Mutation) Member() string {
	switch m.In {
	case InBody:
		return dotted(m.Ptr)
	default:
		if len(m.Ptr) > 0 {
			return m.Ptr[0]
		}
	}
	return ""
}

// Leaf is the last name of the member ("role"), for grouping and for
// matching error.param.
func (m Mutation) Leaf() string {
	for i := len(m.Ptr) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(m.Ptr[i]); err != nil {
			return m.Ptr[i]
		}
	}
	return ""
}

// String describes the mutation: "body member input.role = 42 (a number
// where the document wants a string)".
func (m Mutation) String() string {
	var b strings.Builder
	switch {
	case m.In == InBody && m.Whole != "":
		fmt.Fprintf(&b, "the body, %s", m.What)
		return b.String()
	case m.In == InBody && m.Body != nil || m.In == InBody && m.Class == EmptyBody:
		fmt.Fprintf(&b, "the body %s", m.What)
		return b.String()
	case m.In == InBody && m.Remove:
		fmt.Fprintf(&b, "body member %s removed (%s)", m.Member(), m.What)
		return b.String()
	case m.In == InBody:
		fmt.Fprintf(&b, "body member %s = %s (%s)", m.Member(), preview(sizedValue(m)), m.What)
	case m.In == InQuery && m.Remove:
		fmt.Fprintf(&b, "query parameter %s removed (%s)", m.Member(), m.What)
	case m.In == InQuery:
		fmt.Fprintf(&b, "query parameter %s = %s (%s)", m.Member(), preview(m.Value), m.What)
	case m.In == InPath:
		fmt.Fprintf(&b, "path parameter %s = %s (%s)", m.Member(), preview(m.Value), m.What)
	case m.In == InHeader:
		fmt.Fprintf(&b, "header %s: %s (%s)", m.Member(), preview(m.Value), m.What)
	}
	return b.String()
}

func dotted(ptr []string) string {
	var b strings.Builder
	for _, t := range ptr {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// raw is a JSON fragment spliced into a body as is (it may be invalid:
// NaN, invalid UTF-8 in a string).
type raw string

// big is a large value written without holding it: a string of n
// characters, an array of n items, or arrays nested n deep.
type big struct {
	kind string // "string", "array", "nest"
	n    int
	item any // an array's item (nil: "x")
}

func preview(v any) string {
	switch x := v.(type) {
	case raw:
		return jsonv.Clean(string(x), 60)
	case big:
		switch x.kind {
		case "string":
			return fmt.Sprintf("a string of %d characters", x.n)
		case "array":
			return fmt.Sprintf("an array of %d items", x.n)
		default:
			return fmt.Sprintf("arrays nested %d deep", x.n)
		}
	case []string:
		return strings.Join(x, ", ")
	case string:
		return jsonv.Quote(jsonv.Clean(x, 80))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return jsonv.Clean(string(b), 80)
}

// Base is a valid request of one operation: what every mutation of the
// operation starts from.
type Base struct {
	Op openapi.Operation
	// PathIDs are real values of the path parameters, by name; a missing
	// one is made up (then only the path itself is mutated: a body or a
	// query sent to a resource that does not exist tests nothing but the
	// 404).
	PathIDs map[string]string
	Query   url.Values
	// Body is a body the operation accepts, nil for none.
	Body map[string]any
}

// Ready reports whether every path parameter has a real value.
func (b Base) Ready() bool {
	for _, p := range b.Op.PathParams {
		if b.PathIDs[p] == "" {
			return false
		}
	}
	return true
}

// Built is one request ready to send.
type Built struct {
	base   map[string]any // the base's body, before the mutations
	Op     openapi.Operation
	Method string
	Path   string // escaped as sent, below the protocol root
	Query  url.Values
	Header http.Header
	Body   []byte // nil: none
	Muts   []Mutation
}

// madeUp is the value of a path parameter that has no real one.
const madeUp = "conform-negative-absent"

// Apply builds base with muts applied.
func Apply(base Base, muts []Mutation) Built {
	b := Built{base: base.Body, Op: base.Op, Method: base.Op.Method, Muts: muts, Header: http.Header{}}
	segs := map[string]string{}
	for _, p := range base.Op.PathParams {
		v := base.PathIDs[p]
		if v == "" {
			v = madeUp
		}
		segs[p] = url.PathEscape(v)
	}
	q := url.Values{}
	for k, v := range base.Query {
		q[k] = append([]string(nil), v...)
	}
	var body any
	if base.Body != nil {
		body = jsonv.Copy(base.Body)
	}
	var whole *Mutation
	for i := range muts {
		m := muts[i]
		switch m.In {
		case InPath:
			segs[m.Member()], _ = m.Value.(string)
		case InQuery:
			if m.Remove {
				q.Del(m.Member())
			} else if vs, ok := m.Value.([]string); ok {
				q[m.Member()] = vs
			}
		case InHeader:
			s, _ := m.Value.(string)
			b.Header.Set(m.Member(), s)
		case InBody:
			switch {
			case m.Whole != "" || m.Body != nil || m.Class == EmptyBody:
				whole = &muts[i]
			case m.Remove:
				body = remove(body, m.Ptr)
			default:
				body = set(body, m.Ptr, sizedValue(m))
			}
		}
	}
	path := base.Op.Template
	for _, p := range base.Op.PathParams {
		path = strings.Replace(path, "{"+p+"}", segs[p], 1)
	}
	b.Path = path
	if len(q) > 0 {
		b.Query = q
	}
	if body != nil {
		b.Body = encode(body)
	}
	if whole != nil {
		b.Body = wholeBody(*whole, b.Body)
	}
	if b.Body != nil && b.Header.Get("Content-Type") == "" {
		b.Header.Set("Content-Type", "application/json")
	}
	return b
}

// sizedValue is a mutation's value with its Size applied.
func sizedValue(m Mutation) any {
	if bg, ok := m.Value.(big); ok && m.Size > 0 {
		bg.n = m.Size
		return bg
	}
	return m.Value
}

// set puts v at ptr inside root (copied already), creating the member; a
// path through something that is not an object or array leaves root as it
// is.
func set(root any, ptr []string, v any) any {
	if len(ptr) == 0 {
		return v
	}
	switch x := root.(type) {
	case map[string]any:
		x[ptr[0]] = set(x[ptr[0]], ptr[1:], v)
		return x
	case []any:
		i, err := strconv.Atoi(ptr[0])
		if err != nil || i < 0 || i >= len(x) {
			return x
		}
		x[i] = set(x[i], ptr[1:], v)
		return x
	case nil:
		if len(ptr) == 1 {
			return map[string]any{ptr[0]: v}
		}
	}
	return root
}

func remove(root any, ptr []string) any {
	if len(ptr) == 0 {
		return root
	}
	switch x := root.(type) {
	case map[string]any:
		if len(ptr) == 1 {
			delete(x, ptr[0])
			return x
		}
		x[ptr[0]] = remove(x[ptr[0]], ptr[1:])
	case []any:
		i, err := strconv.Atoi(ptr[0])
		if err == nil && i >= 0 && i < len(x) {
			if len(ptr) == 1 {
				return append(x[:i:i], x[i+1:]...)
			}
			x[i] = remove(x[i], ptr[1:])
		}
	}
	return root
}

// encode writes a body deterministically (members sorted), splicing raw
// fragments and big values as they are.
func encode(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case raw:
		b.WriteString(string(x))
	case big:
		switch x.kind {
		case "string":
			b.WriteByte('"')
			b.Write(bytes.Repeat([]byte("x"), x.n))
			b.WriteByte('"')
		case "array":
			item := []byte(`"x"`)
			if x.item != nil {
				item = encode(x.item)
			}
			b.WriteByte('[')
			for i := 0; i < x.n; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				b.Write(item)
			}
			b.WriteByte(']')
		default:
			b.Write(bytes.Repeat([]byte("["), x.n))
			b.Write(bytes.Repeat([]byte("]"), x.n))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	default:
		eb, err := json.Marshal(x)
		if err != nil {
			eb = []byte("null")
		}
		b.Write(eb)
	}
}

// wholeBody applies a body-wide change to the encoded body.
func wholeBody(m Mutation, body []byte) []byte {
	if m.Class == EmptyBody {
		return []byte{}
	}
	if m.Body != nil {
		return m.Body
	}
	s := string(body)
	switch m.Whole {
	case "truncated":
		return []byte(s[:len(s)/2])
	case "trailing-comma":
		if i := strings.LastIndexByte(s, '}'); i > 0 {
			return []byte(s[:i] + ",}")
		}
	case "single-quotes":
		return []byte(strings.ReplaceAll(s, `"`, `'`))
	case "trailing-garbage":
		return []byte(s + ` conform`)
	case "comment":
		return []byte("/* conform */" + s)
	case "first-wins", "last-wins":
		// m.Value is the member's other value, put before (first-wins
		// parsers see it) or after (last-wins parsers see it) the real one.
		kb, _ := json.Marshal(m.Member())
		dup := string(kb) + ":" + string(encode(m.Value))
		if m.Whole == "first-wins" && strings.HasPrefix(s, "{") {
			rest := s[1:]
			if rest != "}" {
				dup += ","
			}
			return []byte("{" + dup + rest)
		}
		if i := strings.LastIndexByte(s, '}'); i > 0 {
			sep := ","
			if strings.TrimSpace(s[:i]) == "{" {
				sep = ""
			}
			return []byte(s[:i] + sep + dup + "}")
		}
	}
	return body
}

// --- generation ---------------------------------------------------------------

// Generate lists every candidate mutation of base, in a fixed order. rng
// picks the sizes of the sized classes; the plan draws from the list.
func Generate(d *openapi.Doc, base Base, rng *rand.Rand) []Mutation {
	g := &gen{d: d, rng: rng}
	g.path(base)
	if base.Ready() {
		g.query(base)
		if base.Body != nil {
			if s, ok := d.RequestSchema(base.Op.ID); ok {
				g.body(base, shapeOf(d, s))
			}
		}
	}
	return g.out
}

type gen struct {
	d   *openapi.Doc
	rng *rand.Rand
	out []Mutation
}

func (g *gen) add(m Mutation) { g.out = append(g.out, m) }

// hostileIDs are path segments (escaped as sent) no resource has: an
// encoded slash, traversal, a long id, invalid UTF-8, NUL, spaces, quotes,
// a double encoding, an unencoded slash.
var hostileIDs = []struct{ seg, what string }{
	{"conform%2Fnegative", "an id with an encoded slash"},
	{"conform/negative", "an id with a slash, unencoded"},
	{"%2E%2E", "an encoded .. segment"},
	{"conform%FF%FE", "an id that is not UTF-8"},
	{"conform%00negative", "an id with a NUL byte"},
	{"conform%20negative%20", "an id with spaces"},
	{"conform%27%22%3C%3E%3B", "an id with quotes and markup"},
	{"conform%252Fnegative", "a double-encoded slash"},
	{"%F0%9F%98%80conform", "an id with an emoji"},
}

func (g *gen) path(base Base) {
	for _, p := range base.Op.PathParams {
		for _, h := range hostileIDs {
			g.add(Mutation{Class: HostilePathID, In: InPath, Ptr: []string{p}, Value: h.seg, What: h.what})
		}
		g.add(Mutation{Class: HostilePathID, In: InPath, Ptr: []string{p}, Value: strings.Repeat("a", 2048), What: "an id of 2048 characters"})
		if real := base.PathIDs[p]; real != "" {
			g.add(Mutation{Class: HostilePathID, In: InPath, Ptr: []string{p}, Value: "conform%2F..%2F" + url.PathEscape(real),
				What: "a traversal that ends at a real id"})
			g.add(Mutation{Class: HostilePathID, In: InPath, Ptr: []string{p}, Value: url.PathEscape(real) + "%2F..",
				What: "a real id followed by /.."})
		}
	}
}

func (g *gen) query(base Base) {
	if base.Op.Stream {
		return // a stream that opens is held, not judged
	}
	for _, p := range g.d.Params(base.Op.ID) {
		if p.In != "query" {
			continue
		}
		s := shapeOf(g.d, p.Schema)
		add := func(v []string, what string) {
			g.add(Mutation{Class: HostileQuery, In: InQuery, Ptr: []string{p.Name}, Value: v, What: what})
		}
		if s.allows("integer") || s.allows("number") {
			add([]string{"conform"}, "not a number")
			add([]string{"1.5"}, "a fraction")
			add([]string{"-1"}, "a negative number")
			add([]string{"99999999999999999999999"}, "a number past 64 bits")
			if s.min != nil {
				add([]string{strconv.FormatInt(int64(*s.min)-1, 10)}, "below the minimum")
			}
			if s.max != nil {
				add([]string{strconv.FormatInt(int64(*s.max)+1, 10)}, "above the maximum")
			}
			add([]string{"1", "conform"}, "given twice")
		} else {
			add([]string{strings.Repeat("q", 4096)}, "a value of 4096 characters")
			add([]string{"conform\xff\xfe"}, "a value that is not UTF-8")
			add([]string{"conform-negative-unknown"}, "an unknown value")
		}
		add([]string{""}, "an empty value")
	}
	g.add(Mutation{Class: HostileQuery, In: InQuery, Ptr: []string{"conform_unknown"}, Value: []string{"1"}, What: "a parameter the operation does not declare"})
}

// Oversized sizes: most draws stay small enough to be cheap; some pass the
// 1 MiB limit servers often have, a few go well past it.
var stringSizes = []int{64 << 10, 64 << 10, 64 << 10, 1<<20 + 1, 4 << 20}
var nestDepths = []int{512, 4096, 4096, 100000}

func (g *gen) body(base Base, top shape) {
	g.walk(nil, base.Body, top, true)
	// Members the base does not send: a wrong type or a value outside
	// the enum there too (optional members are where unchecked type
	// assertions hide).
	for _, name := range sortedKeys(top.props) {
		if _, ok := base.Body[name]; ok {
			continue
		}
		g.leafMutations([]string{name}, nil, shapeOf(g.d, top.props[name]), false)
	}
	// The body as a whole.
	for _, w := range []struct{ name, what string }{
		{"truncated", "cut in half (not JSON)"},
		{"trailing-comma", "with a trailing comma (not JSON)"},
		{"single-quotes", "with single quotes (not JSON)"},
		{"trailing-garbage", "followed by a word (not JSON)"},
		{"comment", "starting with a comment (not JSON)"},
	} {
		g.add(Mutation{Class: MalformedJSON, In: InBody, Whole: w.name, What: w.what})
	}
	for _, nb := range []struct{ body, what string }{
		{"[]", "is a JSON array"}, {`"conform"`, "is a JSON string"}, {"42", "is a JSON number"}, {"null", "is JSON null"},
	} {
		g.add(Mutation{Class: NotAnObject, In: InBody, Body: []byte(nb.body), What: nb.what + ", not an object"})
	}
	if base.Op.BodyRequired {
		g.add(Mutation{Class: EmptyBody, In: InBody, What: "is empty"})
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/xml"} {
		g.add(Mutation{Class: WrongContentType, In: InHeader, Ptr: []string{"Content-Type"}, Value: ct, What: "the body is JSON"})
	}
	// Duplicate keys: a top-level member sent twice, once with a value of
	// the wrong type, first or last.
	for _, name := range sortedKeys(base.Body) {
		s := shapeOf(g.d, top.props[name])
		w, what, ok := wrongValue(s)
		if !ok {
			continue
		}
		g.add(Mutation{Class: DuplicateKey, In: InBody, Ptr: []string{name}, Whole: "first-wins", Value: w, What: "sent twice, first as " + what})
		g.add(Mutation{Class: DuplicateKey, In: InBody, Ptr: []string{name}, Whole: "last-wins", Value: w, What: "sent twice, last as " + what})
	}
}

// walk generates the mutations of the value v at ptr, described by s.
func (g *gen) walk(ptr []string, v any, s shape, present bool) {
	if len(s.alts) > 0 {
		if b, ok := s.branch(g.d, v); ok {
			// Keep the alternatives' own type: the branch's is the one v has.
			s = b
		}
	}
	if len(ptr) > 0 {
		g.leafMutations(ptr, v, s, present)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.required {
			if _, ok := x[name]; ok {
				g.add(Mutation{Class: MissingRequired, In: InBody, Ptr: appendTok(ptr, name), Remove: true, What: "a required member"})
			}
		}
		for _, name := range sortedKeys(x) {
			ps, ok := s.props[name]
			if !ok {
				continue
			}
			g.walk(appendTok(ptr, name), x[name], shapeOf(g.d, ps), true)
		}
		if s.closed {
			g.add(Mutation{Class: UnknownMember, In: InBody, Ptr: appendTok(ptr, "conform_unknown_member"), Value: "conform", What: "a member the closed schema does not allow"})
		} else if s.open {
			g.add(Mutation{Class: UnknownMember, In: InBody, Ptr: appendTok(ptr, "conform_unknown_member"), Value: "conform", What: "a member the open schema does not name"})
		}
		if s.open && len(s.props) == 0 {
			// A free-form object (metadata, a JSON object): nesting.
			g.add(Mutation{Class: DeepNesting, In: InBody, Ptr: appendTok(ptr, "conform_nested"), Value: big{kind: "nest"}, Size: pick(g.rng, nestDepths), What: "arrays nested deep"})
		}
	case []any:
		if len(x) > 0 && s.items != nil {
			g.walk(appendTok(ptr, "0"), x[0], shapeOf(g.d, s.items), true)
		}
	}
}

// leafMutations are the mutations of one member's own value.
func (g *gen) leafMutations(ptr []string, v any, s shape, present bool) {
	if s.any() {
		if len(ptr) > 0 {
			g.add(Mutation{Class: DeepNesting, In: InBody, Ptr: ptr, Value: big{kind: "nest"}, Size: pick(g.rng, nestDepths), What: "arrays nested deep where any JSON value is allowed"})
		}
		return
	}
	if w, what, ok := wrongValue(s); ok {
		g.add(Mutation{Class: WrongType, In: InBody, Ptr: ptr, Value: w, What: what})
	}
	if !present && s.open && len(s.props) == 0 && len(s.alts) == 0 {
		// A free-form object the base does not send (metadata): one with
		// a deeply nested member.
		g.add(Mutation{Class: DeepNesting, In: InBody, Ptr: appendTok(ptr, "conform_nested"), Value: big{kind: "nest"}, Size: pick(g.rng, nestDepths), What: "arrays nested deep in a free-form object"})
	}
	if !s.allows("null") && len(s.alts) == 0 {
		g.add(Mutation{Class: WrongType, In: InBody, Ptr: ptr, Value: nil, What: "null where the document wants " + typeList(s)})
	}
	if s.enum != nil {
		g.add(Mutation{Class: OutOfEnum, In: InBody, Ptr: ptr, Value: "conform_future_value", What: "a value outside the enum, as a newer version might send"})
		if e, ok := s.enum[0].(string); ok && strings.ToUpper(e) != e {
			g.add(Mutation{Class: OutOfEnum, In: InBody, Ptr: ptr, Value: strings.ToUpper(e), What: "an enum value in the wrong case"})
		}
	}
	if s.allows("integer") || s.allows("number") {
		if s.min != nil {
			g.add(Mutation{Class: OutOfRange, In: InBody, Ptr: ptr, Value: json.Number(strconv.FormatInt(int64(*s.min)-1, 10)), What: "below the minimum"})
		}
		if s.max != nil {
			g.add(Mutation{Class: OutOfRange, In: InBody, Ptr: ptr, Value: json.Number(strconv.FormatInt(int64(*s.max)+1, 10)), What: "above the maximum"})
		}
		if s.types["integer"] {
			g.add(Mutation{Class: WrongType, In: InBody, Ptr: ptr, Value: json.Number("1.5"), What: "a fraction where the document wants an integer"})
		}
		g.add(Mutation{Class: OutOfRange, In: InBody, Ptr: ptr, Value: raw("1e400"), What: "a number no 64-bit float holds"})
	}
	if s.allows("string") && s.enum == nil {
		if s.format == "date-time" {
			g.add(Mutation{Class: BadFormat, In: InBody, Ptr: ptr, Value: "2026-13-45T99:99:99Z", What: "not a date-time"})
		}
		if s.pattern != "" {
			g.add(Mutation{Class: BadFormat, In: InBody, Ptr: ptr, Value: "conform-not-matching", What: "off the pattern " + s.pattern})
		}
		if present {
			g.add(Mutation{Class: EmptyString, In: InBody, Ptr: ptr, Value: "", What: "an empty string"})
		}
		g.add(Mutation{Class: OversizedString, In: InBody, Ptr: ptr, Value: big{kind: "string"}, Size: pick(g.rng, stringSizes), What: "an oversized string"})
		g.add(Mutation{Class: InvalidUTF8, In: InBody, Ptr: ptr, Value: raw("\"conform\xff\xfe\""), What: "a string that is not UTF-8"})
		g.add(Mutation{Class: InvalidUTF8, In: InBody, Ptr: ptr, Value: raw(`"conform\ud800"`), What: "a string with a lone surrogate escape"})
	}
	if s.allows("array") {
		if present {
			g.add(Mutation{Class: EmptyArray, In: InBody, Ptr: ptr, Value: []any{}, What: "an empty array"})
		}
		// Copies of the array's own first item: an array too long, not one
		// of wrong items.
		var item any
		if a, ok := v.([]any); ok && len(a) > 0 {
			item = a[0]
		}
		g.add(Mutation{Class: OversizedArray, In: InBody, Ptr: ptr, Value: big{kind: "array", item: item}, Size: 10000, What: "an oversized array"})
		if s.items != nil {
			if w, what, ok := wrongValue(shapeOf(g.d, s.items)); ok {
				g.add(Mutation{Class: WrongType, In: InBody, Ptr: ptr, Value: []any{w}, What: "an array whose item is " + what})
			}
		}
	}
}

// wrongValue is a value of a JSON type the shape does not allow, and
// what it is.
func wrongValue(s shape) (any, string, bool) {
	if s.any() {
		return nil, "", false
	}
	want := typeList(s)
	switch {
	case !s.allows("string"):
		return "conform", "a string where the document wants " + want, true
	case !s.allows("integer") && !s.allows("number"):
		return json.Number("42"), "a number where the document wants " + want, true
	case !s.allows("object"):
		return map[string]any{"conform": true}, "an object where the document wants " + want, true
	case !s.allows("boolean"):
		return true, "a boolean where the document wants " + want, true
	}
	return nil, "", false
}

func typeList(s shape) string {
	var ts []string
	for t := range s.types {
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		for _, a := range s.alts {
			_ = a
		}
		if len(s.alts) > 0 {
			return "one of its alternatives"
		}
		return "another type"
	}
	sort.Strings(ts)
	return strings.Join(ts, " or ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func appendTok(ptr []string, t string) []string {
	return append(ptr[:len(ptr):len(ptr)], t)
}

func pick(rng *rand.Rand, xs []int) int {
	if rng == nil {
		return xs[0]
	}
	return xs[rng.IntN(len(xs))]
}
