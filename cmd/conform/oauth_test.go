package main

// OAuth2 client credentials (EXT-OAUTH-001…006; docs/oauth.md): the suite,
// narrowed to the six requirements at the Extended level, passes the
// reference Harness, fails each OAuth fault on exactly its requirement,
// calls the refusals it has no token for unverified (with a remedy naming
// the setting) and takes an operator's fixture tokens instead of the
// harness's test-token hook. A narrowed run is partial by construction, so
// these tests judge verdicts, not the exit code. No token, client secret or
// fixture ever reaches a report file.

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/oauth"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/reports"
)

const oauthFilter = "req:EXT-OAUTH-001 || req:EXT-OAUTH-002 || req:EXT-OAUTH-003 || req:EXT-OAUTH-004 || req:EXT-OAUTH-005 || req:EXT-OAUTH-006"

var oauthReqs = []string{"EXT-OAUTH-001", "EXT-OAUTH-002", "EXT-OAUTH-003", "EXT-OAUTH-004", "EXT-OAUTH-005", "EXT-OAUTH-006"}

// harnessJWT is how every access token of the reference Harness starts: the
// base64url of its header {"alg":"EdDSA",…}. The suite's forged tokens
// start the same way. No report file may hold one.
const harnessJWT = "eyJhbGciOiJFZERTQSIs"

// secretFile writes the harness's OAuth2 client secret (the API key of
// actor_default, refharness/oauth.go) to a file for --oauth-client-secret-file.
func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(p, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// oauthArgs runs the narrowed suite with the harness's OAuth2 client.
func oauthArgs(t *testing.T, url string, extra ...string) []string {
	return append([]string{"run", "--target", url, "--levels", "extended", "--label-filter", oauthFilter,
		"--stream-timeout", faultStreamTimeout, "--oauth-client-id", "actor_default", "--oauth-client-secret-file", secretFile(t)}, extra...)
}

// oauthVerdicts returns each OAuth requirement's result and checks what
// every OAuth run must show: nothing else failed or errored, and no token
// in any report file.
func oauthVerdicts(t *testing.T, r *reports.Report, out string, secrets ...string) map[string]reports.ReqResult {
	t.Helper()
	got := map[string]reports.ReqResult{}
	for _, q := range r.Requirements {
		if slices.Contains(oauthReqs, q.ID) {
			got[q.ID] = q
		}
	}
	for _, id := range oauthReqs {
		if _, ok := got[id]; !ok {
			t.Fatalf("report has no verdict for %s", id)
		}
	}
	for _, v := range []reports.Verdict{reports.Fail, reports.Error} {
		for _, id := range verdicts(r, v) {
			if !slices.Contains(oauthReqs, id) {
				t.Errorf("unrelated requirement %s is %s: %s", id, v, messages(r, []string{id}))
			}
		}
	}
	noSecretsIn(t, out, append(secrets, harnessJWT, testKey)...)
	return got
}

// noSecretsIn fails if any file of the report directory holds a secret.
func noSecretsIn(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(string(b), s) {
				t.Errorf("%s holds a secret (%.24s…)", filepath.Base(f), s)
			}
		}
	}
}

func oauthRun(t *testing.T, url string, extra ...string) map[string]reports.ReqResult {
	t.Helper()
	code, console, r, out := runConform(t, oauthArgs(t, url, extra...)...)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if strings.Contains(console, harnessJWT) {
		t.Errorf("the console shows an access token:\n%s", console)
	}
	return oauthVerdicts(t, r, out)
}

func wantVerdicts(t *testing.T, got map[string]reports.ReqResult, want map[string]reports.Verdict) {
	t.Helper()
	for _, id := range oauthReqs {
		w, ok := want[id]
		if !ok {
			w = reports.Pass
		}
		if got[id].Verdict != w {
			t.Errorf("%s is %s, want %s: %s", id, got[id].Verdict, w, got[id].Message)
		}
	}
}

