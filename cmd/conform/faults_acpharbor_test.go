package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/reports"
)

// ACP Harbor profile faults, derived from their declarations
// (refharness/acpharbor/faults.go): the reference agent (`conform
// serve-acp`) with one fault must fail exactly the requirements it
// declares (plus the tolerated ones that see the same broken answer from
// another side) and exit 1; a fault that breaks a SHOULD must earn a
// warning for it and fail nothing. Each row runs the conform binary with
// --profile acp-harbor and the same binary's serve-acp as the agent
// command. Its variants are legal readings of the Harbor text the profile
// must accept: no failure, no error, no unverified requirement, and no
// warning but the ones a variant declares (harbor/… method names are legal
// but use names ACP reserves); no-harbor has a test of its own
// (TestACPHarborBaseOnlyAgent).

// acpHarborRun runs the profile against the reference agent with the given
// serve-acp flags and returns the exit code and the report. Short waits:
// a fault that withholds a message costs them, a working agent answers in
// milliseconds.
//
// The agent command comes after -- as a user gives it (runConform appends
// --out at the end, where it would become the agent's, so this runs the
// binary itself).
func acpHarborRun(t *testing.T, agentFlags ...string) (int, *reports.Report) {
	t.Helper()
	return acpHarborRunWith(t, nil, nil, agentFlags...)
}

// acpHarborRunWith is acpHarborRun with conform flags of its own and
// variables added to conform's environment (which the agent inherits).
func acpHarborRunWith(t *testing.T, env, conformFlags []string, agentFlags ...string) (int, *reports.Report) {
	t.Helper()
	code, r, _ := acpHarborExec(t, env, conformFlags, agentFlags...)
	if r == nil {
		t.Fatalf("no report; exit %d", code)
	}
	return code, r
}

// acpHarborExec runs the profile and returns the exit code, the report (nil
// when none was written) and conform's output.
func acpHarborExec(t *testing.T, env, conformFlags []string, agentFlags ...string) (int, *reports.Report, string) {
	t.Helper()
	defer direct()()
	out := t.TempDir()
	args := append([]string{"run", "--profile", "acp-harbor", "--request-timeout", "3s", "--stream-timeout", "2s", "--out", out}, conformFlags...)
	args = append(append(args, "--", conformBin, "serve-acp"), agentFlags...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, conformBin, args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("conform %v hung; output so far:\n%s", args, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, reports.JSONFile))
	if err != nil {
		return code, nil, string(b)
	}
	r, problems := reportProblems(args, string(b), raw)
	for _, p := range problems {
		t.Error(p)
	}
	return code, r, string(b)
}

func TestACPHarborCleanAgent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	code, r := acpHarborRun(t)
	judgeProfileClean(t, "the reference agent", code, r)
	for _, q := range r.Requirements {
		if q.Level != string(requirements.ACPHarbor) {
			t.Errorf("a profile run reports %s of level %s", q.ID, q.Level)
		}
	}
	if len(r.Levels) != 1 || r.Levels[0].Level != requirements.ACPHarbor {
		t.Errorf("levels %+v; want the profile's", r.Levels)
	}
}

// An agent that advertises nothing of Harbor: the extensions are not
// claimed (skip), the base protocol is judged and conformant.
func TestACPHarborBaseOnlyAgent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	code, r := acpHarborRun(t, "--variant", string(acpharbor.VariantNoHarbor))
	judgeProfileClean(t, "a base-ACP agent", code, r)
	passed, skipped := verdicts(r, reports.Pass), verdicts(r, reports.Skip)
	for _, id := range []string{"ACP-INIT-001", "ACP-SESS-001", "ACP-PROMPT-001", "ACP-CANCEL-001", "ACP-RPC-001"} {
		if !slices.Contains(passed, id) {
			t.Errorf("%s not passed for a base-ACP agent (passed: %v)", id, passed)
		}
	}
	for _, id := range []string{"ACP-CAP-001", "ACP-SNAP-001", "ACP-BRANCH-004", "ACP-PIPE-004", "ACP-WS-001"} {
		if !slices.Contains(skipped, id) {
			t.Errorf("%s not skipped (not claimed) for an agent without a Harbor bundle (skipped: %v)", id, skipped)
		}
	}
}

func TestACPHarborFaultsCaught(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range acpharbor.FaultDecls() {
		if len(tc.Fails) == 0 {
			continue // TestACPHarborShouldFaultsWarn
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--fault", tc.Name)
			judgeProfileFault(t, code, r, tc.Fails, tc.Tolerated)
		})
	}
}

