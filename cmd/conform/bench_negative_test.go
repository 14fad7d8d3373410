package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// negativeFaults are the faults of issue 21's negative rules on every path
// (docs/interpretations.md#generated-probes): each breaks a rule on one
// path the suite did not probe before.
var negativeFaults = []string{
	"authz-read-only-writes-memories", "oauth-expired-on-writes", "oauth-ws-upgrade-ignores-audience",
	"oauth-ws-auth-frame-accepts-expired", "artifact-idempotency-reuse-replays", "idempotency-scope-without-actor",
	"ext-idempotency-key-refused", "vault-list-leaks-unfiltered", "receipt-leaks-api-key-base64",
}

// BenchmarkNegativeFaultsFullSet runs `conform run` with the full set of
// actors and tokens (the second and read-only actors' keys, the OAuth2
// client, the test-token hook) against the reference Harness, clean (the
// Extended and Receipts levels) and with each fault of negativeFaults (its
// level), and reports each run's wall time (docs/performance.md; issue 21:
// each fault caught in under 60 s on the 2-core machine). The clean run
// must exit 0; each faulty one exit 1 with its requirements failed and
// nothing else but what it tolerates.
//
//	go test -run XXX -bench NegativeFaultsFullSet -benchtime 1x ./cmd/conform/
func BenchmarkNegativeFaultsFullSet(b *testing.B) {
	fails, allowed, levels := map[string][]string{}, map[string][]string{}, map[string]string{"": "extended,receipts"}
	for _, f := range harnFaults() {
		fails[f.Name], allowed[f.Name], levels[f.Name] = f.Fails, slices.Concat(f.Fails, f.Tolerated), levelOf(f)
	}
	secret := filepath.Join(b.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte(testKey+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	walls := map[string]time.Duration{}
	for i := range b.N {
		for _, name := range append([]string{""}, negativeFaults...) {
			spec := targetSpec{}
			if name != "" {
				if _, ok := fails[name]; !ok {
					b.Fatalf("no fault %s", name)
				}
				spec.Faults = []refharness.Fault{refharness.Fault(name)}
			}
			p, err := serve(spec)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			code, console, raw, err := execConform(b.TempDir(), nil, slices.Concat([]string{"run", "--target", p.URL, "--levels", levels[name]}, actorArgs,
				[]string{"--oauth-client-id", "actor_default", "--oauth-client-secret-file", secret})...)
			wall := time.Since(start)
			p.stop()
			if err != nil {
				b.Fatal(err)
			}
			r, problems := reportProblems(nil, console, raw)
			for _, pr := range problems {
				b.Errorf("iteration %d, %s: %s", i, cmpName(name), pr)
			}
			if r == nil {
				b.Fatalf("iteration %d, %s: no report; exit %d:\n%s", i, cmpName(name), code, console)
			}
			failed := slices.Concat(verdicts(r, reports.Fail), verdicts(r, reports.Error))
			switch {
			case name == "" && code != 0:
				b.Errorf("iteration %d: the clean Harness: exit %d, want 0:%s", i, code, messages(r, failed))
			case name != "" && code != 1:
				b.Errorf("iteration %d, %s: exit %d, want 1:%s", i, name, code, messages(r, failed))
			}
			if name != "" {
				for _, id := range fails[name] {
					if !slices.Contains(failed, id) {
						b.Errorf("iteration %d, %s: %s did not fail", i, name, id)
					}
				}
				for _, id := range failed {
					if !slices.Contains(allowed[name], id) {
						b.Errorf("iteration %d, %s: %s failed too:%s", i, name, id, messages(r, []string{id}))
					}
				}
			}
			walls[cmpName(name)] += wall
		}
	}
	for name, w := range walls {
		b.ReportMetric(w.Seconds()/float64(b.N), strings.ReplaceAll(name, " ", "-")+"-s/op")
	}
}

func cmpName(name string) string {
	if name == "" {
		return "clean"
	}
	return name
}
