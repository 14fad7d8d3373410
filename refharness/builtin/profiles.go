package builtin

// The profiles' built-in references (docs/profiles.md), registered under
// the profiles' names.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/internal/requirements"
	refoh "github.com/harn-conform/conform/refharness/openharness"
)

func init() {
	reference.Register(string(requirements.OpenHarness), startOpenHarness)
	reference.Register(string(requirements.ACPHarbor), startACPHarbor)
}

// startOpenHarness serves the reference Engine on a loopback port, with a
// transport credential of its own, under a path (a target URL with a path
// is the common case).
func startOpenHarness(ctx context.Context) (*reference.Reference, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	key := "oh-ref-" + hex.EncodeToString(b[:])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: refoh.New(refoh.Options{APIKey: key}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	url := "http://" + ln.Addr().String() + "/openharness"
	return &reference.Reference{
		Target: url, APIKey: key,
		Notes: []string{"selftest: the reference OpenHarness Engine (refharness/openharness) served in-process at " + url},
		Close: srv.Close,
	}, nil
}

// ServeCommand is the argument with which a binary that called
// EnableSelfServe runs the reference ACP Harbor agent (`conform
// serve-acp`, refharness/acpharbor.Main).
const ServeCommand = "serve-acp"

var selfServe atomic.Bool

// EnableSelfServe says that this binary runs the reference agent when
// started as `BINARY serve-acp …` (conform's main does, and the acp-harbor
// suite's test binary): the acp-harbor reference then re-executes it. Call
// it from main, never from an init (a test binary of another package must
// not think it can).
func EnableSelfServe() { selfServe.Store(true) }

// startACPHarbor is the acp-harbor profile's built-in reference: this
// binary's own `serve-acp`, started afresh by every spec like any agent
// command.
func startACPHarbor(context.Context) (*reference.Reference, error) {
	if !selfServe.Load() {
		return nil, errors.New("this binary cannot run the reference agent (it is `conform serve-acp`): build conform and give its command after --")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating this binary to run the reference agent: %w", err)
	}
	return &reference.Reference{
		AgentCommand: []string{self, ServeCommand},
		Notes:        []string{"the agent is the reference Harbor agent, `" + filepath.Base(self) + " serve-acp` (refharness/acpharbor), started afresh by each spec"},
	}, nil
}
