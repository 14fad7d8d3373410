package main

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

var restVariants = []refharness.Variant{refharness.VariantExtraFields, refharness.VariantReorderedKeys}

func TestRESTVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range restVariants {
		t.Run(string(v), func(t *testing.T) {
			assertVariantPasses(t, v, "core")
		})
	}
}
