// Package builtin is the one place the built-in references are assembled:
// the reference Harness with its transports (refharness, and the WebSocket
// adapter refharness/wsadapter mounted on its stream paths), the reference
// OpenHarness Engine on conform's HTTP binding (refharness/openharness),
// and the reference ACP Harbor agent as this binary's own `serve-acp`
// (refharness/acpharbor). Its init registers each with internal/reference,
// under reference.Harn and the profiles' names, so that the checker side —
// internal/suite, the suites, cmd/conform's run engine — can start them
// without importing refharness: importing this package (cmd/conform does,
// and so does each suite's suite_test.go) is what gives a binary its
// built-in references.
//
// New assembles a reference Harness for a server of one's own (conform
// serve, the proof runs' wrapserve); Start runs one in this process on a
// loopback port with a throw-away data directory, the target of `conform
// selftest` and of `go test` when no target is configured.
package builtin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/wsadapter"
)

func init() {
	reference.Register(reference.Harn, startHarness)
}

// startHarness is the Harn levels' built-in reference: Start with the
// default options, its keys, actors, OAuth2 client and in-process restart.
func startHarness(context.Context) (*reference.Reference, error) {
	h, err := Start(refharness.Options{})
	if err != nil {
		return nil, err
	}
	return &reference.Reference{
		Target: h.URL, APIKey: h.APIKey,
		SecondAPIKey: h.SecondAPIKey, ReadOnlyAPIKey: h.ReadOnlyAPIKey,
		// refharness/oauth.go: its actor is its OAuth2 client, with the
		// API key for secret.
		OAuthClientID: h.Actor, OAuthClientSecret: h.APIKey,
		Restart: h.Restart,
		Notes: []string{"selftest: the target is the built-in reference Harness, started in-process at " + h.URL +
			"; the durability checks restart it in-process over the same data directory"},
		Close: h.Close,
	}, nil
}

// New assembles the reference Harness over opts with every transport: its
// REST and SSE routes, and the WebSocket adapter (harn-ws.v1) on its
// stream paths with ws's heartbeat and auth-frame deadline. The caller
// serves it and closes it.
func New(opts refharness.Options, ws wsadapter.Options) (*refharness.Server, error) {
	h, err := refharness.New(opts)
	if err != nil {
		return nil, err
	}
	wsadapter.Mount(h, ws)
	return h, nil
}

// FastWebSocket are the WebSocket options of a harness a suite runs
// against in-process or in a proof run: a HeartbeatInterval ping and an
// AuthTimeout auth-frame deadline.
func FastWebSocket() wsadapter.Options {
	return wsadapter.Options{HeartbeatInterval: HeartbeatInterval, AuthTimeout: AuthTimeout}
}

// HeartbeatInterval is the in-process harness's WebSocket ping interval:
// short, so a suite's heartbeat check (EXT-WS-011), which waits for two
// pings, takes half a second.
const HeartbeatInterval = 250 * time.Millisecond

// AuthTimeout is how long the in-process harness waits for a browser-style
// client's auth frame (the profile allows up to 10 s): short, so that the
// suite's check of the deadline costs a selftest a second, not 10 (and
// still ample for a client on a loaded machine that sends its auth frame
// right after the upgrade).
const AuthTimeout = time.Second

// Harness is a running in-process reference Harness.
type Harness struct {
	URL    string
	APIKey string
	// Actor is the API key's actor: the harness's OAuth2 client id, with
	// the API key for its secret (refharness/oauth.go).
	Actor string
	// SecondAPIKey and ReadOnlyAPIKey are the keys of the further actors
	// the authorization checks need (docs/interpretations.md
	// #authz-tenancy), when Start made the keys: actor_second, a tenant
	// of its own, and actor_read_only, in the first actor's tenant and
	// allowed to read only. Empty when the caller gave opts.APIKeys.
	SecondAPIKey, ReadOnlyAPIKey string
	dir                          string             // the throw-away data directory Close removes
	opts                         refharness.Options // what every (re)start uses: same DataDir, same keys
	addr                         string             // the loopback address, kept across restarts

	mu     sync.Mutex
	srv    *http.Server
	h      *refharness.Server
	closed bool
}

// Start starts the reference Harness with a throw-away data directory
// (durable mode, so the run exercises the real event log, and a restart
// recovers from it) and a fresh key.
func Start(opts refharness.Options) (*Harness, error) {
	dir, err := os.MkdirTemp("", "conform-refharness-")
	if err != nil {
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	key := NewAPIKey()
	if opts.DataDir == "" {
		opts.DataDir = dir
	}
	var second, readOnly string
	if opts.APIKeys == nil {
		second, readOnly = NewAPIKey(), NewAPIKey()
		if opts, err = opts.WithActors(refharness.Actors{Default: key, Second: second, ReadOnly: readOnly}); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("reference harness: %w", err)
		}
	} else {
		for k := range opts.APIKeys {
			key = k
			break
		}
	}
	l := &Harness{APIKey: key, Actor: opts.APIKeys[key], SecondAPIKey: second, ReadOnlyAPIKey: readOnly, dir: dir, opts: opts, addr: "127.0.0.1:0"}
	if err := l.startLocked(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	l.URL = "http://" + l.addr
	return l, nil
}

// startLocked opens the harness over opts.DataDir and serves it on l.addr,
// which it then fixes (the first start picks a free port).
func (l *Harness) startLocked() error {
	// The WebSocket transport with a short heartbeat, so that a suite run
	// sees a ping frame without waiting the default 15 s.
	h, err := New(l.opts, FastWebSocket())
	if err != nil {
		return fmt.Errorf("reference harness: %w", err)
	}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		h.Close()
		return fmt.Errorf("reference harness: %w", err)
	}
	l.addr = ln.Addr().String()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "reference harness:", err)
		}
	}()
	l.srv, l.h = srv, h
	return nil
}

// stopLocked cuts every connection (streams included) and closes the
// harness, which stops its task workers and flushes its journal. A
// graceful stop first lets requests in flight finish (streams never do:
// Close cuts them after at most 2 s); a restart cuts them at once, as a
// crash would.
func (l *Harness) stopLocked(graceful bool) error {
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.srv.Shutdown(ctx) // streams may linger: Close below cuts them
	}
	l.srv.Close()
	return l.h.Close()
}

// Restart stops the harness and starts a new one over the same data
// directory on the same address, as a server restarted by its operator
// would be: the new one rebuilds everything from the journal and recovers
// the tasks that were running. It is the in-process counterpart of
// --restart-cmd (a target.RestartFunc).
func (l *Harness) Restart(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", errors.New("reference harness: restart after Close")
	}
	if err := l.stopLocked(false); err != nil {
		return "", fmt.Errorf("reference harness: stopping for the restart: %w", err)
	}
	if err := l.startLocked(); err != nil {
		l.closed = true // nothing is serving any more
		return "", fmt.Errorf("reference harness: starting again: %w", err)
	}
	return fmt.Sprintf("reference harness restarted in-process on %s over its data directory", l.addr), nil
}

// Close stops the server and removes its data directory.
func (l *Harness) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if !l.closed {
		l.closed = true
		err = l.stopLocked(true)
	}
	os.RemoveAll(l.dir)
	return err
}

// NewAPIKey makes a random bearer key.
func NewAPIKey() string {
	var b [24]byte
	rand.Read(b[:])
	return "sk-conform-" + base64.RawURLEncoding.EncodeToString(b[:])
}
