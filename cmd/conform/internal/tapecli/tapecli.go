// Package tapecli is the `conform tape` command line: `diff` runs the
// fidelity oracle over two event tapes, `validate` checks one tape and its
// CAS sidecar.
package tapecli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/fidelity"
	"github.com/harn-conform/conform/internal/tape"
)

// Exit codes of `conform tape`. validate and the command itself follow the
// common table of every conform command (package cli); diff keeps spec
// 003's status 2 for divergences, so it says "could not decide" with 3.
const (
	ExitOK      = cli.ExitOK    // tapes equal (diff) / every tape valid (validate)
	ExitInvalid = cli.ExitNotOK // validate: a tape is invalid
	ExitError   = cli.ExitError // validate, and `conform tape` itself: usage error or unreadable tape
	// ExitDiverged: diff found divergences. Spec 003: the fidelity CLI
	// exits "non-zero (status 2) when the report has any divergences".
	ExitDiverged = 2
	// ExitDiffError: diff could not decide (usage error, unreadable tape,
	// unwritable report): what the common table calls 2, which diff's
	// divergences already use.
	ExitDiffError = 3
)

// Usage is the help text.
const Usage = `usage:
  conform tape diff A B [--mode MODE] [--max-divergences N] [--format text|json] [--out FILE]
  conform tape validate [--format text|json] [--out FILE] FILE...

diff compares event tape A (the reference, e.g. the recorded run) with tape B
(e.g. the replay) and makes a FidelityReport (JSON, schema
conform-fidelity-report/v1).
  --mode MODE            byte-identical (default), semantic, outcome, phase-aware
  --max-divergences N    list at most N divergences (all are counted; default 10000)
  --out FILE             write the JSON report to FILE (--report FILE: deprecated
                         spelling of the same)
  --format text|json     what standard output carries: json, the report (the
                         default without --out); text, a summary (the default
                         with --out)

validate checks each tape: it can be read, inline payloads hash to their
content_hash, every spilled payload is in FILE.cas/ with matching length and
BLAKE3 hash, seq strictly increases. Unknown record kinds and unreferenced
sidecar files are warnings.
  --format text|json     what standard output carries: text (default), a line
                         per finding and a verdict per tape; json, the result
                         document
  --out FILE             also write the result document (JSON) to FILE

Options may come before, between or after the tape arguments.

exit status of diff (spec 003 fixes 2 for divergences, so "could not decide"
is 3 here, not the 2 of every other conform command):
  0  the tapes are equal under the mode
  2  the tapes diverge
  3  diff could not decide: a tape cannot be read (unsupported version, torn
     or malformed line, missing file), the report cannot be written, or a
     usage error

exit status of validate (the common table):
  0  every tape is valid (warnings allowed)
  1  a tape is invalid: a finding, or not a tape (missing header, malformed
     or torn line)
  2  a tape cannot be read (missing file, unsupported version, line too
     long), the result cannot be written, or a usage error; 2 wins over 1
`

// Main runs `conform tape` with the arguments after "tape".
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usage(stderr, "missing command: want diff or validate", ExitError)
	}
	switch {
	case args[0] == "diff":
		return diff(args[1:], stdout, stderr)
	case args[0] == "validate":
		return validate(args[1:], stdout, stderr)
	case cli.IsHelp(args[0]):
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	return usage(stderr, cli.UnknownCommand("command", args[0], []string{"diff", "validate"})+": want diff or validate", ExitError)
}

// shortUsage follows a usage error; `conform tape help` prints Usage.
const shortUsage = `usage:
  conform tape diff A B [--mode byte-identical|semantic|outcome|phase-aware] [--max-divergences N] [--format text|json] [--out FILE]
  conform tape validate [--format text|json] [--out FILE] FILE...
exit status: diff 0 equal, 2 divergences, 3 could not decide (spec 003 fixes 2);
validate 0 valid, 1 invalid, 2 could not decide (conform tape help explains more)
`

func usage(stderr io.Writer, problem string, code int) int {
	fmt.Fprintf(stderr, "conform tape: %s\n%s", problem, shortUsage)
	return code
}

