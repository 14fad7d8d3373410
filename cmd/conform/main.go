// Command conform checks a Harn Agents Protocol v1 Harness for conformance
// (Core, Extended, Receipts, Replay), runs the built-in reference Harness,
// lists the requirement registry, verifies receipts and diffs event tapes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/harn-conform/conform/internal/receiptcli"
	"github.com/harn-conform/conform/internal/tapecli"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// the module version (or "dev") is used.
var version = ""

func toolVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `usage: conform <command> [flags]

commands:
  run --target URL      check a Harness (see 'conform run -h')
  selftest              run the suites against the built-in reference Harness
  serve                 run the reference Harness (--addr, --data, --api-key-file)
  list                  list the requirements and the specs that verify them
  receipt verify FILE…  verify receipts offline (RFC 8785 + SHA-256 + signatures)
  tape diff A B         compare two event tapes with the fidelity oracle (see 'conform tape')
  tape validate FILE    check a tape's schema and its content-addressed sidecar
  version               print the version

exit codes: 0 conformant, 1 not conformant, 2 usage, configuration or engine error
(receipt and tape keep their own: see their usage)
`

func main() {
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
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr, false)
	case "selftest":
		code, err = cmdRun(ctx, args[1:], stdout, stderr, true)
	case "serve":
		code, err = cmdServe(ctx, args[1:], stdout, stderr)
	case "list":
		code, err = cmdList(args[1:], stdout, stderr)
	case "receipt":
		return receiptcli.Main(args[1:], stdin, stdout, stderr)
	case "tape":
		// Its own exit codes, fixed by the tape spec: 0 equal or valid,
		// 2 divergences, 3 unreadable input, 4 usage.
		return tapecli.Main(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "conform %s (protocol %s)\n", toolVersion(), protocolVersion)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageError{msg: fmt.Sprintf("unknown command %q", args[0]), usage: usage}
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
// -h into our usage convention.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return true, nil
		}
		return false, usageError{msg: err.Error(), usage: flagUsage(fs)}
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
