package acpharbor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// Usage is `conform serve-acp -h`.
const Usage = `usage: conform serve-acp [--fault NAME]… [--variant NAME] [--hold D]
       conform serve-acp --list-faults | --list-variants

Runs the reference ACP Agent Harbor agent on this process's stdin and stdout
(JSON-RPC 2.0, one message per line), logging to stderr, until stdin ends.
It is the agent ` + "`conform selftest --profiles acp-harbor`" + ` checks; to check it
yourself:

  conform run --profile acp-harbor -- conform serve-acp

A prompt holding a shell pipeline in backquotes (` + "`printf 'a\\nb\\n' | grep a`" + `)
runs it on built-in commands (printf, echo, cat, grep, wc -l, sort, head -n),
recorded as a Harbor execution; a prompt holding conform:hold keeps the
turn open until session/cancel (or --hold).

flags:
`

// Main is `conform serve-acp`: it returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conform serve-acp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var faults []Fault
	fs.Func("fault", "break one requirement on purpose (repeatable; --list-faults lists them with the requirement each breaks)", func(s string) error {
		f, err := ParseFault(s)
		if err == nil {
			faults = append(faults, f)
		}
		return err
	})
	variant := fs.String("variant", "", "a legal but unusual reading of the Harbor text (--list-variants lists them)")
	hold := fs.Duration("hold", 10*time.Second, "how long a conform:hold turn waits for session/cancel")
	listFaults := fs.Bool("list-faults", false, "list the faults, each with the requirements it fails or warns about, then exit")
	listVariants := fs.Bool("list-variants", false, "list the variants, each with what it does, then exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "conform serve-acp: %v\n\n%s", err, Usage)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "conform serve-acp: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch {
	case *listFaults:
		fault.WriteFaults(stdout, FaultDecls())
		return 0
	case *listVariants:
		fault.WriteVariants(stdout, VariantDecls())
		return 0
	}
	v, err := ParseVariant(*variant)
	if err != nil {
		fmt.Fprintf(stderr, "conform serve-acp: %v\n", err)
		return 2
	}
	// The process's own logger: the SDK's connection logs through
	// slog.Default, and an agent's logs belong on its stderr.
	// One writer for the agent's own lines and the SDK's log lines, which
	// come from the SDK's goroutines (a connection's shutdown logs after
	// Serve has returned): writes to stderr are serialised.
	stderr = &lockedWriter{w: stderr}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	if err := Serve(ctx, stdin, stdout, stderr, Options{Faults: faults, Variant: v, Hold: *hold, Token: os.Getenv(TokenEnv)}); err != nil {
		fmt.Fprintf(stderr, "conform serve-acp: %v\n", err)
		return 1
	}
	return 0
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
