package main

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// Legal but unusual stream framing and cancel answers must pass.
var streamVariants = []refharness.Variant{refharness.VariantCRLF, refharness.VariantKeepAliveEveryFrame,
	refharness.VariantMultilineData, refharness.VariantCancelTerminalConflict}

func TestStreamVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range streamVariants {
		t.Run(string(v), func(t *testing.T) {
			assertVariantPasses(t, v, "core")
		})
	}
}
