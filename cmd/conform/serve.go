package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/embedded"
	"github.com/harn-conform/conform/refharness"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("conform serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", "", "data directory of the durable event log (empty: in memory, lost at exit)")
	keyFile := fs.String("api-key-file", "", "file whose first line is the API key of actor actor_default (else env CONFORM_SERVE_API_KEY, else a generated key printed to stderr)")
	var variants, faults names
	fs.Var(&variants, "variant", "turn on a legal-but-unusual behaviour, e.g. no-scenario-hook to stand in for a third-party server (repeatable; see refharness/options.go)")
	fs.Var(&faults, "fault", "break one requirement on purpose, to watch the suite catch it (repeatable; see refharness/options.go)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform serve [--addr HOST:PORT] [--data DIR] [--api-key-file FILE]\n\nRuns the reference Harness standalone.\n\nflags:")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 2, err
	}
	key := os.Getenv("CONFORM_SERVE_API_KEY")
	if *keyFile != "" {
		b, err := readSmall(*keyFile)
		if err != nil {
			return 2, fmt.Errorf("--api-key-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if key = strings.TrimSpace(line); key == "" {
			return 2, fmt.Errorf("--api-key-file %s: first line is empty", *keyFile)
		}
	}
	if key == "" {
		key = embedded.NewAPIKey()
		// Deliberately printed: the operator needs it, and this harness is a
		// local stand-in; it goes to stderr, never into a report.
		fmt.Fprintf(stderr, "conform serve: api key: %s\n", key)
	}
	opts := refharness.Options{DataDir: *data, APIKeys: map[string]string{key: "actor_default"}, Variants: refharness.Variants{}, Faults: refharness.Faults{}}
	for _, v := range variants {
		if !slices.Contains(refharness.AllVariants(), refharness.Variant(v)) {
			return 2, usageError{msg: fmt.Sprintf("--variant %q: no such variant (have %v)", v, refharness.AllVariants()), usage: flagUsage(fs)}
		}
		opts.Variants[refharness.Variant(v)] = true
	}
	for _, f := range faults {
		if !slices.Contains(refharness.AllFaults(), refharness.Fault(f)) {
			return 2, usageError{msg: fmt.Sprintf("--fault %q: no such fault", f), usage: flagUsage(fs)}
		}
		opts.Faults[refharness.Fault(f)] = true
	}
	h, err := refharness.New(opts)
	if err != nil {
		return 2, err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 2, fmt.Errorf("--addr: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "conform serve: listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return 2, err
		}
	case <-ctx.Done():
		// Let ordinary requests finish briefly, then cut what remains (SSE
		// streams never finish on their own) before the harness closes its
		// log in the deferred Close.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}
	return 0, nil
}

// names is a repeatable string flag.
type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if len(b) > 64<<10 {
		return nil, fmt.Errorf("%s is larger than 64 KiB", path)
	}
	return b, err
}
