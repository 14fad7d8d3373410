// Package fidelity is the replay fidelity oracle of spec 003: it compares
// two event tapes under one of four modes and lists every divergence with a
// stable category tag in a FidelityReport.
//
// Tapes are streamed one record at a time from both sides; CAS payloads
// are never read, because the oracle compares content hashes only. Memory
// is independent of tape length in the record-by-record modes; the outcome
// mode keeps one entry per written path.
package fidelity

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/harn-conform/conform/internal/tape"
)

// Mode is a comparison strictness.
type Mode string

// The four modes of spec 003.
const (
	ByteIdentical Mode = "byte-identical"
	Semantic      Mode = "semantic"
	Outcome       Mode = "outcome"
	PhaseAware    Mode = "phase-aware"
)

// Modes lists the four modes, the default (byte-identical) first.
// Phase-aware and semantic are not ordered: each ignores something the
// other compares.
var Modes = []Mode{ByteIdentical, PhaseAware, Semantic, Outcome}

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q, want one of byte-identical, semantic, outcome, phase-aware", s)
}

// DefaultMaxDivergences bounds the divergences a report lists when Options
// leaves MaxDivergences zero. Two unrelated 100,000-record tapes would
// otherwise produce a report larger than the tapes.
const DefaultMaxDivergences = 10000

// Options control a comparison.
type Options struct {
	Mode Mode
	// MaxDivergences bounds the listed divergences (all are still counted).
	MaxDivergences int
}

// Compare compares tape A with tape B. Given a known mode it always
// returns a report; an unknown mode is the only way to get none. The
// error is non-nil when a tape could not be read to the end; the report
// then has status "error" and a version_unsupported or unreadable_input
// divergence naming the input, and errors.As finds the *tape.Error.
func Compare(a, b Source, opt Options) (*Report, error) {
	if _, err := ParseMode(string(opt.Mode)); err != nil {
		return nil, err
	}
	c := &comparison{
		rep: &Report{
			Schema: Schema, Mode: opt.Mode,
			A: Input{Name: a.Name}, B: Input{Name: b.Name},
			ByCategory: make(map[Category]int), Divergences: []Divergence{},
		},
		max: opt.MaxDivergences,
	}
	if c.max <= 0 {
		c.max = DefaultMaxDivergences
	}
	var err error
	switch opt.Mode {
	case ByteIdentical:
		err = c.records(a, b, "all", nil, true, true)
	case Semantic:
		err = c.records(a, b, "all", nil, false, true)
	case PhaseAware:
		user := func(r tape.Record) bool { return r.Phase == tape.PhaseUserScript }
		// Runtime-finalize clock reads are left out so lifecycle
		// observability can grow without touching user-script fixtures.
		final := func(r tape.Record) bool {
			return r.Phase == tape.PhaseRuntimeFinalize && r.Kind() != tape.KindClockRead
		}
		err = c.records(a, b, string(tape.PhaseUserScript), user, true, true)
		if err == nil {
			err = c.records(a, b, string(tape.PhaseRuntimeFinalize), final, false, false)
		}
	case Outcome:
		err = c.outcome(a, b)
	}
	rep := c.rep
	switch {
	case err != nil:
		rep.Status = StatusError
	case rep.DivergenceCount > 0:
		rep.Status = StatusDiverged
	default:
		rep.Status = StatusEqual
	}
	return rep, err
}

type comparison struct {
	rep *Report
	max int
}

func (c *comparison) add(d Divergence) {
	c.rep.DivergenceCount++
	c.rep.ByCategory[d.Category]++
	if len(c.rep.Divergences) >= c.max {
		c.rep.Truncated = true
		return
	}
	c.rep.Divergences = append(c.rep.Divergences, d)
}

// stream reads the records of one tape that pass a filter.
type stream struct {
	r       io.ReadCloser
	tr      *tape.Reader
	keep    func(tape.Record) bool
	read    int // records read, kept or not
	unknown int
}

func (s *stream) next() (tape.Record, bool, error) {
	for {
		rec, err := s.tr.Next()
		if err == io.EOF {
			return rec, false, nil
		}
		if err != nil {
			return rec, false, err
		}
		s.read++
		if rec.Kind() == tape.KindUnknown {
			s.unknown++
		}
		if s.keep == nil || s.keep(rec) {
			return rec, true, nil
		}
	}
}

