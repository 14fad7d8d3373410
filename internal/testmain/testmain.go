// Package testmain is the TestMain of every test binary in this module,
// and the two things every test binary shares: the -proofs flag and
// whether the race detector is on.
//
// -proofs runs the proof tier too: the tests that judge the suites'
// verdicts against every fault, variant and reading of the reference
// Harness (hundreds of whole-level runs, minutes of both cores), and the
// whole of the matrices that a race build samples. `go test -race ./...`
// without it is the unit tier, which stays within its 90 s budget; the
// README's test command runs both tiers (docs/performance.md, "The test
// command"). Every test binary knows the flag, so `go test ./... -proofs`
// works across the module.
//
// The race exit sleep: a race-instrumented test binary sleeps a second as it
// exits, however few tests it ran (the race detector's atexit_sleep_ms,
// 1000 by default, which gives C threads time to report a race in
// flight). `go test -race ./...` runs fifty-odd test binaries two at a
// time, and each holds one of the go command's two slots through that
// second: about 25 s of the test command's 90 s budget spent asleep
// (docs/performance.md, "The test command"). Go code has no threads
// outside the runtime, and the testing package fails a test as soon as a
// race is reported during it, so the sleep guards nothing here.
//
// Setting GORACE after start is too late (the race runtime reads it as
// the process starts), so a race binary started without an
// atexit_sleep_ms of its own replaces itself (exec, same process id,
// same arguments and files) with a copy whose GORACE sets it to 0. A
// GORACE the user set keeps every other option; one that sets
// atexit_sleep_ms itself is left alone.
package testmain

import (
	"flag"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

var proofs = flag.Bool("proofs", false, "also run the proof tier: the suites against every fault, variant and reading of the reference Harness, and every matrix in full")

// Proofs reports whether -proofs is set (after flag.Parse; testing.M.Run
// parses the flags, and so does a TestMain that calls flag.Parse).
func Proofs() bool { return *proofs }

// Full reports whether a test runs its matrix whole: without the race
// detector, or when -proofs asks for everything.
func Full() bool { return !RaceEnabled || *proofs }

// Main runs the tests of a package that needs nothing else of TestMain:
//
//	func TestMain(m *testing.M) { testmain.Main(m) }
func Main(m *testing.M) {
	Setup()
	os.Exit(m.Run())
}

// Setup is the first call of a TestMain that does more than Main.
func Setup() {
	if env, ok := reexecEnv(RaceEnabled, runtime.GOOS, os.Environ()); ok {
		if exe, err := os.Executable(); err == nil {
			// Exec returns only when it failed: the tests then run on,
			// with the sleep.
			syscall.Exec(exe, os.Args, env)
		}
	}
}

// gorace is the variable the race runtime reads its options from.
const gorace = "GORACE"

// reexecEnv is the environment of the copy to exec, and whether to exec
// one: only for a race binary whose GORACE leaves atexit_sleep_ms unset,
// where exec exists.
func reexecEnv(race bool, goos string, environ []string) ([]string, bool) {
	if !race || goos == "windows" || goos == "plan9" {
		return nil, false
	}
	var opts string
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, gorace+"="); ok {
			opts = v
			continue
		}
		env = append(env, kv)
	}
	for _, f := range strings.Fields(opts) {
		if strings.HasPrefix(f, "atexit_sleep_ms=") {
			return nil, false
		}
	}
	return append(env, gorace+"="+strings.TrimSpace(opts+" atexit_sleep_ms=0")), true
}
