package openharness

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/suite"

	// The built-in references (the reference Harness, the profiles'),
	// run when no target is configured (internal/reference).
	_ "github.com/harn-conform/conform/refharness/builtin"
)

// TestOpenHarness runs the profile's specs under go test: against
// CONFORM_TARGET when set, otherwise against the reference Engine started
// in this process (suite.Env, internal/reference).
func TestOpenHarness(t *testing.T) {
	if os.Getenv("CONFORM_PROFILE") == "" {
		os.Setenv("CONFORM_PROFILE", "openharness")
	}
	RegisterFailHandler(Fail)
	if err := suite.Validate(); err != nil {
		t.Fatal(err)
	}
	defer suite.Shutdown()
	RunSpecs(t, "OpenHarness profile")
}