// open opens both tapes and reads their headers. On failure it records an
// input divergence for each side that failed and returns the errors
// joined (errors.As still finds each *tape.Error).
func (c *comparison) open(a, b Source, keep func(tape.Record) bool) (sa, sb *stream, err error) {
	sa, errA := openStream(a, keep)
	sb, errB := openStream(b, keep)
	if errA != nil {
		c.inputError("a", errA)
	}
	if errB != nil {
		c.inputError("b", errB)
	}
	if errA != nil || errB != nil {
		if sa != nil {
			sa.r.Close()
		}
		if sb != nil {
			sb.r.Close()
		}
		return nil, nil, errors.Join(errA, errB)
	}
	for _, x := range []struct {
		s  *stream
		in *Input
	}{{sa, &c.rep.A}, {sb, &c.rep.B}} {
		h := x.s.tr.Header()
		x.in.Version, x.in.HarnVersion = h.Version, h.HarnVersion
	}
	return sa, sb, nil
}

func openStream(src Source, keep func(tape.Record) bool) (*stream, error) {
	r, err := src.Open()
	if err != nil {
		return nil, &tape.Error{Name: src.Name, Code: tape.CodeIO, Msg: err.Error()}
	}
	tr, err := tape.NewReader(r, src.Name)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &stream{r: r, tr: tr, keep: keep}, nil
}

func (c *comparison) inputError(side string, err error) {
	cat := UnreadableInput
	var te *tape.Error
	if errors.As(err, &te) && te.Code == tape.CodeVersionUnsupported {
		cat = VersionUnsupported
	}
	c.add(Divergence{Category: cat, Input: side, Message: err.Error()})
}

// finish records how much of each tape was read. Every pass reads both
// tapes to the end, so the last pass's counts are the tapes' totals.
func (c *comparison) finish(sa, sb *stream) {
	c.rep.A.Records, c.rep.A.Unknown = sa.read, sa.unknown
	c.rep.B.Records, c.rep.B.Unknown = sb.read, sb.unknown
	sa.r.Close()
	sb.r.Close()
}

// records aligns the kept records of both tapes by position and compares
// each pair. strict adds seq and timing; phase says whether phases are
// compared (they always match when the filter selects one phase).
func (c *comparison) records(a, b Source, name string, keep func(tape.Record) bool, strict, phase bool) error {
	sa, sb, err := c.open(a, b, keep)
	if err != nil {
		return err
	}
	defer c.finish(sa, sb)
	for i := 0; ; i++ {
		ra, okA, err := sa.next()
		if err != nil {
			c.inputError("a", err)
			return err
		}
		rb, okB, err := sb.next()
		if err != nil {
			c.inputError("b", err)
			return err
		}
		switch {
		case !okA && !okB:
			return nil
		case okA && !okB:
			c.unaligned(name, i, MissingRecord, ra, sa.tr.Line(), true)
		case !okA && okB:
			c.unaligned(name, i, ExtraRecord, rb, sb.tr.Line(), false)
		default:
			c.rep.Compared++
			p := pair{c: c, stream: name, index: i, a: ra, b: rb, lineA: sa.tr.Line(), lineB: sb.tr.Line()}
			p.compare(strict, phase)
		}
	}
}

// unaligned reports a record only one tape has at position i. A record of
// unknown kind also gets its unknown_kind divergence, so no unknown record
// ever goes unreported.
func (c *comparison) unaligned(name string, i int, cat Category, rec tape.Record, line int, inA bool) {
	sd := side(rec, line)
	d := Divergence{Category: cat, Stream: name, Index: &i}
	present, absent := "A", "B"
	if inA {
		d.A = sd
	} else {
		d.B = sd
		present, absent = "B", "A"
	}
	d.Message = fmt.Sprintf("%srecord %d (%s, seq %d) is in %s only; %s has %d records in this stream", streamPrefix(name), i, rec.KindName(), rec.Seq, present, absent, i)
	c.add(d)
	if rec.Kind() == tape.KindUnknown {
		d.Category = UnknownKind
		d.Field = "kind"
		d.Message = fmt.Sprintf("%srecord %d: kind %q in %s is unknown to this checker", streamPrefix(name), i, rec.KindName(), present)
		c.add(d)
	}
}

// streamPrefix names a phase stream in messages; the whole-tape stream
// needs no name.
func streamPrefix(stream string) string {
	if stream == "all" {
		return ""
	}
	return stream + " "
}

func side(r tape.Record, line int) *Side {
	return &Side{Seq: r.Seq, Line: line, Kind: r.KindName(), Phase: string(r.Phase)}
}

// pair is two aligned records.
type pair struct {
	c            *comparison
	stream       string
	index        int
	a, b         tape.Record
	lineA, lineB int
}

func (p *pair) diverge(cat Category, field string, va, vb any, msg string) {
	i := p.index
	sa, sb := side(p.a, p.lineA), side(p.b, p.lineB)
	sa.Value, sb.Value = va, vb
	p.c.add(Divergence{Category: cat, Stream: p.stream, Index: &i, Field: field, A: sa, B: sb,
		Message: fmt.Sprintf("%srecord %d (seq %d in A, %d in B): %s", streamPrefix(p.stream), i, p.a.Seq, p.b.Seq, msg)})
}