// The clean harness passes; the refusals of the tokens its test-token hook
// minted rest on that hook (docs/interpretations.md#hook-attested), the
// acceptance of the run's own token on nothing.
func TestOAuthCleanHarnessPasses(t *testing.T) {
	proofTier(t)
	t.Parallel()
	got := oauthRun(t, harness(t, refharness.Options{}))
	wantVerdicts(t, got, nil)
	wantHooks(t, got, map[string]bool{"EXT-OAUTH-002": true, "EXT-OAUTH-003": true, "EXT-OAUTH-004": true})
}

// wantHooks checks which OAuth requirements rest on the test-token hook.
func wantHooks(t *testing.T, got map[string]reports.ReqResult, hooked map[string]bool) {
	t.Helper()
	for _, id := range oauthReqs {
		if on := slices.Contains(got[id].Hooks, evidence.HookOAuthTestTokens); on != hooked[id] {
			t.Errorf("%s rests on %v, want the test-token hook %v", id, got[id].Hooks, hooked[id])
		}
	}
}

// Each fault declared to run narrowed to OAuth2 (fault.OAuth) fails
// exactly its requirements and warns about its SHOULDs (the scope faults
// also miss the SHOULD of scope names), every other OAuth requirement
// passes, and each finding says what the declaration says it must.
func TestOAuthFaultsCaught(t *testing.T) {
	proofTier(t)
	t.Parallel()
	for _, tc := range runFaults(fault.OAuth) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			want := map[string]reports.Verdict{}
			for _, id := range tc.Fails {
				want[id] = reports.Fail
			}
			for _, id := range tc.Warns {
				want[id] = reports.Warn
			}
			got := oauthRun(t, harness(t, refharness.Options{Faults: refharness.Faults{refharness.Fault(tc.Name): true}}))
			wantVerdicts(t, got, want)
			for id, v := range want {
				if got[id].Verdict == v && !strings.Contains(got[id].Message, tc.Says) {
					t.Errorf("%s's message does not say %q: %s", id, tc.Says, got[id].Message)
				}
			}
		})
	}
}

// A target without the test-token hook and no operator fixtures: the
// refusals only its issuer can mint tokens for are unverified, with a
// remedy naming the setting; the forged-token checks of EXT-OAUTH-002 still
// run (and pass), but cannot verify it alone.
func TestOAuthWithoutTestTokensIsUnverified(t *testing.T) {
	proofTier(t)
	t.Parallel()
	got := oauthRun(t, harness(t, refharness.Options{Variants: refharness.Variants{refharness.VariantNoOAuthTestTokens: true}}))
	wantVerdicts(t, got, map[string]reports.Verdict{"EXT-OAUTH-002": reports.Unverified, "EXT-OAUTH-003": reports.Unverified, "EXT-OAUTH-004": reports.Unverified})
	for id, setting := range map[string]string{"EXT-OAUTH-002": "CONFORM_OAUTH_WRONG_ISSUER_TOKEN", "EXT-OAUTH-003": "--oauth-wrong-audience-token-file", "EXT-OAUTH-004": "CONFORM_OAUTH_EXPIRED_TOKEN"} {
		if !strings.Contains(got[id].Remedy, setting) || !strings.Contains(got[id].Remedy, "conform.oauth_test_tokens") {
			t.Errorf("%s's remedy does not name %s and the hook: %q", id, setting, got[id].Remedy)
		}
	}
}

// Without a client the run cannot get tokens: every OAuth requirement is
// unverified with the remedy, none passed.
func TestOAuthWithoutClientIsUnverified(t *testing.T) {
	proofTier(t)
	t.Parallel()
	url := harness(t, refharness.Options{})
	code, console, r, out := runConform(t, "run", "--target", url, "--levels", "extended", "--label-filter", oauthFilter)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	got := oauthVerdicts(t, r, out)
	for _, id := range oauthReqs {
		if got[id].Verdict != reports.Unverified || !strings.Contains(got[id].Remedy, "--oauth-client-id") {
			t.Errorf("%s is %s (remedy %q), want unverified naming --oauth-client-id", id, got[id].Verdict, got[id].Remedy)
		}
	}
}

