package main

// The Extended level's fault rows, from the tables of the faults_ext_*
// files (one per group of areas): each row runs the whole Extended level
// against `conform serve --fault F` and must fail exactly its
// requirements; each SHOULD row must warn its requirement and fail
// nothing. Each file keeps its own clean and hook-less runs, whose
// expectations differ by area.

import (
	"slices"
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// extendedFaultTables are the Extended fault rows, one table per file.
var extendedFaultTables = [][]faultCase{extSessionFaults, extResourceFaults, extAuthzFaults, extHostFaults, extPrivacyFaults}

// extendedShouldFaults are the Extended rows that break a SHOULD (or a
// MAY's condition).
var extendedShouldFaults = slices.Concat(extSessionShouldFaults, extResourceShouldFaults, extHostShouldFaults)

func init() {
	planProofs("TestExtendedFaultsCaught", func() []proofJob {
		var jobs []proofJob
		for _, rows := range extendedFaultTables {
			jobs = append(jobs, faultJobs(rows, nil, "extended")...)
		}
		return jobs
	})
	planProofs("TestExtendedShouldFaultsWarn", func() []proofJob {
		var jobs []proofJob
		for _, tc := range extendedShouldFaults {
			jobs = append(jobs, proofJob{spec: targetSpec{Faults: []refharness.Fault{tc.Fault}}, levels: "extended"})
		}
		return jobs
	})
}

func TestExtendedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, rows := range extendedFaultTables {
		for _, tc := range rows {
			t.Run(string(tc.Fault), func(t *testing.T) {
				assertFaultCaught(t, tc, "extended")
			})
		}
	}
}

func TestExtendedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range extendedShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertWarnsOnly(t, "fault "+string(tc.Fault), targetSpec{Faults: []refharness.Fault{tc.Fault}}, "extended", tc.Warns)
		})
	}
}