// field reports a differing field, if it differs.
func field[T comparable](p *pair, cat Category, name string, a, b T) {
	if a != b {
		p.diverge(cat, name, a, b, fmt.Sprintf("%s: A has %v, B has %v", name, a, b))
	}
}

func (p *pair) compare(strict, phase bool) {
	ka, kb := p.a.Kind(), p.b.Kind()
	if ka == tape.KindUnknown || kb == tape.KindUnknown {
		p.diverge(UnknownKind, "kind", p.a.KindName(), p.b.KindName(),
			fmt.Sprintf("kind %q in A, %q in B: a kind this checker does not know cannot be compared", p.a.KindName(), p.b.KindName()))
		return
	}
	if ka != kb {
		p.diverge(KindMismatch, "kind", string(ka), string(kb), fmt.Sprintf("kind: A has %s, B has %s", ka, kb))
		return
	}
	if phase {
		field(p, PhaseMismatch, "phase", string(p.a.Phase), string(p.b.Phase))
	}
	if strict {
		field(p, SeqMismatch, "seq", p.a.Seq, p.b.Seq)
		field(p, TimingDrift, "virtual_time_ms", p.a.VirtualTimeMs, p.b.VirtualTimeMs)
		field(p, TimingDrift, "monotonic_ms", p.a.MonotonicMs, p.b.MonotonicMs)
	}
	switch a := p.a.Body.(type) {
	case *tape.ClockRead:
		b := p.b.Body.(*tape.ClockRead)
		field(p, FieldMismatch, "source", string(a.Source), string(b.Source))
		field(p, FieldMismatch, "value_ms", a.ValueMs, b.ValueMs)
	case *tape.ClockSleep:
		b := p.b.Body.(*tape.ClockSleep)
		field(p, FieldMismatch, "duration_ms", a.DurationMs, b.DurationMs)
	case *tape.LLMCall:
		b := p.b.Body.(*tape.LLMCall)
		field(p, PayloadHashMismatch, "request_digest", a.RequestDigest, b.RequestDigest)
		field(p, PayloadHashMismatch, "response.content_hash", a.Response.Hash, b.Response.Hash)
	case *tape.FileRead:
		b := p.b.Body.(*tape.FileRead)
		p.file(a.Path, b.Path, a.ContentHash, b.ContentHash, a.LenBytes, b.LenBytes)
	case *tape.FileWrite:
		b := p.b.Body.(*tape.FileWrite)
		p.file(a.Path, b.Path, a.ContentHash, b.ContentHash, a.LenBytes, b.LenBytes)
	case *tape.FileDelete:
		b := p.b.Body.(*tape.FileDelete)
		field(p, FieldMismatch, "path", a.Path, b.Path)
	case *tape.ProcessSpawn:
		b := p.b.Body.(*tape.ProcessSpawn)
		field(p, FieldMismatch, "program", a.Program, b.Program)
		if !slices.Equal(a.Args, b.Args) {
			p.diverge(FieldMismatch, "args", a.Args, b.Args, fmt.Sprintf("args: A has %q, B has %q", a.Args, b.Args))
		}
		field(p, FieldMismatch, "cwd", a.Cwd, b.Cwd)
		field(p, FieldMismatch, "exit_code", a.ExitCode, b.ExitCode)
		if strict {
			field(p, TimingDrift, "duration_ms", a.DurationMs, b.DurationMs)
		}
		field(p, PayloadHashMismatch, "stdout_payload.content_hash", a.Stdout.Hash, b.Stdout.Hash)
		field(p, PayloadHashMismatch, "stderr_payload.content_hash", a.Stderr.Hash, b.Stderr.Hash)
	case *tape.MCPCall:
		b := p.b.Body.(*tape.MCPCall)
		field(p, FieldMismatch, "server", a.Server, b.Server)
		field(p, FieldMismatch, "method", a.Method, b.Method)
		field(p, PayloadHashMismatch, "request_digest", a.RequestDigest, b.RequestDigest)
		field(p, PayloadHashMismatch, "response_digest", a.ResponseDigest, b.ResponseDigest)
		if strict {
			field(p, TimingDrift, "latency_ms", a.LatencyMs, b.LatencyMs)
		}
		field(p, PayloadHashMismatch, "request_payload.content_hash", a.Request.Hash, b.Request.Hash)
		field(p, PayloadHashMismatch, "response_payload.content_hash", a.Response.Hash, b.Response.Hash)
	}
}

func (p *pair) file(pathA, pathB, hashA, hashB string, lenA, lenB int64) {
	field(p, FieldMismatch, "path", pathA, pathB)
	field(p, PayloadHashMismatch, "content_hash", hashA, hashB)
	field(p, FieldMismatch, "len_bytes", lenA, lenB)
}

