package refharness

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// ProtocolVersion is the only protocol version this harness speaks.
const ProtocolVersion = "agents-protocol-2026-04-25"

// VersionHeader carries the protocol version on every non-public request.
const VersionHeader = "Harn-Agents-Protocol-Version"

// Options configures a Server. The zero value is a working in-memory harness
// that accepts no API keys (every authenticated route answers 401).
type Options struct {
	// DataDir holds the event log; "" keeps everything in memory.
	DataDir string
	// APIKeys maps an API key to the actor id it authenticates.
	APIKeys map[string]string
	// Clock returns the current time; nil means time.Now. Output is always UTC.
	Clock func() time.Time
	// IDs mints resource ids; nil means kind-prefixed random ids that are never reused.
	IDs IDSource
	// MaxBodyBytes bounds request bodies; 0 means 1 MiB. Larger bodies get 413.
	MaxBodyBytes int64
	// Faults breaks named requirements on purpose, for self-tests only.
	Faults Faults
	// Variants turns on legal-but-unusual behaviours a conformance suite must accept.
	Variants Variants
	// EventRetention is how many of the most recent events stay readable and
	// usable as resume cursors; older cursors get cursor_expired. 0 means all.
	EventRetention int
	// KeepAlive is the interval of SSE keep-alive comments; 0 means 15 s.
	KeepAlive time.Duration
	// IdempotencyTTL is how long idempotency records are honoured; 0 means 24 h.
	// Values below 24 h are raised to 24 h, the protocol's minimum.
	IdempotencyTTL time.Duration
	// Tenants puts actors in a tenant (actor -> tenant id); an actor not
	// listed is a tenant of its own. A caller sees only its tenant's
	// resources (authz.go).
	Tenants map[string]string
	// ReadOnly lists actors that may read what their tenant sees but not
	// change anything: their writes get 403 permission_denied (authz.go).
	ReadOnly map[string]bool
}

// The reference Harness's actors (docs/interpretations.md#authz-tenancy):
// the first key's, a tenant of its own for the authorization checks'
// second actor, and one in the first actor's tenant that may only read.
const (
	ActorDefault  = "actor_default"
	ActorSecond   = "actor_second"
	ActorReadOnly = "actor_read_only"
)

// Actors are the API keys of the three actors; an empty Second or
// ReadOnly leaves that actor out.
type Actors struct{ Default, Second, ReadOnly string }

// WithActors sets opts's APIKeys, Tenants and ReadOnly to the actors of
// a. Every built-in reference Harness (conform serve, the in-process
// one, the proof runs' wrapserve) sets its actors here. Two actors with
// one key are refused: a key authenticates one actor.
func (o Options) WithActors(a Actors) (Options, error) {
	if a.Default == "" {
		return o, fmt.Errorf("refharness: no API key for %s", ActorDefault)
	}
	o.APIKeys = map[string]string{a.Default: ActorDefault}
	for _, k := range []struct{ key, actor string }{{a.Second, ActorSecond}, {a.ReadOnly, ActorReadOnly}} {
		if k.key == "" {
			continue
		}
		if other, dup := o.APIKeys[k.key]; dup {
			return o, fmt.Errorf("refharness: the key of %s is the key of %s too: give each actor its own key", k.actor, other)
		}
		o.APIKeys[k.key] = k.actor
	}
	o.Tenants, o.ReadOnly = nil, nil
	if a.ReadOnly != "" {
		o.Tenants = map[string]string{ActorReadOnly: ActorDefault}
		o.ReadOnly = map[string]bool{ActorReadOnly: true}
	}
	return o, nil
}

// IDSource mints unique ids. kind is the resource kind ("task", "session", …).
type IDSource interface{ NewID(kind string) string }

// randomIDs is the default IDSource: kind + "_" + 48-bit millisecond time +
// 80 random bits in Crockford base32, like a ULID. Ids sort by creation time
// and, with 80 random bits, are not reused across restarts.
type randomIDs struct{ clock func() time.Time }

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func (r randomIDs) NewID(kind string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(r.clock().UnixMilli())<<16)
	if _, err := rand.Read(b[6:16]); err != nil {
		panic("refharness: crypto/rand failed: " + err.Error()) // the OS random source is gone; nothing is safe
	}
	// 128 bits -> 26 base32 characters.
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return kind + "_" + string(out)
}

// SeqIDs is a deterministic IDSource for tests and golden files: kind_000001,
// kind_000002, … with one counter per kind. Its counters start over when a
// server restarts over an existing DataDir; the server then skips ids that are
// already taken, so none is recycled.
type SeqIDs struct {
	mu sync.Mutex
	n  map[string]int
}

// NewID implements IDSource.
func (s *SeqIDs) NewID(kind string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[kind]++
	return fmt.Sprintf("%s_%06d", kind, s.n[kind])
}

// Fault names a requirement (or a few that observe one behaviour) the
// server breaks on purpose; its declaration (Decl) says which. Each is
// declared once, by declare in the file of the area it breaks.
type Fault string

// Faults is a set of faults; the zero value breaks nothing.
type Faults map[Fault]bool

// Has reports whether f is on.
func (fs Faults) Has(f Fault) bool { return fs[f] }

// faults are the in-server faults, as declared.
var faults fault.Set[fault.Fault]

// declare declares an in-server fault (package fault: a flag this package
// reads where it acts).
func declare(f fault.Fault) Fault {
	f.Kind = fault.InServer
	return Fault(faults.Add(f))
}

// Decl is the declaration of f: its doc line, the requirements it fails or
// warns about, and how its proof row runs.
func (f Fault) Decl() (fault.Fault, bool) { return faults.Lookup(string(f)) }

// FaultDecls lists every fault's declaration, sorted by name.
func FaultDecls() []fault.Fault { return faults.All() }

// AllFaults lists every fault, sorted by name.
func AllFaults() []Fault {
	var out []Fault
	for _, d := range faults.All() {
		out = append(out, Fault(d.Name))
	}
	return out
}

// WSFaults lists the faults of the WebSocket profile (their requirements
// are EXT-WS-*): they act where package wsadapter is mounted, and their
// probes are that package's.
func WSFaults() []Fault {
	var out []Fault
	for _, d := range faults.All() {
		if !slices.ContainsFunc(d.Own(), func(id string) bool { return !strings.HasPrefix(id, "EXT-WS-") }) {
			out = append(out, Fault(d.Name))
		}
	}
	return out
}

// Variant names a legal but unusual behaviour a conformance suite must
// accept. Each is declared once, by declareVariant in the file of its area.
type Variant string

// Variants is a set of variants; the zero value is the plain behaviour.
type Variants map[Variant]bool

// Has reports whether v is on.
func (vs Variants) Has(v Variant) bool { return vs[v] }

// variants are the in-server variants, as declared.
var variants fault.Set[fault.Variant]

// declareVariant declares an in-server variant.
func declareVariant(v fault.Variant) Variant {
	v.Kind = fault.InServer
	return Variant(variants.Add(v))
}

// Decl is the declaration of v.
func (v Variant) Decl() (fault.Variant, bool) { return variants.Lookup(string(v)) }

// VariantDecls lists every variant's declaration, sorted by name.
func VariantDecls() []fault.Variant { return variants.All() }

// AllVariants lists every variant, sorted by name.
func AllVariants() []Variant {
	var out []Variant
	for _, d := range variants.All() {
		out = append(out, Variant(d.Name))
	}
	return out
}
