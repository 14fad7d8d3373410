package main

// A gate the user chooses (issue 24, item 2): against `conform serve`
// without a restart command the durability MUSTs stay unverified. The
// default gate fails on them — exit 1, a JUnit <failure> and an ::error
// each, with the remedy; --fail-on failures passes and still lists them
// (a ::warning each, <skipped> in junit.xml, the step summary, the
// unverified output); --skip-areas CORE-DUR leaves them out by choice.

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/reports"
)

func TestDistActionGate(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	addr := freeAddr(t)
	startServe(t, addr) // no --restart-cmd: CORE-DUR-001/002 cannot be verified
	durability := []string{"CORE-DUR-001", "CORE-DUR-002"}
	for _, tc := range []struct {
		name       string
		inputs     map[string]string
		code       int
		result     string
		annotation string // the kind of each durability MUST's annotation, "" for none
		junit      string // what each is in junit.xml: failure or skipped
	}{
		{"strict", map[string]string{}, 1, "nonconformant", "error", "failure"},
		{"fail on failures", map[string]string{"fail-on": "failures"}, 0, "passed", "warning", "skipped"},
		{"durability left out", map[string]string{"extra-args": "--skip-areas CORE-DUR"}, 0, "passed", "", "skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newGitHubRunner(t)
			inputs := map[string]string{"target": "http://" + addr, "api-key": testKey, "levels": "core", "wait-for-target": "60s"}
			for k, v := range tc.inputs {
				inputs[k] = v
			}
			code, log := r.run(t, inputs)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; log:\n%s", code, tc.code, log)
			}
			out := r.outputs(t)
			if out["result"] != tc.result || out["failed"] != "" || out["core"] != "partial" {
				t.Errorf("outputs result=%q failed=%q core=%q, want %s, none failed, core partial", out["result"], out["failed"], out["core"], tc.result)
			}
			if want := strings.Join(durability, ","); tc.annotation != "" && out["unverified"] != want {
				t.Errorf("output unverified = %q, want %q", out["unverified"], want)
			}
			if !strings.HasPrefix(out["gate"], map[int]string{0: "passed", 1: "failed"}[tc.code]) {
				t.Errorf("output gate = %q", out["gate"])
			}
			as := annotations(t, log)
			for _, id := range durability {
				i := slices.IndexFunc(as, func(a annotation) bool { return a.title == id+" (MUST, core)" })
				switch {
				case tc.annotation == "" && i >= 0:
					t.Errorf("%s is annotated though its area was left out: %+v", id, as[i])
				case tc.annotation == "":
				case i < 0:
					t.Errorf("no annotation for %s: %v", id, as)
				case as[i].kind != tc.annotation || !strings.Contains(as[i].message, "--restart-cmd"):
					t.Errorf("%s: %+v, want a %s with the remedy (--restart-cmd)", id, as[i], tc.annotation)
				}
			}
			if tc.code == 1 && !slices.ContainsFunc(ofKind(as, "error"), func(a annotation) bool {
				return strings.Contains(a.title, "not conformant") && strings.Contains(a.message, "unverified: CORE-DUR-001")
			}) {
				t.Errorf("no overall ::error naming what failed the gate: %v", as)
			}

			// junit.xml: what makes the run exit 1 is a <failure>.
			b, err := os.ReadFile(filepath.Join(r.workspace, "conform-report", reports.JUnitFile))
			if err != nil {
				t.Fatal(err)
			}
			var ju struct {
				Cases []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Type    string `xml:"type,attr"`
						Message string `xml:"message,attr"`
					} `xml:"failure"`
					Skipped *struct {
						Message string `xml:"message,attr"`
					} `xml:"skipped"`
				} `xml:"testsuite>testcase"`
			}
			if err := xml.Unmarshal(b, &ju); err != nil {
				t.Fatal(err)
			}
			failures := 0
			for _, c := range ju.Cases {
				if c.Failure != nil {
					failures++
				}
				id, _, _ := strings.Cut(c.Name, ":")
				if !slices.Contains(durability, id) {
					continue
				}
				switch {
				case tc.junit == "failure" && (c.Failure == nil || c.Failure.Type != "unverified" || !strings.Contains(c.Failure.Message, "--restart-cmd")):
					t.Errorf("%s: %+v, want <failure type=unverified> with the remedy", id, c)
				case tc.junit == "skipped" && (c.Skipped == nil || c.Failure != nil):
					t.Errorf("%s: %+v, want <skipped>", id, c)
				}
			}
			if want := map[int]int{0: 0, 1: len(durability)}[tc.code]; failures != want {
				t.Errorf("%d <failure>s, want %d", failures, want)
			}

			sum := r.stepSummary(t)
			if !strings.Contains(sum, "**Gate:**") || (tc.annotation != "" && !strings.Contains(sum, "CORE-DUR-001")) {
				t.Errorf("the step summary does not open on the gate or does not list the unverified MUSTs:\n%s", sum)
			}
			if tc.annotation == "" && !strings.Contains(sum, "## Not checked by choice") {
				t.Errorf("the step summary does not say what was left out:\n%s", sum)
			}
		})
	}
}
