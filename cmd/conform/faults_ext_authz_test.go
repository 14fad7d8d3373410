package main

// Extended, part 1 (issue 10): authorization between actors (EXT-AUTHZ-001,
// -002, -008, -009). Each fault row runs the whole Extended level
// against the reference Harness with one fault, the run holding the keys
// of the served harness's further actors, and must fail exactly its
// requirements. The clean harness (with and without the scenario hook)
// fails nothing of these areas, and a run without the further keys leaves
// the authorization requirements unverified with a remedy naming the flag.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// The canary keys of the served harness's further actors (selfcheck_test.go
// serve): actor_second, a tenant of its own, and actor_read_only.
const (
	testSecondKey   = "sk-canary-second-actor-8d21e7"
	testReadOnlyKey = "sk-canary-read-only-actor-47b0c2"
)

// actorArgs give a run the further actors' keys. They are flags here
// because a proof job is its flags; an operator would use the _file flags
// or the environment (see actorKeyFiles).
var actorArgs = []string{"--second-api-key", testSecondKey, "--read-only-api-key", testReadOnlyKey}

// actorKeyFiles writes the further keys to files and returns the flags
// naming them.
func actorKeyFiles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for _, k := range []struct{ flag, key string }{{"--second-api-key-file", testSecondKey}, {"--read-only-api-key-file", testReadOnlyKey}} {
		p := filepath.Join(dir, strings.TrimPrefix(k.flag, "--"))
		if err := os.WriteFile(p, []byte(k.key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, k.flag, p)
	}
	return args
}

func reportFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	return files
}

// authzJudged fails the test unless the run judged the second-actor
// requirements (so a check of the keys' absence was not vacuous).
func authzJudged(t *testing.T, r *reports.Report) {
	t.Helper()
	for _, q := range r.Requirements {
		if slices.Contains(authzReqs, q.ID) && q.Verdict != reports.Pass {
			t.Errorf("%s is %s, want pass with the further keys: %s", q.ID, q.Verdict, q.Message)
		}
	}
}

var authzReqs = []string{"EXT-AUTHZ-001", "EXT-AUTHZ-002", "EXT-AUTHZ-008", "EXT-AUTHZ-009"}

// extAuthzAreas are the requirements these rows prove: authorization, and
// the idempotency scope's actor (EXT-IDEM-005), which also needs the second
// actor's key.
var extAuthzAreas = []string{"EXT-AUTHZ-001", "EXT-AUTHZ-002", "EXT-AUTHZ-008", "EXT-AUTHZ-009", "EXT-IDEM-005"}

func init() {
	planProofs("TestExtAuthzCleanAndUnverified", func() []proofJob {
		return []proofJob{
			{spec: targetSpec{}, levels: "extended", extra: actorArgs},
			{spec: variantSpec(refharness.VariantNoScenarioHook), levels: "extended", extra: actorArgs},
			{spec: targetSpec{}, levels: "extended"},
		}
	})
}

// With the further keys the clean harness passes these areas, with or
// without the scenario hook; without them the authorization requirements
// are unverified, each with a remedy naming the flag that gives the key.
func TestExtAuthzCleanAndUnverified(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite three times")
	}
	startProofs(t)
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spec  targetSpec
		extra []string
	}{
		{"clean", targetSpec{}, actorArgs},
		{"no-scenario-hook", variantSpec(refharness.VariantNoScenarioHook), actorArgs},
		{"no-further-keys", targetSpec{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := proof(t, tc.name, tc.spec, "extended", tc.extra...)
			seen := 0
			for _, q := range r.Requirements {
				if !slices.Contains(extAuthzAreas, q.ID) {
					continue
				}
				seen++
				if tc.extra != nil {
					if q.Verdict != reports.Pass {
						t.Errorf("%s: %s is %s, want pass: %s", tc.name, q.ID, q.Verdict, q.Message)
					}
					continue
				}
				flag := "--second-api-key"
				if q.ID == "EXT-AUTHZ-001" {
					flag = "--read-only-api-key"
				}
				if q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, flag) {
					t.Errorf("%s: %s is %s (remedy %q), want unverified with a remedy naming %s", tc.name, q.ID, q.Verdict, q.Remedy, flag)
				}
			}
			if seen != len(extAuthzAreas) {
				t.Errorf("%s: %d of the %d requirements were in the report", tc.name, seen, len(extAuthzAreas))
			}
		})
	}
}

func init() {
	planProofs("TestGenericRouterWithActorsPasses", func() []proofJob {
		return []proofJob{{spec: wrapped("generic-router"), levels: "extended", extra: actorArgs}}
	})
}

// The generated negative probes weigh a refusal that looks like a missing
// route by evidence (docs/interpretations.md#generated-probes): a target
// that leaves optional routes out and answers every route it does not serve
// 404 resource_not_found (wire variant generic-router) passes Extended with
// the further actors' keys, and the read-only actor's writes are judged
// where the target serves them.
func TestGenericRouterWithActorsPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	startProofs(t)
	t.Parallel()
	_, r, _ := proof(t, "generic-router", wrapped("generic-router"), "extended", actorArgs...)
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
		t.Errorf("generic-router is legal but the suite reports %v: %s", bad, messages(r, bad))
	}
	authzJudged(t, r)
}
