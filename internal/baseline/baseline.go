// Package baseline is conform's known-failures file: the requirement ids a
// team expects to fail or stay unverified for now, each with an optional
// reason. A run given a baseline (--baseline FILE) treats those as expected,
// so CI can gate on everything else; an entry that passes again is stale and
// fails the run, so the list only ever shrinks.
//
// The file is YAML (JSON, being YAML, is accepted too):
//
//	format: conform-baseline/v1
//	requirements:
//	  - id: CORE-AUTH-002
//	    reason: our gateway answers 400 to a malformed header (TICKET-12)
//	  - CORE-DUR-001          # a bare id: no reason
//
// docs/report-format.md documents it.
package baseline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harn-conform/conform/internal/requirements"
)

// Format is the marker of a baseline file.
const Format = "conform-baseline/v1"

// MaxBytes bounds what Load and Parse read: a baseline lists at most every
// requirement with a reason, far below this.
const MaxBytes = 1 << 20

// MaxReason bounds one entry's reason, in bytes.
const MaxReason = 1000

var idPattern = regexp.MustCompile(`^(CORE|EXT|RCPT|RPLY|OH|ACP)-[A-Z]+-[0-9]{3}$`) // requirements.ValidID's shape

// Entry is one expected failure.
type Entry struct {
	ID     string `yaml:"id" json:"id"`
	Reason string `yaml:"reason,omitempty" json:"reason,omitempty"`
}

// UnmarshalYAML accepts an entry as a bare id or as {id, reason}.
func (e *Entry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Tag != "!!str" {
			return fmt.Errorf("line %d: an entry is a requirement id or {id, reason}, not %s", n.Line, n.Value)
		}
		*e = Entry{ID: n.Value}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: an entry is a requirement id or {id, reason}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "id", "reason":
		default:
			return fmt.Errorf("line %d: unknown field %q in an entry (want id and reason)", n.Content[i].Line, k)
		}
	}
	type plain Entry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*e = Entry(p)
	return nil
}

// File is a parsed baseline.
type File struct {
	// Path is where it was read from ("" when parsed from bytes); reports
	// name it in their messages.
	Path         string  `yaml:"-" json:"-"`
	Format       string  `yaml:"format" json:"format"`
	Requirements []Entry `yaml:"requirements" json:"requirements"`
}

// IDs returns the listed ids in file order.
func (f *File) IDs() []string {
	out := make([]string, len(f.Requirements))
	for i, e := range f.Requirements {
		out[i] = e.ID
	}
	return out
}

// Reason returns the reason recorded for id, and whether id is listed.
func (f *File) Reason(id string) (string, bool) {
	for _, e := range f.Requirements {
		if e.ID == id {
			return e.Reason, true
		}
	}
	return "", false
}

// Name is how messages name the file.
func (f *File) Name() string {
	if f.Path == "" {
		return "the baseline"
	}
	return f.Path
}

// Parse reads a baseline from its bytes and checks its shape: the format
// marker, well-formed unique ids, bounded reasons. It does not check that
// the ids exist (Check does, against a registry).
func Parse(b []byte) (*File, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxBytes)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file (want format: " + Format + " and a requirements list)")
		}
		return nil, fmt.Errorf("not a baseline: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks a baseline's shape: the format marker, well-formed unique
// ids, bounded reasons (ids and reasons are trimmed of surrounding space).
func (f *File) Validate() error {
	if f.Format != Format {
		return fmt.Errorf("format %q: want %q", f.Format, Format)
	}
	seen := map[string]bool{}
	var errs []string
	for i, e := range f.Requirements {
		f.Requirements[i].ID = strings.TrimSpace(e.ID)
		f.Requirements[i].Reason = strings.TrimSpace(e.Reason)
		e = f.Requirements[i]
		switch {
		case !idPattern.MatchString(e.ID):
			errs = append(errs, fmt.Sprintf("entry %d: %q is not a requirement id (like CORE-AUTH-001)", i+1, e.ID))
		case seen[e.ID]:
			errs = append(errs, fmt.Sprintf("entry %d: %s is listed twice", i+1, e.ID))
		case len(e.Reason) > MaxReason:
			errs = append(errs, fmt.Sprintf("entry %d: %s: reason longer than %d bytes", i+1, e.ID, MaxReason))
		}
		seen[e.ID] = true
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Load reads and parses the baseline at path, with a bounded read. Its
// errors name the file.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// UnknownError names the listed ids the registry does not have.
type UnknownError struct {
	File string
	IDs  []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("baseline %s: %s not in the requirement registry of this conform version (conform list shows every id); remove or correct %s",
		e.File, strings.Join(e.IDs, ", "), map[bool]string{true: "it", false: "them"}[len(e.IDs) == 1])
}

// Check reports an *UnknownError when an id is not in the registry.
func (f *File) Check(reg *requirements.Registry) error {
	var unknown []string
	for _, e := range f.Requirements {
		if _, ok := reg.Lookup(e.ID); !ok {
			unknown = append(unknown, e.ID)
		}
	}
	if len(unknown) > 0 {
		return &UnknownError{File: f.Name(), IDs: unknown}
	}
	return nil
}

// Write renders f as YAML with a header comment saying how the file is
// used, after Validate. Reasons are written as YAML strings, so any text is
// safe in them.
func Write(w io.Writer, f *File) error {
	if f.Format == "" {
		f.Format = Format
	}
	if err := f.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("# conform known-failures baseline: conform run --baseline FILE treats a listed\n" +
		"# requirement that fails or stays unverified as expected; one that passes again is\n" +
		"# stale and fails the run until it is removed, so this list only shrinks.\n")
	out := File{Format: Format, Requirements: f.Requirements}
	if out.Requirements == nil {
		out.Requirements = []Entry{}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