// A wrong client secret stops the run before its specs, like a wrong API
// key (exit 2, with a hint).
func TestOAuthRefusedClientStopsTheRun(t *testing.T) {
	t.Parallel()
	url := harness(t, refharness.Options{})
	bad := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(bad, []byte("not-the-secret\n"), 0o600)
	code, console, r, _ := runConform(t, "run", "--target", url, "--levels", "extended", "--label-filter", oauthFilter,
		"--oauth-client-id", "actor_default", "--oauth-client-secret-file", bad)
	if code != 2 || r == nil || r.Stopped == nil || !strings.Contains(console, "invalid_client") || !strings.Contains(console, "--oauth-client-id") {
		t.Errorf("exit %d, stopped %+v:\n%s", code, r.Stopped, console)
	}
}

// The operator's fixtures stand in for the hook: tokens the harness's key
// signed (the test holds it: it writes the data directory's key file
// before the harness starts) with an expired exp, another audience and
// another issuer. The clean harness passes every requirement with them, a
// harness that ignores audiences fails EXT-OAUTH-003 with them, and no
// fixture reaches a report.
func TestOAuthOperatorFixtures(t *testing.T) {
	proofTier(t)
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault refharness.Fault
		want  map[string]reports.Verdict
	}{
		{"clean", "", nil},
		{string(refharness.FaultOAuthIgnoresAudience), refharness.FaultOAuthIgnoresAudience, map[string]reports.Verdict{"EXT-OAUTH-003": reports.Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, key, _ := ed25519.GenerateKey(nil)
			doc, _ := json.Marshal(map[string]string{"key_id": "okey_operator", "algorithm": "ed25519", "seed": base64.StdEncoding.EncodeToString(key.Seed())})
			if err := os.WriteFile(filepath.Join(dir, "oauth-signing-key.json"), doc, 0o600); err != nil {
				t.Fatal(err)
			}
			spec := targetSpec{Variants: []refharness.Variant{refharness.VariantNoOAuthTestTokens}, Data: dir}
			if tc.fault != "" {
				spec.Faults = []refharness.Fault{tc.fault}
			}
			url := serveFor(t, spec).URL
			now := time.Now()
			mint := func(edit func(c map[string]any)) string {
				c := map[string]any{"iss": url, "aud": url + "/v1", "sub": "actor_default", "client_id": "actor_default",
					"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "operator", "scope": "tasks:read"}
				edit(c)
				tok, err := oauth.Sign(c, "okey_operator", key)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			fixtures := []string{
				"CONFORM_OAUTH_EXPIRED_TOKEN=" + mint(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }),
				"CONFORM_OAUTH_WRONG_AUDIENCE_TOKEN=" + mint(func(c map[string]any) { c["aud"] = "https://elsewhere.example/v1" }),
				"CONFORM_OAUTH_WRONG_ISSUER_TOKEN=" + mint(func(c map[string]any) { c["iss"] = "https://elsewhere.example" }),
			}
			out := t.TempDir()
			args := oauthArgs(t, url)
			code, console, raw, err := execConform(out, fixtures, args...)
			if err != nil {
				t.Fatal(err)
			}
			r, problems := reportProblems(args, console, raw)
			for _, p := range problems {
				t.Error(p)
			}
			if r == nil {
				t.Fatalf("no report; exit %d:\n%s", code, console)
			}
			var values []string
			for _, f := range fixtures {
				_, v, _ := strings.Cut(f, "=")
				values = append(values, v)
			}
			got := oauthVerdicts(t, r, out, values...)
			wantVerdicts(t, got, tc.want)
			wantHooks(t, got, nil) // the operator's fixtures are no hook
		})
	}
}