// flags splits args into positional arguments and --name value options.
// Options may come before, between or after the positional arguments, as
// --name value or --name=value; "--" ends the options.
func flags(args []string, known map[string]bool) (pos []string, opts map[string]string, err error) {
	opts = make(map[string]string)
	if len(args) == 1 && args[0] == "help" {
		return nil, nil, errHelp
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if cli.IsHelp(a) {
			return nil, nil, errHelp
		}
		if !known[name] {
			return nil, nil, fmt.Errorf("unknown option %q", a)
		}
		if _, dup := opts[name]; dup {
			return nil, nil, fmt.Errorf("option --%s given twice", name)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("option --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		opts[name] = value
	}
	return pos, opts, nil
}

var errHelp = errors.New("help")

func diff(args []string, stdout, stderr io.Writer) int {
	pos, opts, err := flags(args, map[string]bool{"mode": true, "report": true, "out": true, "format": true, "max-divergences": true})
	if err == errHelp {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	bad := func(problem string) int { return usage(stderr, "diff: "+problem, ExitDiffError) }
	if err != nil {
		return bad(err.Error())
	}
	if len(pos) != 2 {
		return bad(fmt.Sprintf("got %d tape arguments, want 2 (A and B)", len(pos)))
	}
	opt := fidelity.Options{Mode: fidelity.ByteIdentical}
	if m, ok := opts["mode"]; ok {
		if opt.Mode, err = fidelity.ParseMode(m); err != nil {
			return bad("--mode: " + err.Error())
		}
	}
	if n, ok := opts["max-divergences"]; ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return bad(fmt.Sprintf("--max-divergences %q: want a positive integer", n))
		}
		opt.MaxDivergences = v
	}
	outPath, toFile := opts["out"]
	if old, ok := opts["report"]; ok {
		if toFile {
			return bad("give --out FILE, not both --out and --report (its deprecated spelling)")
		}
		fmt.Fprintln(stderr, "conform tape diff: --report is deprecated; use --out")
		outPath, toFile = old, true
	}
	if toFile && outPath == "" {
		return bad("--out needs a file name")
	}
	format := cli.FormatJSON
	if toFile {
		format = cli.FormatText
	}
	if f, ok := opts["format"]; ok {
		if err := cli.CheckFormat(f); err != nil {
			return bad(err.Error())
		}
		format = f
	}

	if opt.Mode == fidelity.PhaseAware {
		// Phase-aware reads each tape once per phase. A pipe cannot be read
		// twice, and a named FIFO reopened would block, so refuse them.
		for _, p := range pos {
			if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
				fmt.Fprintf(stderr, "conform tape diff: %s is not a regular file; phase-aware mode reads each tape twice\n", p)
				return ExitDiffError
			}
		}
	}
	rep, cmpErr := fidelity.Compare(fidelity.File(pos[0]), fidelity.File(pos[1]), opt)
	if cmpErr != nil {
		fmt.Fprintf(stderr, "conform tape diff: %v\n", cmpErr)
	}
	body, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "conform tape diff: encode report: %v\n", err)
		return ExitDiffError
	}
	body = append(body, '\n')
	if toFile {
		if err := cli.WriteOut(outPath, body); err != nil {
			fmt.Fprintf(stderr, "conform tape diff: write report: %v\n", err)
			return ExitDiffError
		}
	}
	if format == cli.FormatText {
		summarize(stdout, rep)
	} else if _, err := stdout.Write(body); err != nil {
		return ExitDiffError
	}
	switch rep.Status {
	case fidelity.StatusEqual:
		return ExitOK
	case fidelity.StatusDiverged:
		return ExitDiverged
	}
	return ExitDiffError
}

// summaryLines bounds the divergences printed next to a report file; the
// file has them all.
const summaryLines = 20

func summarize(w io.Writer, rep *fidelity.Report) {
	fmt.Fprintf(w, "%s vs %s: %s\n", rep.A.Name, rep.B.Name, rep.Summary())
	for i, d := range rep.Divergences {
		if i == summaryLines {
			fmt.Fprintf(w, "  … %d more in the report\n", rep.DivergenceCount-summaryLines)
			break
		}
		fmt.Fprintf(w, "  %s: %s\n", d.Category, d.Message)
	}
}

// Verdicts of validate, per tape.
const (
	VerdictValid      = "valid"
	VerdictInvalid    = "invalid"
	VerdictUnreadable = "unreadable"
)

// validated is one tape's entry in validate's result document.
type validated struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Verdict  string    `json:"verdict"`
	Version  int64     `json:"version,omitempty"`
	Records  int       `json:"records"`
	Payloads int       `json:"payloads"` // distinct spilled payloads checked
	Findings []finding `json:"findings"`
	Dropped  int       `json:"dropped,omitempty"`
	// Error is why the tape could not be read to its end.
	Error *finding `json:"error,omitempty"`
}

type finding struct {
	Severity string `json:"severity"` // error or warning
	Code     string `json:"code"`
	// Requirement is the spec 003 requirement the finding is about
	// (internal/requirements/tapes.yaml), when it is about one.
	Requirement string `json:"requirement,omitempty"`
	Line        int    `json:"line,omitempty"`
	Seq         *int64 `json:"seq,omitempty"`
	Message     string `json:"message"`
}

