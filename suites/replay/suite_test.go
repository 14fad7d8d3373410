package replay

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/suite"
)

func TestReplay(t *testing.T) {
	RegisterFailHandler(Fail)
	if err := suite.Validate(); err != nil {
		t.Fatal(err)
	}
	defer suite.Shutdown()
	RunSpecs(t, "Replay conformance")
}
