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

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/builtin"
	"github.com/harn-conform/conform/refharness/wsadapter"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if name, ok := profileArg(args); ok {
		return cmdServeProfile(ctx, name, args, stdout, stderr) // serve_profile.go
	}
	fs := flag.NewFlagSet("conform serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "`HOST:PORT` to listen on")
	data := fs.String("data", "", "`DIR` for the durable event log and a generated API key (empty: in memory, lost at exit)")
	keyFile := fs.String("api-key-file", "", "`FILE` whose first line is the API key of actor actor_default (else env CONFORM_SERVE_API_KEY, else a generated key: kept in DIR/"+serveKeyFile+" with --data, printed to stderr without)")
	actorFiles := actorFlags(fs) // serve_actors.go
	wsHeartbeat := fs.Duration("ws-heartbeat", wsadapter.DefaultHeartbeatInterval, "`INTERVAL` of the WebSocket ping frames (harn-ws.v1, at most 30s); a short one lets a suite see a ping quickly")
	wsAuthTimeout := fs.Duration("ws-auth-timeout", 10*time.Second, "`DURATION` a WebSocket upgrade without Authorization waits for its auth frame (harn-ws.v1, at most 10s); a short one lets a suite check the deadline quickly")
	var variants, faults names
	fs.Var(&variants, "variant", "turn on a legal-but-unusual behaviour, e.g. no-scenario-hook to stand in for a third-party server (repeatable; --list-variants lists them)")
	fs.Var(&faults, "fault", "break a requirement on purpose, to watch the suite catch it (repeatable; --list-faults lists them with the requirements each breaks)")
	listF := fs.Bool("list-faults", false, "list the faults --fault takes, each with the requirements it fails or warns about and what it does, then exit")
	listV := fs.Bool("list-variants", false, "list the variants --variant takes, each with what it does, then exit")
	format := formatFlag(fs, "how --list-faults and --list-variants write: text, a table; json, a list")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform serve [--addr HOST:PORT] [--data DIR] [--api-key-file FILE] [--fault NAME]… [--variant NAME]…\n       conform serve --list-faults | --list-variants [--format text|json]\n       conform serve --profile openharness [flags]  (the reference OpenHarness Engine; conform serve --profile openharness -h)\n\nRuns the reference Harness standalone until interrupted. A fault or variant of kind \"wire\" is a\nmiddleware in front of the Harness that rewrites what crosses the wire; one \"in-server\" is the\nHarness's own (docs/architecture.md, \"Recipe: a new fault\").\n\nflags:")
		cli.PrintFlags(fs.Output(), fs, map[string]string{"variant": "NAME", "fault": "NAME"})
		fmt.Fprint(fs.Output(), "\nexit codes: 0 stopped by a signal (or listed), 2 usage, configuration or serving error\n")
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 0, err
	}
	if err := checkFormat(fs, *format); err != nil {
		return 2, err
	}
	switch {
	case *listF && *listV:
		return 2, usageError{msg: "--list-faults and --list-variants: give one", usage: flagUsage(fs)}
	case *listF:
		return 0, listFaults(stdout, *format, servedFaults())
	case *listV:
		return 0, listVariants(stdout, *format, servedVariants())
	}
	var setup servedSetup // serve_faults.go
	if err := setup.pick(faults, variants); err != nil {
		return 2, usageError{msg: err.Error(), usage: flagUsage(fs)}
	}
	opts := setup.opts
	opts.DataDir = *data
	key, err := serveAPIKey(*data, *keyFile, os.Getenv, stderr)
	if err != nil {
		return 2, err
	}
	if err := addActors(&opts, key, *data, actorFiles, os.Getenv, stderr); err != nil {
		return 2, err
	}
	if *wsHeartbeat <= 0 || *wsHeartbeat > 30*time.Second {
		return 2, usageError{msg: fmt.Sprintf("--ws-heartbeat %s: want an interval in (0, 30s]", *wsHeartbeat), usage: flagUsage(fs)}
	}
	if *wsAuthTimeout <= 0 || *wsAuthTimeout > 10*time.Second {
		return 2, usageError{msg: fmt.Sprintf("--ws-auth-timeout %s: want a duration in (0, 10s]", *wsAuthTimeout), usage: flagUsage(fs)}
	}
	// REST, SSE and the WebSocket transport (harn-ws.v1) on the stream paths.
	h, err := builtin.New(opts, wsadapter.Options{HeartbeatInterval: *wsHeartbeat, AuthTimeout: *wsAuthTimeout})
	if err != nil {
		return 2, err
	}
	defer h.Close()
	handler, err := setup.wrap(h, key)
	if err != nil {
		return 2, err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 2, fmt.Errorf("--addr: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "conform serve: listening on http://%s\n", ln.Addr())
	fmt.Fprintf(stderr, "conform serve: OAuth2 token endpoint http://%s%s (client_id %s, the API key as client secret; docs/oauth.md)\n",
		ln.Addr(), refharness.OAuthTokenPath, opts.APIKeys[key])
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

// serveKeyFile is where serve keeps the API key it generated, in the data
// directory, so that a restart over the same data keeps the same key.
const serveKeyFile = "api-key"

// serveAPIKey picks the API key of a serve: --api-key-file, else
// CONFORM_SERVE_API_KEY, else the key a previous serve generated in the
// data directory, else a new one — written there (0600) when there is a
// data directory, printed to stderr when there is none (the operator has
// no other way to learn it). A key kept in a file is never printed: the
// message names the file.
func serveAPIKey(data, keyFile string, getenv func(string) string, stderr io.Writer) (string, error) {
	return serveKey(firstActor, data, keyFile, getenv, stderr) // serve_actors.go
}

// readKeyLine reads the first line of a key file; what names the flag the
// file belongs to, for errors. A missing file's error wraps os.ErrNotExist.
func readKeyLine(path, what string) (string, error) {
	b, err := readSmall(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	key := strings.TrimSpace(line)
	if key == "" {
		return "", fmt.Errorf("%s %s: first line is empty", what, path)
	}
	return key, nil
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
