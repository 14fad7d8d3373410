// Package embedded runs the built-in reference Harness in this process on a
// loopback port: the default target of `conform selftest` and of `go test`
// when no target is configured.
package embedded

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/harn-conform/conform/refharness"
)

// Harness is a running in-process reference Harness.
type Harness struct {
	URL    string
	APIKey string
	srv    *http.Server
	h      *refharness.Server
	dir    string
}

// StartLocal starts the reference Harness with a throw-away data directory
// (durable mode, so the run exercises the real event log) and a fresh key.
func Start(opts refharness.Options) (*Harness, error) {
	dir, err := os.MkdirTemp("", "conform-refharness-")
	if err != nil {
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	key := NewAPIKey()
	if opts.DataDir == "" {
		opts.DataDir = dir
	}
	if opts.APIKeys == nil {
		opts.APIKeys = map[string]string{key: "actor_default"}
	} else {
		for k := range opts.APIKeys {
			key = k
			break
		}
	}
	h, err := refharness.New(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("reference harness: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "reference harness:", err)
		}
	}()
	return &Harness{URL: "http://" + ln.Addr().String(), APIKey: key, srv: srv, h: h, dir: dir}, nil
}

// Close stops the server and removes its data directory.
func (l *Harness) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx) // streams may linger: Close below cuts them
	l.srv.Close()
	err := l.h.Close()
	os.RemoveAll(l.dir)
	return err
}

// NewAPIKey makes a random bearer key.
func NewAPIKey() string {
	var b [24]byte
	rand.Read(b[:])
	return "sk-conform-" + base64.RawURLEncoding.EncodeToString(b[:])
}
