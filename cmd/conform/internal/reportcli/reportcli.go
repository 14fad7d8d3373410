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
  conform baseline write --report conform.json [--out FILE]
  conform report diff A.json B.json [--format text|json] [--out FILE]

baseline write makes a known-failures file (YAML, format conform-baseline/v1)
from a report: every MUST that failed or stayed unverified, with its verdict
and message as the reason (or the reason a baseline the run applied gave it).
Give it to a later run with --baseline FILE: the listed requirements are then
expected, and one that passes again is stale and fails the run until it is
removed, so the list only shrinks. Without --out the file goes to standard
output.

report diff compares two conform.json files, A (before) and B (after): the
levels whose status changed, the requirements whose verdict changed (worse,
better, or changed between pass and not applicable), the newly failing and
the newly passing. A requirement got worse when its verdict in B is more
severe than in A (pass and not applicable < warn < unverified < error < fail;
one absent from A counts as not applicable there); a level got worse when it
went from conformant to partial or nonconformant, or from partial to
nonconformant.

exit status:
  0  baseline written; diff: nothing got worse
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
	case "baseline write":
		return baselineWrite(args[2:], stdout, stderr)
	case "report diff":
		return reportDiff(args[2:], stdout, stderr)
	}
	return usage(stderr, fmt.Sprintf("unknown command %q (want baseline write or report diff)", args[0]+" "+args[1]))
}

func isHelp(a string) bool { return a == "help" || a == "-h" || a == "-help" || a == "--help" }

const shortUsage = `usage:
  conform baseline write --report conform.json [--out FILE]
  conform report diff A.json B.json [--format text|json] [--out FILE]
exit status: 0 ok / nothing got worse, 1 diff found something worse, 2 usage error or unreadable input
`

func usage(stderr io.Writer, problem string) int {
	fmt.Fprintf(stderr, "conform: %s\n%s", problem, shortUsage)
	return ExitInput
}

func baselineWrite(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform baseline write", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	report := fs.String("report", "", "the conform.json to take the failing and unverified MUSTs from")
	out := fs.String("out", "", "file to write (default: standard output)")
	pos, err := cli.ParseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	}
	if err != nil {
		return usage(stderr, "baseline write: "+err.Error())
	}
	if len(pos) > 0 {
		return usage(stderr, fmt.Sprintf("baseline write: unexpected argument %q", pos[0]))
	}
	if *report == "" {
		return usage(stderr, "baseline write: --report FILE is required")
	}
	r, err := readReport(*report)
	if err != nil {
		fmt.Fprintf(stderr, "conform baseline write: %v\n", err)
		return ExitInput
	}
	f := reports.BaselineFrom(r)
	reg, err := requirements.Default()
	if err != nil {
		fmt.Fprintf(stderr, "conform baseline write: %v\n", err)
		return ExitInput
	}
	f.Path = *report
	if err := f.Check(reg); err != nil {
		fmt.Fprintf(stderr, "conform baseline write: %v\n", err)
		return ExitInput
	}
	f.Path = ""
	var b bytes.Buffer
	if err := baseline.Write(&b, f); err != nil {
		fmt.Fprintf(stderr, "conform baseline write: %s: %v\n", *report, err)
		return ExitInput
	}
	if r.Config["label_filter"] != "" || r.Config["focus"] != "" {
		fmt.Fprintf(stderr, "conform baseline write: warning: %s is from a narrowed run (--label-filter or --focus): the requirements it did not run are unverified and listed\n", *report)
	}
	if *out == "" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "conform baseline write: %v\n", err)
			return ExitInput
		}
		return ExitOK
	}
	if err := writeFile(*out, b.Bytes()); err != nil {
		fmt.Fprintf(stderr, "conform baseline write: %v\n", err)
		return ExitInput
	}
	fmt.Fprintf(stderr, "conform baseline write: %d requirement(s) written to %s\n", len(f.Requirements), *out)
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
