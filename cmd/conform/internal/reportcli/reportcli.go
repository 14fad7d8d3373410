// Package reportcli is the command line over finished reports:
// `conform baseline write` makes a known-failures file from a conform.json,
// `conform report diff` shows what changed between two runs.
package reportcli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/baseline"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/reports"
)

// Exit statuses.
const (
	ExitOK        = 0 // baseline written / no requirement got worse
	ExitRegressed = 1 // diff: a requirement or level got worse
	ExitInput     = 2 // unreadable input, usage error
)

// Usage is the help text of both commands.
const Usage = `usage:
  conform baseline write --report conform.json [--out FILE] [--format text|json]
  conform baseline prune --baseline FILE --report conform.json [--out FILE|-] [--format text|json]
  conform baseline update --baseline FILE --report conform.json [--out FILE|-] [--format text|json]
  conform report diff A.json B.json [--format text|json] [--out FILE]

baseline write makes a known-failures file (YAML, format conform-baseline/v1)
from a report: every MUST that failed or stayed unverified, with its verdict
and message as the reason (or the reason a baseline the run applied gave it).
Give it to a later run with --baseline FILE: the listed requirements are then
expected, and one that passes again is stale and fails the run until it is
removed, so the list only shrinks. Without --out the file goes to standard
output. Reasons keep no volatile ids: uuids, times, resource ids and ports
read <uuid>, <time>, kind_<id> and :<port>.

baseline prune drops from --baseline FILE the requirements the report no
longer fails or leaves unverified (they pass again, or were not judged);
baseline update does that and adds the report's new failing and unverified
MUSTs. Both keep the reasons already written, and replace FILE unless --out
names another file (- for standard output).

--format json prints {format, requirements, out, added, removed, kept}
instead of the file.

report diff compares two conform.json files, A (before) and B (after): the
levels whose status changed, the requirements whose verdict changed (worse,
better, or changed between pass and not applicable), the newly failing and
the newly passing. A requirement got worse when its verdict in B is more
severe than in A (pass and not applicable < warn < unverified < error < fail;
one absent from A counts as not applicable there); a level got worse when it
went from conformant to partial or nonconformant, or from partial to
nonconformant.

exit status:
  0  baseline written (write, prune, update); diff: nothing got worse
  1  diff: a requirement or a level got worse
  2  usage error, or a report or baseline that cannot be read or written
`

// Main runs `conform baseline …` or `conform report …`: args[0] is
// "baseline" or "report".
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usage(stderr, "missing command: want baseline write or report diff")
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if len(args) < 2 {
		return usage(stderr, fmt.Sprintf("%s: missing subcommand", args[0]))
	}
	if isHelp(args[1]) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	switch args[0] + " " + args[1] {
	case "baseline write", "baseline prune", "baseline update":
		return baselineCmd(args[1], args[2:], stdout, stderr)
	case "report diff":
		return reportDiff(args[2:], stdout, stderr)
	}
	word := args[0] + " " + args[1]
	return usage(stderr, cli.UnknownCommand("command", word, []string{"baseline write", "baseline prune", "baseline update", "report diff"})+" (want baseline write|prune|update or report diff)")
}

func isHelp(a string) bool { return a == "help" || a == "-h" || a == "-help" || a == "--help" }

const shortUsage = `usage:
  conform baseline write --report conform.json [--out FILE] [--format text|json]
  conform baseline prune|update --baseline FILE --report conform.json [--out FILE|-] [--format text|json]
  conform report diff A.json B.json [--format text|json] [--out FILE]
exit status: 0 ok / nothing got worse, 1 diff found something worse, 2 usage error or unreadable input
`

func usage(stderr io.Writer, problem string) int {
	fmt.Fprintf(stderr, "conform: %s\n%s", problem, shortUsage)
	return ExitInput
}

// baselineResult is what --format json prints of a baseline command: the
// baseline written, where, and what changed.
type baselineResult struct {
	Format       string           `json:"format"`
	Requirements []baseline.Entry `json:"requirements"`
	Out          string           `json:"out,omitempty"`
	baseline.Change
}

