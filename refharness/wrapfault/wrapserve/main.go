// Command wrapserve serves the reference Harness for the self-check's proof
// runs (cmd/conform's fault rows): with the given faults and variants,
// behind a named wrapfault middleware, mounted under a path prefix. It runs
// as its own process so that the race detector of `go test -race` slows
// only the tests, not the target the suite runs against.
//
// It prints "wrapserve: listening on URL" once it serves, and on SIGTERM or
// SIGINT stops, waits for every request it was serving to end and prints
// "wrapserve: used N", N being how often the middleware changed an answer.
// With --lifeline it also stops when its standard input ends, so that it
// does not outlive a test process that dies without stopping it. The API
// key of actor_default comes from CONFORM_SERVE_API_KEY, those of
// actor_second and actor_read_only from CONFORM_SERVE_SECOND_API_KEY and
// CONFORM_SERVE_READ_ONLY_API_KEY (optional).
//
// Test support, not part of the conformance tool.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/builtin"
	"github.com/harn-conform/conform/refharness/wrapfault"
)

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wrapserve:", err)
		os.Exit(2)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	prefix := flag.String("prefix", "/prefix", "path prefix the harness is mounted under")
	wrap := flag.String("wrap", "", "wrapfault middleware in front of the harness (empty: none)")
	data := flag.String("data", "", "data directory (empty: in memory)")
	lifeline := flag.Bool("lifeline", false, "stop when standard input ends (the parent holds its other end)")
	var faults, variants names
	flag.Var(&faults, "fault", "harness fault (repeatable)")
	flag.Var(&variants, "variant", "harness variant (repeatable)")
	flag.Parse()
	key := os.Getenv("CONFORM_SERVE_API_KEY")
	if key == "" {
		return errors.New("CONFORM_SERVE_API_KEY is not set")
	}
	// The further actors of conform serve (cmd/conform/serve_actors.go),
	// when their keys are set: a tenant of its own, and a read-only one.
	opts, err := refharness.Options{DataDir: *data, Faults: refharness.Faults{}, Variants: refharness.Variants{}}.WithActors(refharness.Actors{
		Default: key, Second: os.Getenv("CONFORM_SERVE_SECOND_API_KEY"), ReadOnly: os.Getenv("CONFORM_SERVE_READ_ONLY_API_KEY")})
	if err != nil {
		return err
	}
	for _, f := range faults {
		opts.Faults[refharness.Fault(f)] = true
	}
	for _, v := range variants {
		opts.Variants[refharness.Variant(v)] = true
	}
	// The WebSocket transport, with a short heartbeat and auth-frame
	// deadline, so that a proof run sees a ping and the deadline's 4401 in
	// about a second rather than 15 s and 10 s (both stay legal: the
	// profile sets maxima). A second is still ample for a suite on a
	// loaded machine to send its auth frame right after the upgrade.
	h, err := builtin.New(opts, builtin.FastWebSocket())
	if err != nil {
		return err
	}
	defer h.Close()
	var used atomic.Int64
	var handler http.Handler = h
	if *wrap != "" {
		if handler, err = wrapfault.Apply(*wrap, h, wrapfault.Env{APIKey: key, Used: func() { used.Add(1) }}); err != nil {
			return err
		}
	}
	// Every request holds a read lock while it is served, so that the count
	// printed at the end includes every change made while serving.
	var inflight sync.RWMutex
	mux := http.NewServeMux()
	mux.Handle(*prefix+"/", http.StripPrefix(*prefix, handler))
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.RLock()
		defer inflight.RUnlock()
		mux.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: counted}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if *lifeline {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			sig <- syscall.SIGTERM
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("wrapserve: listening on http://%s%s\n", ln.Addr(), *prefix)
	select {
	case err := <-errc:
		return err
	case <-sig:
	}
	srv.Close() // cancels the requests still open (streams)
	h.Close()
	inflight.Lock()
	fmt.Printf("wrapserve: used %d\n", used.Load())
	return nil
}
