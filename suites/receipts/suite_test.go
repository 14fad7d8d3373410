package receipts

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/suite"

	// The built-in references (the reference Harness, the profiles'),
	// run when no target is configured (internal/reference).
	_ "github.com/harn-conform/conform/refharness/builtin"
)

func TestReceipts(t *testing.T) {
	RegisterFailHandler(Fail)
	if err := suite.Validate(); err != nil {
		t.Fatal(err)
	}
	defer suite.Shutdown()
	RunSpecs(t, "Receipts conformance")
}