// outcomeState is what the outcome mode keeps of one tape.
type outcomeState struct {
	files    map[string]fileState
	lastExit *Side // the last process_spawn, with its exit code as Value
	llmCalls int
}

type fileState struct {
	side    *Side // the record that set the final state; Value is the hash or "deleted"
	deleted bool
	hash    string
}

func (c *comparison) outcome(a, b Source) error {
	sa, sb, err := c.open(a, b, nil)
	if err != nil {
		return err
	}
	defer c.finish(sa, sb)
	oa, err := c.collect(sa, "a")
	if err != nil {
		return err
	}
	ob, err := c.collect(sb, "b")
	if err != nil {
		return err
	}

	paths := make([]string, 0, len(oa.files)+len(ob.files))
	for p := range oa.files {
		paths = append(paths, p)
	}
	for p := range ob.files {
		if _, ok := oa.files[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, path := range paths {
		fa, inA := oa.files[path]
		fb, inB := ob.files[path]
		switch {
		case inA && inB && fa.deleted == fb.deleted && fa.hash == fb.hash:
			continue
		case inA && inB:
			c.add(Divergence{Category: WriteSetMismatch, Field: path, A: fa.side, B: fb.side,
				Message: fmt.Sprintf("final state of %s: A %s, B %s", path, fa.describe(), fb.describe())})
		case inA:
			c.add(Divergence{Category: WriteSetMismatch, Field: path, A: fa.side,
				Message: fmt.Sprintf("final state of %s: A %s, B never writes or deletes it", path, fa.describe())})
		default:
			c.add(Divergence{Category: WriteSetMismatch, Field: path, B: fb.side,
				Message: fmt.Sprintf("final state of %s: A never writes or deletes it, B %s", path, fb.describe())})
		}
	}
	c.rep.Compared = len(paths) + 2

	switch ea, eb := oa.lastExit, ob.lastExit; {
	case ea == nil && eb == nil:
	case ea == nil:
		c.add(Divergence{Category: ExitStatusMismatch, Field: "exit_code", B: eb,
			Message: fmt.Sprintf("A spawns no process; B's last process exits %v", eb.Value)})
	case eb == nil:
		c.add(Divergence{Category: ExitStatusMismatch, Field: "exit_code", A: ea,
			Message: fmt.Sprintf("A's last process exits %v; B spawns no process", ea.Value)})
	case ea.Value != eb.Value:
		c.add(Divergence{Category: ExitStatusMismatch, Field: "exit_code", A: ea, B: eb,
			Message: fmt.Sprintf("last process exit code: A %v (seq %d), B %v (seq %d)", ea.Value, ea.Seq, eb.Value, eb.Seq)})
	}
	if oa.llmCalls != ob.llmCalls {
		c.add(Divergence{Category: LLMCallCountMismatch, Field: "llm_call",
			Message: fmt.Sprintf("llm_call records: A has %d, B has %d", oa.llmCalls, ob.llmCalls)})
	}
	return nil
}

func (f fileState) describe() string {
	if f.deleted {
		return fmt.Sprintf("deletes it (seq %d)", f.side.Seq)
	}
	return fmt.Sprintf("writes %s (seq %d)", f.hash, f.side.Seq)
}

// collect reads a whole tape for the outcome mode. Records of unknown kind
// are reported as they are met: they may carry effects this checker cannot
// see, so an outcome cannot be called equal past them.
func (c *comparison) collect(s *stream, name string) (*outcomeState, error) {
	o := &outcomeState{files: make(map[string]fileState)}
	for {
		rec, ok, err := s.next()
		if err != nil {
			c.inputError(name, err)
			return nil, err
		}
		if !ok {
			return o, nil
		}
		sd := side(rec, s.tr.Line())
		switch b := rec.Body.(type) {
		case *tape.FileWrite:
			sd.Value = b.ContentHash
			o.files[b.Path] = fileState{side: sd, hash: b.ContentHash}
		case *tape.FileDelete:
			sd.Value = "deleted"
			o.files[b.Path] = fileState{side: sd, deleted: true}
		case *tape.ProcessSpawn:
			sd.Value = b.ExitCode
			o.lastExit = sd
		case *tape.LLMCall:
			o.llmCalls++
		case *tape.Unknown:
			d := Divergence{Category: UnknownKind, Input: name, Field: "kind",
				Message: fmt.Sprintf("%s line %d: record kind %q is unknown to this checker; its effect on the outcome cannot be judged", s.tr.Name(), s.tr.Line(), b.Name)}
			if name == "a" {
				d.A = sd
			} else {
				d.B = sd
			}
			c.add(d)
		}
	}
}
