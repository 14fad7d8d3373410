package profile

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
)

func panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	f()
	return ""
}

// The registry refuses what would be a defect of the build, and Lookup
// names what it cannot find. (No suite package is imported here, so the
// registry starts empty.)
func TestRegistry(t *testing.T) {
	if m := panics(func() { Register(Profile{Name: requirements.Core, NeedsTarget: true}) }); !strings.Contains(m, "not in requirements.Profiles") {
		t.Errorf("registering a Harn level: %q", m)
	}
	if m := panics(func() { Register(Profile{Name: requirements.OpenHarness}) }); !strings.Contains(m, "exactly one") {
		t.Errorf("a profile needing neither target nor command: %q", m)
	}
	if _, err := Lookup("openharness"); err == nil || !strings.Contains(err.Error(), "not built into this binary") {
		t.Errorf("Lookup before Register: %v", err)
	}
	Register(Profile{Name: requirements.OpenHarness, NeedsTarget: true, Title: "t"})
	if m := panics(func() { Register(Profile{Name: requirements.OpenHarness, NeedsTarget: true}) }); !strings.Contains(m, "twice") {
		t.Errorf("registering twice: %q", m)
	}
	if p, err := Lookup(" OpenHarness "); err != nil || p.Title != "t" {
		t.Errorf("Lookup = %+v, %v", p, err)
	}
	if _, err := Lookup("gold"); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("Lookup(gold) = %v", err)
	}
	if got := Names(); len(got) != 1 || got[0] != "openharness" || len(All()) != 1 {
		t.Errorf("Names = %v", got)
	}
}