func TestACPHarborShouldFaultsWarn(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range acpharbor.FaultDecls() {
		if len(tc.Fails) > 0 {
			continue // TestACPHarborFaultsCaught
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--fault", tc.Name)
			judgeProfileShould(t, code, r, tc.Warns...)
		})
	}
}

func TestACPHarborVariantsAccepted(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per variant")
	}
	t.Parallel()
	for _, tc := range acpharbor.VariantDecls() {
		switch tc.Name {
		case string(acpharbor.VariantNoHarbor):
			continue // TestACPHarborBaseOnlyAgent
		case string(acpharbor.VariantAuthRequired):
			continue // TestACPHarborAuthRequired
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--variant", tc.Name)
			if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Unverified)...); len(bad) > 0 || code != 0 {
				t.Errorf("a legal reading, but exit %d and %v: %s", code, bad, messages(r, bad))
			}
			if warned := verdicts(r, reports.Warn); !slices.Equal(warned, tc.Warns) {
				t.Errorf("warnings %v, want %v: %s", warned, tc.Warns, messages(r, warned))
			}
		})
	}
}

// An agent that requires authentication (legal ACP: it advertises
// authMethods and answers session/new with Authentication required until
// authenticate): without --acp-auth-method everything that needs a
// session is unverified with a remedy naming its method, nothing fails or
// errs; given the method and the environment it needs, the run calls
// authenticate and the agent is conformant; given the method without that
// environment, or a method it does not advertise, the run stops before
// any verdict (exit 2: the user's setup).
func TestACPHarborAuthRequired(t *testing.T) {
	proofTier(t)
	t.Parallel()
	variant := []string{"--variant", string(acpharbor.VariantAuthRequired)}
	token := acpharbor.TokenEnv + "=conform-test-token-7c1e"
	t.Run("without a method", func(t *testing.T) {
		t.Parallel()
		code, r := acpHarborRunWith(t, []string{acpharbor.TokenEnv + "="}, nil, variant...)
		if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 || code != 1 {
			t.Errorf("exit %d, failed or erred %v, want exit 1 (partial) and none: %s", code, bad, messages(r, bad))
		}
		unverified := verdicts(r, reports.Unverified)
		for _, id := range []string{"ACP-SESS-001", "ACP-PROMPT-001", "ACP-CANCEL-001", "ACP-SNAP-001", "ACP-BRANCH-009"} {
			if !slices.Contains(unverified, id) {
				t.Errorf("%s is not unverified (unverified: %v)", id, unverified)
			}
		}
		for _, q := range r.Requirements {
			if q.Verdict == reports.Unverified && (!strings.Contains(q.Remedy, "--acp-auth-method") || !strings.Contains(q.Remedy, acpharbor.AuthMethodID)) {
				t.Errorf("%s is unverified with remedy %q, want one naming --acp-auth-method and the method %s", q.ID, q.Remedy, acpharbor.AuthMethodID)
			}
		}
		passed := verdicts(r, reports.Pass)
		for _, id := range []string{"ACP-INIT-001", "ACP-INIT-002", "ACP-CAP-001"} {
			if !slices.Contains(passed, id) {
				t.Errorf("%s does not need a session but did not pass (passed: %v)", id, passed)
			}
		}
	})
	t.Run("given the method", func(t *testing.T) {
		t.Parallel()
		code, r := acpHarborRunWith(t, []string{token}, []string{"--acp-auth-method", acpharbor.AuthMethodID}, variant...)
		judgeProfileClean(t, "an agent authenticated with --acp-auth-method", code, r)
	})
	for name, tc := range map[string]struct {
		env    string
		method string
		says   string
	}{
		"the method without its environment": {acpharbor.TokenEnv + "=", acpharbor.AuthMethodID, acpharbor.TokenEnv},
		"a method it does not advertise":     {token, "oauth", acpharbor.AuthMethodID},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, _, out := acpHarborExec(t, []string{tc.env}, []string{"--acp-auth-method", tc.method}, variant...)
			if code != 2 || !strings.Contains(out, tc.says) {
				t.Errorf("exit %d, want 2 with a hint naming %s:\n%s", code, tc.says, out)
			}
		})
	}
}

// BenchmarkSelftestACPHarbor measures `conform selftest --profiles
// acp-harbor` as a whole process (start, every spec with its own agent
// process, reports) and the run's own duration_ms (docs/performance.md;
// issue 13's target is at most 2 s per profile).
//
//	go test -run XXX -bench SelftestACPHarbor -benchtime 5x ./cmd/conform/
func BenchmarkSelftestACPHarbor(b *testing.B) { benchProfileSelftest(b, "acp-harbor") }
