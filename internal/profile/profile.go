// Package profile is the registry of profiles: protocols related to the
// Harn Agents Protocol that conform checks on their own, each with its own
// requirements (registry entries whose level is the profile's name), its
// own Ginkgo specs (labelled with suite.Req like any level's) and its own
// preflight. Its built-in reference, for selftest and for `go test` of its
// suite package without a target, is registered with internal/reference
// under the profile's name (refharness/builtin does). A run checks
// either Harn levels or one profile (Ginkgo allows one RunSpecs per
// process). docs/profiles.md is how a profile plugs in.
//
// A suite package registers its profile from init, so that importing the
// package (cmd/conform does) makes the profile available:
//
//	func init() { profile.Register(profile.Profile{Name: requirements.OpenHarness, …}) }
package profile

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/harn-conform/conform/internal/preflight"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// Profile is one registered profile.
type Profile struct {
	// Name is the profile's name on the command line (--profile NAME) and
	// the level of its requirements in the registry.
	Name requirements.Level
	// Title names the protocol for people: "OpenHarness v1 Engine".
	Title string
	// Protocol is what the report shows as protocol_version.
	Protocol string
	// Usage is the command line that checks an implementation, for
	// `conform list` and error hints.
	Usage string
	// NeedsTarget: the run needs --target URL. NeedsCommand: it needs the
	// agent command after `--`. A profile needs one or the other.
	NeedsTarget, NeedsCommand bool
	// Preflight runs before any spec (after the report directory is
	// checked): a problem stops the run with exit 2 and the problem's hint,
	// never a verdict. nil: no preflight.
	Preflight func(ctx context.Context, env *target.Env) *preflight.Problem
}

var (
	mu       sync.Mutex
	profiles = map[requirements.Level]Profile{}
)

// Register adds a profile. It panics on a name that is not a profile of
// the registry (requirements.Profiles), on a second registration, and on a
// profile that needs neither a target nor a command: each is a defect of
// the build, found by the first test that imports the package.
func Register(p Profile) {
	if !p.Name.IsProfile() {
		panic(fmt.Sprintf("profile.Register: %q is not in requirements.Profiles", p.Name))
	}
	if p.NeedsTarget == p.NeedsCommand {
		panic(fmt.Sprintf("profile.Register: %s must need exactly one of a target and a command", p.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := profiles[p.Name]; dup {
		panic(fmt.Sprintf("profile.Register: %s registered twice", p.Name))
	}
	profiles[p.Name] = p
}

// Lookup returns a registered profile by name (case-insensitive). Its
// error names the registered profiles.
func Lookup(name string) (Profile, error) {
	l, err := requirements.ParseProfile(name)
	if err != nil {
		return Profile{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	p, ok := profiles[l]
	if !ok {
		return Profile{}, fmt.Errorf("profile %s is not built into this binary (its suite package is not imported)", l)
	}
	return p, nil
}

// All returns the registered profiles in requirements.Profiles order.
func All() []Profile {
	mu.Lock()
	defer mu.Unlock()
	var out []Profile
	for _, l := range requirements.Profiles() {
		if p, ok := profiles[l]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Names lists the registered profiles' names, sorted.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, string(p.Name))
	}
	sort.Strings(out)
	return out
}
