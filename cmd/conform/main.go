// Command conform checks a Harn Agents Protocol v1 Harness for conformance
// (Core, Extended, Receipts, Replay), runs the built-in reference Harness,
// lists the requirement registry, verifies receipts and diffs event tapes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/harn-conform/conform/cmd/conform/internal/cardcli"
	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/cmd/conform/internal/openharnesscli"
	"github.com/harn-conform/conform/cmd/conform/internal/receiptcli"
	"github.com/harn-conform/conform/cmd/conform/internal/reportcli"
	"github.com/harn-conform/conform/cmd/conform/internal/tapecli"
	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/refharness/builtin"
)

// commit is the commit conform was built from, set at build time with
// -ldflags "-X main.commit=…" (.ci/build.sh and the release build do).
// Without it the commit is the VCS revision Go stamped into the binary, or
// unknown (go run and -buildvcs=false stamp none). The version is never
// stamped: it is releaseVersion, in the source (version.go).
var commit = ""

func toolCommit() string {
	bi, _ := debug.ReadBuildInfo()
	return buildCommit(commit, bi)
}

// buildCommit is the -X value if set, else the build's vcs.revision (with
// "-dirty" when vcs.modified), else "unknown".
func buildCommit(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	rev, dirty := "", false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

const usage = `usage: conform <command> [flags]

commands:
  run --target URL      check a Harness (see 'conform run -h'); with --profile NAME,
                        a related protocol instead (docs/profiles.md)
  selftest              run the suites against the built-in reference Harness
  serve                 run the reference Harness (--addr, --data, --api-key-file)
  serve-acp             run the reference ACP Harbor agent on stdio (docs/acp-harbor.md)
  list                  list the requirements and the specs that verify them
  receipt verify FILE…  verify receipts offline (RFC 8785 + SHA-256 + signatures)
  card verify FILE      verify a HarnAgentCard's signatures offline (docs/card-signing.md)
  openharness validate FILE…
                        validate OpenHarness v1 messages offline (docs/openharness.md)
  tape diff A B         compare two event tapes with the fidelity oracle
  tape validate FILE…   check a tape and its content-addressed sidecar
  baseline write --report conform.json [--out FILE]
                        a known-failures file from a report (then run --baseline FILE)
  report diff A.json B.json
                        what changed between two runs (exit 1 when something got worse)
  version               print the tool version, the protocol version and the commit
  help [COMMAND]        print this, or a command's usage (as COMMAND -h does)

Commands that write results take --format text|json (what standard output
carries) and --out PATH (where the full result is written).

exit codes (every command):
  0  success: conformant, valid, equal
  1  the thing checked is not OK: not conformant, invalid receipt or tape
  2  the tool could not decide: usage, configuration, unreadable input,
     unreachable target or engine error
  tape diff alone keeps spec 003's codes: 0 equal, 2 the tapes diverge,
  3 could not decide (see 'conform tape diff -h')
`

// commands are the command words of usage, for "did you mean".
var commands = []string{"run", "selftest", "serve", builtin.ServeCommand, "list", "receipt", "card", "openharness", "tape", "baseline", "report", "version", "help"}

func main() {
	// This binary runs the acp-harbor reference agent as `conform
	// serve-acp`, so the profile's selftest can start it (main only: a
	// test binary of this package cannot).
	builtin.EnableSelfServe()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a problem with the command line: one line naming it, then
// the usage, exit 2, never a stack trace.
type usageError struct{ msg, usage string }

func (e usageError) Error() string { return e.msg }

// Main runs one command and returns its exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "conform: no command given\n\n"+usage)
		return 2
	}
	var err error
	code := 0
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && !cli.IsHelp(args[1]) {
			// conform help run = conform run -h
			return Main(ctx, append(append([]string{}, args[1:]...), "-h"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr, false)
	case "selftest":
		code, err = cmdRun(ctx, args[1:], stdout, stderr, true)
	case "serve":
		code, err = cmdServe(ctx, args[1:], stdout, stderr)
	case builtin.ServeCommand:
		return acpharbor.Main(ctx, args[1:], stdin, stdout, stderr)
	case "list":
		code, err = cmdList(args[1:], stdout, stderr)
	case "receipt":
		return receiptcli.Main(args[1:], stdin, stdout, stderr)
	case "card":
		return cardcli.Main(args[1:], stdout, stderr)
	case "openharness":
		return openharnesscli.Main(args[1:], stdin, stdout, stderr)
	case "baseline", "report":
		return reportcli.Main(args, stdout, stderr)
	case "tape":
		// The common exit codes, except tape diff, which keeps spec 003's
		// 2 for divergences and so says "could not decide" with 3.
		return tapecli.Main(args[1:], stdout, stderr)
	case "version", "--version":
		code, err = cmdVersion(args[1:], stdout)
	default:
		err = usageError{msg: cli.UnknownCommand("command", args[0], commands), usage: usage}
	}
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "conform: %s\n\n%s", ue.msg, ue.usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "conform: %s\n", err)
		if code == 0 {
			code = 2
		}
	}
	return code
}

// parseFlags parses with the standard flag package but turns its errors and
// -h into our usage convention: -h, --help or a lone help print the usage
// to stdout (exit 0, help true); a bad flag or a stray argument is a
// usageError (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	if len(args) == 1 && args[0] == "help" {
		args = []string{"-h"}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return true, nil
		}
		return false, usageError{msg: cli.FlagError(fs, err).Error(), usage: flagUsage(fs)}
	}
	if fs.NArg() > 0 {
		return false, usageError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0)), usage: flagUsage(fs)}
	}
	return false, nil
}

func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.Usage()
	fs.SetOutput(io.Discard)
	return b.String()
}

// exitCodes ends the usage of the commands that follow the common table.
const exitCodes = `
exit codes: 0 success, 1 the thing checked is not OK, 2 usage, configuration,
unreadable input or engine error (the tool could not decide)
`

// formatFlag registers --format text|json.
func formatFlag(fs *flag.FlagSet, what string) *string {
	return fs.String("format", cli.FormatText, "`text|json`: "+what)
}

func checkFormat(fs *flag.FlagSet, format string) error {
	if err := cli.CheckFormat(format); err != nil {
		return usageError{msg: err.Error(), usage: flagUsage(fs)}
	}
	return nil
}

// writeJSON encodes v, indented, to w.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// versionInfo is `conform version --format json`.
type versionInfo struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocol_version"`
	Commit          string `json:"commit"`
	Go              string `json:"go"`
}

func cmdVersion(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("conform version", flag.ContinueOnError)
	format := formatFlag(fs, "output format")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform version [--format text|json]\n\nPrints the tool version, the protocol version it checks and the commit it was built from.\n\nflags:")
		cli.PrintFlags(fs.Output(), fs, nil)
		fmt.Fprint(fs.Output(), exitCodes)
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 0, err
	}
	if err := checkFormat(fs, *format); err != nil {
		return 2, err
	}
	v := versionInfo{Name: "conform", Version: releaseVersion, ProtocolVersion: protocolVersion, Commit: toolCommit(), Go: runtime.Version()}
	if *format == cli.FormatJSON {
		return 0, writeJSON(stdout, v)
	}
	_, err := fmt.Fprintln(stdout, v.text())
	return 0, err
}
