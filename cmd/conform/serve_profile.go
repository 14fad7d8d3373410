package main

// `conform serve --profile NAME`: a profile's reference implementation
// standalone. openharness serves the reference Engine
// (refharness/openharness) over conform's HTTP binding.

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

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/requirements"
	refoh "github.com/harn-conform/conform/refharness/openharness"
)

// profileArg finds --profile NAME (or -profile, or =NAME) before any "--".
func profileArg(args []string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if v, ok := strings.CutPrefix(name, "profile="); ok {
			return v, true
		}
		if name == "profile" {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
	}
	return "", false
}

// OpenHarnessPath is the path the served Engine's URL names; the Engine
// answers on every path.
const OpenHarnessPath = "/openharness"

func cmdServeProfile(ctx context.Context, name string, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("conform serve --profile openharness", flag.ContinueOnError)
	fs.String("profile", "", "`NAME` of the profile whose reference to serve: openharness")
	addr := fs.String("addr", "127.0.0.1:8090", "`HOST:PORT` to listen on")
	keyFile := fs.String("api-key-file", "", "`FILE` whose first line is the transport credential the Engine requires (Authorization: Bearer); else env CONFORM_SERVE_API_KEY; else none is required")
	var faults names
	fs.Var(&faults, "fault", "break one requirement on purpose, to watch the profile catch it (repeatable; --list-faults lists them)")
	listF := fs.Bool("list-faults", false, "list the faults --fault takes, each with the requirements it fails or warns about and what it does, then exit")
	format := formatFlag(fs, "how --list-faults writes: text, a table; json, a list")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform serve --profile openharness [--addr HOST:PORT] [--api-key-file FILE] [--fault NAME]…\n\nServes the reference OpenHarness v1 Engine (refharness/openharness) until interrupted: one\nrequest envelope per POST, on any path; check it with\nconform run --profile openharness --target http://HOST:PORT"+OpenHarnessPath+" (docs/openharness.md).\n\nflags:")
		cli.PrintFlags(fs.Output(), fs, map[string]string{"fault": "NAME"})
		fmt.Fprint(fs.Output(), "\nexit codes: 0 stopped by a signal, 2 usage, configuration or serving error\n")
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 0, err
	}
	if name != string(requirements.OpenHarness) {
		return 2, usageError{msg: fmt.Sprintf("--profile %q: conform serve has a reference for openharness only (the acp-harbor reference is an agent command)", name), usage: flagUsage(fs)}
	}
	if err := checkFormat(fs, *format); err != nil {
		return 2, err
	}
	if *listF {
		return 0, listFaults(stdout, *format, refoh.FaultDecls())
	}
	opts := refoh.Options{Faults: map[refoh.Fault]bool{}}
	for _, f := range faults {
		ft, err := refoh.ParseFault(f)
		if err != nil {
			return 2, usageError{msg: "--fault: " + err.Error(), usage: flagUsage(fs)}
		}
		opts.Faults[ft] = true
	}
	switch {
	case *keyFile != "":
		k, err := readKeyLine(*keyFile, "--api-key-file")
		if err != nil {
			return 2, err
		}
		opts.APIKey = k
	case os.Getenv("CONFORM_SERVE_API_KEY") != "":
		opts.APIKey = strings.TrimSpace(os.Getenv("CONFORM_SERVE_API_KEY"))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 2, fmt.Errorf("--addr: %w", err)
	}
	srv := &http.Server{Handler: refoh.New(opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "conform serve: OpenHarness Engine listening on http://%s%s\n", ln.Addr(), OpenHarnessPath)
	if opts.APIKey == "" {
		fmt.Fprintln(stderr, "conform serve: no transport credential required (give --api-key-file or CONFORM_SERVE_API_KEY to require one)")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return 2, err
		}
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}
	return 0, nil
}