// baselineCmd is baseline write (mode "write"), prune and update. write
// makes a baseline from a report; prune drops the entries of --baseline
// that the report no longer fails or leaves unverified; update prunes
// and adds the report's new ones. Without --out, write prints the file
// and prune and update replace --baseline.
func baselineCmd(mode string, args []string, stdout, stderr io.Writer) int {
	name := "baseline " + mode
	fail := func(err error) int {
		fmt.Fprintf(stderr, "conform %s: %v\n", name, err)
		return ExitInput
	}
	fs := flag.NewFlagSet("conform "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	report := fs.String("report", "", "the conform.json to take the failing and unverified MUSTs from")
	var old *string
	outHelp := "file to write (default: standard output)"
	if mode != "write" {
		old = fs.String("baseline", "", "the baseline file to bring up to date")
		outHelp = "file to write, - for standard output (default: the --baseline file, replaced)"
	}
	out := fs.String("out", "", outHelp)
	format := fs.String("format", cli.FormatText, "standard output: text (the file, or a summary) or json (the baseline and what changed)")
	pos, err := cli.ParseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if err != nil {
		return usage(stderr, name+": "+err.Error())
	}
	if len(pos) > 0 {
		return usage(stderr, fmt.Sprintf("%s: unexpected argument %q", name, pos[0]))
	}
	if err := cli.CheckFormat(*format); err != nil {
		return usage(stderr, name+": "+err.Error())
	}
	if *report == "" {
		return usage(stderr, name+": --report FILE is required")
	}
	if old != nil && *old == "" {
		return usage(stderr, name+": --baseline FILE is required")
	}
	r, err := readReport(*report)
	if err != nil {
		return fail(err)
	}
	f := reports.BaselineFrom(r)
	reg, err := requirements.Default()
	if err != nil {
		return fail(err)
	}
	f.Path = *report
	if err := f.Check(reg); err != nil {
		return fail(err)
	}
	f.Path = ""
	ch := baseline.Change{Added: f.IDs(), Removed: []string{}, Kept: []string{}}
	dest := *out
	if old != nil {
		prev, err := baseline.Load(*old)
		if err != nil {
			return fail(err)
		}
		f, ch = baseline.Merge(prev, f, mode == "update")
		if dest == "" {
			dest = *old
		}
	}
	if dest == "-" {
		dest = ""
	}
	var b bytes.Buffer
	if err := baseline.Write(&b, f); err != nil {
		return fail(fmt.Errorf("%s: %w", *report, err))
	}
	if r.Config["label_filter"] != "" || r.Config["focus"] != "" {
		fmt.Fprintf(stderr, "conform %s: warning: %s is from a narrowed run (--label-filter or --focus): the requirements it did not run are unverified and listed\n", name, *report)
	}
	if dest != "" {
		if err := writeFile(dest, b.Bytes()); err != nil {
			return fail(err)
		}
	}
	switch {
	case *format == cli.FormatJSON:
		res := baselineResult{Format: baseline.Format, Requirements: f.Requirements, Out: dest, Change: ch}
		if err := cli.WriteJSON(stdout, res); err != nil {
			return fail(err)
		}
	case dest == "":
		if _, err := stdout.Write(b.Bytes()); err != nil {
			return fail(err)
		}
	}
	if dest != "" {
		if mode == "write" {
			fmt.Fprintf(stderr, "conform %s: %d requirement(s) written to %s\n", name, len(f.Requirements), dest)
		} else {
			fmt.Fprintf(stderr, "conform %s: %s: %d kept, %d removed, %d added\n", name, dest, len(ch.Kept), len(ch.Removed), len(ch.Added))
		}
	}
	return ExitOK
}

// writeFile replaces path atomically with a 0644 file.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Chmod(reports.FileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func reportDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform report diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "output format: text or json")
	outFile := fs.String("out", "", "also write the diff as JSON to this file")
	pos, err := cli.ParseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if err != nil {
		return usage(stderr, "report diff: "+err.Error())
	}
	if len(pos) != 2 {
		return usage(stderr, fmt.Sprintf("report diff: want two reports A.json B.json, got %d argument(s)", len(pos)))
	}
	if *format != "text" && *format != "json" {
		return usage(stderr, fmt.Sprintf("report diff: --format %q: want text or json", *format))
	}
	a, err := readReport(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "conform report diff: %s\n", termSafe(err.Error(), 400))
		return ExitInput
	}
	b, err := readReport(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "conform report diff: %s\n", termSafe(err.Error(), 400))
		return ExitInput
	}
	d := Compare(pos[0], a, pos[1], b)
	if *outFile != "" {
		var buf bytes.Buffer
		if err := writeDiffJSON(&buf, d); err == nil {
			err = cli.WriteOut(*outFile, buf.Bytes())
		}
		if err != nil {
			fmt.Fprintf(stderr, "conform report diff: %v\n", err)
			return ExitInput
		}
	}
	if *format == "json" {
		err = writeDiffJSON(stdout, d)
	} else {
		err = writeDiffText(stdout, d)
	}
	if err != nil {
		fmt.Fprintf(stderr, "conform report diff: %v\n", err)
		return ExitInput
	}
	return d.ExitCode
}
