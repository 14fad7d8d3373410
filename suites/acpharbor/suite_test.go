package acpharbor

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/testmain"
	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/refharness/builtin"
)

// TestMain lets this test binary be the reference agent: the profile's
// reference (refharness/builtin) re-executes it as `BINARY serve-acp`.
func TestMain(m *testing.M) {
	testmain.Setup()
	if len(os.Args) > 1 && os.Args[1] == builtin.ServeCommand {
		os.Exit(acpharbor.Main(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	builtin.EnableSelfServe()
	os.Exit(m.Run())
}

// TestACPHarbor runs the profile's specs under go test: against
// CONFORM_AGENT_COMMAND when set, otherwise against the reference agent.
func TestACPHarbor(t *testing.T) {
	if os.Getenv("CONFORM_PROFILE") == "" {
		os.Setenv("CONFORM_PROFILE", "acp-harbor")
	}
	RegisterFailHandler(Fail)
	if err := suite.Validate(); err != nil {
		t.Fatal(err)
	}
	defer suite.Shutdown()
	RunSpecs(t, "ACP Harbor profile")
}
