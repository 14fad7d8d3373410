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
	h, err := refharness.New(refharness.Options{DataDir: *data, APIKeys: map[string]string{key: "actor_default"}})
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