type validation struct {
	Valid bool        `json:"valid"`
	Tapes []validated `json:"tapes"`
}

// unreadable reports whether a reading error means the tool could not
// judge the tape (exit 2) rather than that the tape is not a valid one
// (exit 1): the file system refused, the version is newer than this
// checker, or a line is beyond the reader's bound.
func unreadable(err error) bool {
	var te *tape.Error
	if !errors.As(err, &te) {
		return true
	}
	switch te.Code {
	case tape.CodeIO, tape.CodeVersionUnsupported, tape.CodeLineTooLong:
		return true
	}
	return false
}

func validate(args []string, stdout, stderr io.Writer) int {
	pos, opts, err := flags(args, map[string]bool{"format": true, "out": true})
	if err == errHelp {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	bad := func(problem string) int { return usage(stderr, "validate: "+problem, ExitError) }
	if err != nil {
		return bad(err.Error())
	}
	if len(pos) == 0 {
		return bad("want at least one tape file")
	}
	format := cli.FormatText
	if f, ok := opts["format"]; ok {
		if err := cli.CheckFormat(f); err != nil {
			return bad(err.Error())
		}
		format = f
	}
	outPath, toFile := opts["out"]
	if toFile && outPath == "" {
		return bad("--out needs a file name")
	}
	text := io.Discard
	if format == cli.FormatText {
		text = stdout
	}
	res := validation{Valid: true, Tapes: []validated{}}
	code := ExitOK
	for _, p := range pos {
		v := validated{File: p, Valid: true, Verdict: VerdictValid, Findings: []finding{}}
		rep, err := tape.Validate(p)
		if rep != nil {
			v.Version, v.Records, v.Payloads, v.Dropped = rep.Header.Version, rep.Records, rep.Payloads, rep.Dropped
			for _, f := range rep.Findings {
				fmt.Fprintf(text, "%s: %s%s\n", p, f, reqTag(f.Code))
				v.Findings = append(v.Findings, toFinding(f))
			}
			if rep.Dropped > 0 {
				fmt.Fprintf(text, "%s: %d more findings not shown\n", p, rep.Dropped)
			}
		}
		switch {
		case err != nil && unreadable(err):
			fmt.Fprintf(text, "%s: unreadable: %v%s\n", p, err, reqTag(errCode(err)))
			v.Verdict, v.Error = VerdictUnreadable, errFinding(err)
			code = ExitError
		case err != nil:
			fmt.Fprintf(text, "%s: invalid: %v%s\n", p, err, reqTag(errCode(err)))
			v.Verdict, v.Error = VerdictInvalid, errFinding(err)
			code = max(code, ExitInvalid)
		case !rep.Valid():
			fmt.Fprintf(text, "%s: invalid (%d records, %d spilled payloads checked)\n", p, rep.Records, rep.Payloads)
			v.Verdict = VerdictInvalid
			code = max(code, ExitInvalid)
		default:
			fmt.Fprintf(text, "%s: valid (version %d, %d records, %d spilled payloads checked)\n", p, rep.Header.Version, rep.Records, rep.Payloads)
		}
		v.Valid = v.Verdict == VerdictValid
		res.Valid = res.Valid && v.Valid
		res.Tapes = append(res.Tapes, v)
	}
	body, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "conform tape validate: encode result: %v\n", err)
		return ExitError
	}
	body = append(body, '\n')
	if toFile {
		if err := cli.WriteOut(outPath, body); err != nil {
			fmt.Fprintf(stderr, "conform tape validate: %v\n", err)
			return ExitError
		}
	}
	if format == cli.FormatJSON {
		stdout.Write(body)
	}
	return code
}

// reqTag names the requirement a code is about, for the text output.
func reqTag(c tape.Code) string {
	if id := c.Requirement(); id != "" {
		return " [" + id + "]"
	}
	return ""
}

// errCode is the code of a reading error.
func errCode(err error) tape.Code {
	var te *tape.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return tape.CodeIO
}

func toFinding(f tape.Finding) finding {
	out := finding{Severity: "error", Code: string(f.Code), Requirement: f.Code.Requirement(), Line: f.Line, Message: f.Msg}
	if f.Warning {
		out.Severity = "warning"
	}
	if f.Line > 0 {
		seq := f.Seq
		out.Seq = &seq
	}
	return out
}

func errFinding(err error) *finding {
	var te *tape.Error
	if errors.As(err, &te) {
		return &finding{Severity: "error", Code: string(te.Code), Requirement: te.Code.Requirement(), Line: te.Line, Message: te.Msg}
	}
	return &finding{Severity: "error", Code: string(tape.CodeIO), Message: err.Error()}
}
