package runner

import (
	"errors"
	"io"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/suite"
)

// Inventory walks every registered spec without running any (a Ginkgo dry
// run) and returns, per requirement id, the names of the specs that verify
// it. Like Run, it may be called once per process.
func Inventory() (map[string][]string, error) {
	if err := suite.Validate(); err != nil {
		return nil, err
	}
	sc, rc := GinkgoConfiguration()
	sc.DryRun = true
	rc.Succinct, rc.NoColor, rc.SilenceSkips = true, true, true
	formatter.ColorableStdOut = io.Discard
	var captured *types.Report
	ReportAfterSuite("conform inventory", func(r Report) { captured = &r })
	RunSpecs(&tester{}, "conform", sc, rc)
	if captured == nil {
		return nil, errors.New("the dry run produced no report")
	}
	out := map[string][]string{}
	for _, sr := range captured.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		for _, l := range sr.Labels() {
			if id, ok := strings.CutPrefix(l, evidence.ReqLabelPrefix); ok {
				out[id] = append(out[id], sr.FullText())
			}
		}
	}
	for id := range out {
		sort.Strings(out[id])
	}
	return out, nil
}
