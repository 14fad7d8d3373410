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

	"github.com/harn-conform/conform/internal/fidelity"
	"github.com/harn-conform/conform/internal/tape"
)

// Exit codes of `conform tape`.
const (
	ExitOK         = 0 // tapes equal / tape valid
	ExitDiverged   = 2 // the report lists divergences (spec 003's status)
	ExitUnreadable = 3 // a tape cannot be read, or validate found it invalid
	ExitUsage      = 4 // bad command line
)

// Usage is the help text.
const Usage = `usage:
  conform tape diff A B [--mode MODE] [--report FILE] [--max-divergences N]
  conform tape validate FILE...

diff compares event tape A (the reference, e.g. the recorded run) with tape B
(e.g. the replay) and writes a FidelityReport (JSON, schema
conform-fidelity-report/v1): to FILE with --report, where a summary then goes
to standard output; otherwise to standard output.
  --mode MODE            byte-identical (default), semantic, outcome, phase-aware
  --report FILE          write the JSON report to FILE
  --max-divergences N    list at most N divergences (all are counted; default 10000)

validate checks each tape: it can be read, inline payloads hash to their
content_hash, every spilled payload is in FILE.cas/ with matching length and
BLAKE3 hash, seq strictly increases. Unknown record kinds and unreferenced
sidecar files are warnings.

exit status:
  0  equal (diff) / valid (validate)
  2  the tapes diverge
  3  a tape cannot be read (unsupported version, torn or malformed line,
     missing file), validate found it invalid, or the report cannot be written
  4  usage error
`

// Main runs `conform tape` with the arguments after "tape".
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usage(stderr, "missing command: want diff or validate")
	}
	switch args[0] {
	case "diff":
		return diff(args[1:], stdout, stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	return usage(stderr, fmt.Sprintf("unknown command %q: want diff or validate", args[0]))
}

// shortUsage follows a usage error; `conform tape help` prints Usage.
const shortUsage = `usage:
  conform tape diff A B [--mode byte-identical|semantic|outcome|phase-aware] [--report FILE] [--max-divergences N]
  conform tape validate FILE...
exit status: 0 equal/valid, 2 divergences, 3 unreadable or invalid input, 4 usage error
(conform tape help explains more)
`

func usage(stderr io.Writer, problem string) int {
	fmt.Fprintf(stderr, "conform tape: %s\n%s", problem, shortUsage)
	return ExitUsage
}

// flags splits args into positional arguments and --name value options.
// Options may come before, between or after the positional arguments, as
// --name value or --name=value; "--" ends the options.
func flags(args []string, known map[string]bool) (pos []string, opts map[string]string, err error) {
	opts = make(map[string]string)
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
		if name == "h" || name == "help" {
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
	pos, opts, err := flags(args, map[string]bool{"mode": true, "report": true, "max-divergences": true})
	if err == errHelp {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if err != nil {
		return usage(stderr, "diff: "+err.Error())
	}
	if len(pos) != 2 {
		return usage(stderr, fmt.Sprintf("diff: got %d tape arguments, want 2 (A and B)", len(pos)))
	}
	opt := fidelity.Options{Mode: fidelity.ByteIdentical}
	if m, ok := opts["mode"]; ok {
		if opt.Mode, err = fidelity.ParseMode(m); err != nil {
			return usage(stderr, "diff: --mode: "+err.Error())
		}
	}
	if n, ok := opts["max-divergences"]; ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return usage(stderr, fmt.Sprintf("diff: --max-divergences %q: want a positive integer", n))
		}
		opt.MaxDivergences = v
	}
	reportPath, toFile := opts["report"]
	if toFile && reportPath == "" {
		return usage(stderr, "diff: --report needs a file name")
	}

	if opt.Mode == fidelity.PhaseAware {
		// Phase-aware reads each tape once per phase. A pipe cannot be read
		// twice, and a named FIFO reopened would block, so refuse them.
		for _, p := range pos {
			if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
				fmt.Fprintf(stderr, "conform tape diff: %s is not a regular file; phase-aware mode reads each tape twice\n", p)
				return ExitUnreadable
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
		return ExitUnreadable
	}
	body = append(body, '\n')
	if toFile {
		if err := os.WriteFile(reportPath, body, 0o644); err != nil {
			fmt.Fprintf(stderr, "conform tape diff: write report: %v\n", err)
			return ExitUnreadable
		}
		summarize(stdout, rep)
	} else if _, err := stdout.Write(body); err != nil {
		return ExitUnreadable
	}
	switch rep.Status {
	case fidelity.StatusEqual:
		return ExitOK
	case fidelity.StatusDiverged:
		return ExitDiverged
	}
	return ExitUnreadable
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

func validate(args []string, stdout, stderr io.Writer) int {
	pos, _, err := flags(args, nil)
	if err == errHelp {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if err != nil {
		return usage(stderr, "validate: "+err.Error())
	}
	if len(pos) == 0 {
		return usage(stderr, "validate: want at least one tape file")
	}
	code := ExitOK
	for _, p := range pos {
		rep, err := tape.Validate(p)
		if rep != nil {
			for _, f := range rep.Findings {
				fmt.Fprintf(stdout, "%s: %s\n", p, f)
			}
			if rep.Dropped > 0 {
				fmt.Fprintf(stdout, "%s: %d more findings not shown\n", p, rep.Dropped)
			}
		}
		switch {
		case err != nil:
			fmt.Fprintf(stdout, "%s: unreadable: %v\n", p, err)
			code = ExitUnreadable
		case !rep.Valid():
			fmt.Fprintf(stdout, "%s: invalid (%d records, %d spilled payloads checked)\n", p, rep.Records, rep.Payloads)
			code = ExitUnreadable
		default:
			fmt.Fprintf(stdout, "%s: valid (version %d, %d records, %d spilled payloads checked)\n", p, rep.Header.Version, rep.Records, rep.Payloads)
		}
	}
	return code
}
