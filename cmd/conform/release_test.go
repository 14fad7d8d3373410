package main

// Releases you can pin without tags (docs/releasing.md): the version in the
// source agrees with CHANGELOG.md, every pin in the docs and templates is a
// release commit (never a tag), and the release configuration keeps its
// targets, checksums and SBOMs.

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// datedVersions are CHANGELOG.md's released versions, newest first.
func datedVersions(changelog string) []string {
	var vs []string
	for _, m := range regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+[^\]]*)\] - \d{4}-\d{2}-\d{2}$`).FindAllStringSubmatch(changelog, -1) {
		vs = append(vs, m[1])
	}
	return vs
}

// unreleased is the text under CHANGELOG.md's ## [Unreleased].
func unreleased(changelog string) string {
	_, rest, _ := strings.Cut(changelog, "## [Unreleased]\n")
	body, _, _ := strings.Cut(rest, "\n## [")
	return strings.TrimSpace(body)
}

// pinnedRelease is the release the docs pin for a source version: the
// newest dated one, or on its own release commit the one before it.
func pinnedRelease(version string, dated []string) (string, bool) {
	switch {
	case len(dated) == 0:
		return "", false
	case version == dated[0]:
		if len(dated) < 2 {
			return "", false
		}
		return dated[1], true
	case version == dated[0]+"+dev":
		return dated[0], true
	}
	return "", false
}

func TestPinnedRelease(t *testing.T) {
	t.Parallel()
	dated := []string{"0.3.0", "0.2.0", "0.1.0"}
	for v, want := range map[string]string{"0.3.0+dev": "0.3.0", "0.3.0": "0.2.0", "0.2.0+dev": "", "0.4.0": "", "0.3.0-dev": ""} {
		got, ok := pinnedRelease(v, dated)
		if got != want || ok != (want != "") {
			t.Errorf("pinnedRelease(%q) = %q, %v; want %q", v, got, ok, want)
		}
	}
}

// pin is one reference to a conform commit in a doc or template.
type pin struct{ file, ref, line string }

var pinPatterns = []*regexp.Regexp{
	regexp.MustCompile(`harn-conform/conform@([^\s#]+)`),
	regexp.MustCompile(`raw\.githubusercontent\.com/harn-conform/conform/([^/\s]+)/`),
	regexp.MustCompile(`CONFORM_REF:\s*([^\s#]+)`),
	regexp.MustCompile(`github\.com/harn-conform/conform(?:\.git)? ([^\s#]+)`), // git fetch URL REF
	regexp.MustCompile(`--branch\s+(\S+)`),
}

func pins(t *testing.T, file string) []pin {
	t.Helper()
	var ps []pin
	for _, line := range strings.Split(readRepoFile(t, file), "\n") {
		for _, re := range pinPatterns {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				if m[1] == `""` || strings.HasPrefix(m[1], "${{") { // the template's CONFORM_REF, which users set; the action's input
					continue
				}
				ps = append(ps, pin{file, m[1], strings.TrimSpace(line)})
			}
		}
	}
	return ps
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// gitShow is `git show REV:PATH` in the repository, or ok false where git
// or the commit is not there (a tarball, a shallow clone).
func gitShow(t *testing.T, rev, path string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", "show", rev+":"+path)
	cmd.Dir = repoRoot(t)
	b, err := cmd.Output()
	return string(b), err == nil
}

// The version is the source's: version.sh reads the same constant; it is
// the newest dated CHANGELOG version (a release commit, with nothing under
// Unreleased) or that version with +dev. Every pin of README.md,
// docs/ci.md, action.yml and the GitLab template is a full commit id with
// "# v<release>" on its line, all the same commit, the release the source
// version says to pin; where the clone has that commit, its CHANGELOG.md
// dates that release first (it is the release commit). CHANGELOG.md's links
// name commits, never tags.
func TestDistVersion(t *testing.T) {
	t.Parallel()
	changelog := readRepoFile(t, "CHANGELOG.md")
	dated := datedVersions(changelog)
	want, ok := pinnedRelease(releaseVersion, dated)
	if !ok {
		t.Fatalf("releaseVersion %q is neither CHANGELOG.md's newest dated version %v nor it with +dev (docs/releasing.md)", releaseVersion, dated)
	}
	if releaseVersion == dated[0] && unreleased(changelog) != "" {
		t.Errorf("the release commit of %s has changes under Unreleased:\n%s", releaseVersion, unreleased(changelog))
	}
	if out, err := exec.Command("sh", filepath.Join(repoRoot(t), ".ci", "release", "version.sh")).Output(); err != nil || strings.TrimSpace(string(out)) != releaseVersion {
		t.Errorf(".ci/release/version.sh = %q (%v), want %q", out, err, releaseVersion)
	}

	commits := map[string]bool{}
	for _, f := range []string{"README.md", "docs/ci.md", "action.yml", ".ci/gitlab/conform.gitlab-ci.yml"} {
		ps := pins(t, f)
		if len(ps) == 0 {
			t.Errorf("%s pins no conform commit", f)
		}
		for _, p := range ps {
			if !fullSHA.MatchString(p.ref) {
				t.Errorf("%s pins %q, not a commit (tags may be missing or moved): %s", p.file, p.ref, p.line)
				continue
			}
			if !strings.Contains(p.line, "# v"+want) || regexp.MustCompile(`# v\d`).FindAllString(p.line, -1) == nil {
				t.Errorf("%s: the pin of %s does not say # v%s on its line: %s", p.file, p.ref, want, p.line)
			}
			commits[p.ref] = true
		}
	}
	if len(commits) != 1 {
		t.Fatalf("the docs pin %d different commits %v, want one: %s's release commit", len(commits), mapKeys(commits), want)
	}
	var pinned string
	for c := range commits {
		pinned = c
	}
	if old, ok := gitShow(t, pinned, "CHANGELOG.md"); !ok {
		t.Logf("this clone does not have %s: its being %s's release commit is not checked", pinned, want)
	} else if d := datedVersions(old); len(d) == 0 || d[0] != want || unreleased(old) != "" {
		t.Errorf("the pinned commit %s is not %s's release commit: its CHANGELOG dates %v first, Unreleased %q", pinned, want, d, unreleased(old))
	} else if src, ok := gitShow(t, pinned, "cmd/conform/version.go"); ok && !strings.Contains(src, `const releaseVersion = "`+want+`"`) {
		t.Errorf("the pinned commit %s says another version than %s in cmd/conform/version.go", pinned, want)
	}

	for _, m := range regexp.MustCompile(`(?m)^\[([^\]]+)\]: (\S+)$`).FindAllStringSubmatch(changelog, -1) {
		if !strings.HasPrefix(m[2], "https://github.com/harn-conform/conform/") {
			continue
		}
		if regexp.MustCompile(`/tag/|[/.]v\d+\.\d+\.\d+`).MatchString(m[2]) {
			t.Errorf("CHANGELOG.md's link [%s] names a tag: %s", m[1], m[2])
		}
		for _, sha := range regexp.MustCompile(`[0-9a-f]{40}`).FindAllString(m[2], -1) {
			if m[1] == "Unreleased" && sha != pinned {
				t.Errorf("[Unreleased] compares from %s, not the pinned release %s", sha, pinned)
			}
		}
	}
}

// .goreleaser.yaml builds conform for linux, darwin and windows on amd64
// and arm64, static and -trimpath, stamping the commit (never a version:
// it is the source's), into archives named by the source's version (zip
// for Windows) with the LICENSE, a CycloneDX SBOM per binary by
// cyclonedx-gomod (no syft), and SHA256SUMS; the snapshot script narrows
// exactly its goos line; the tools it runs are pinned in .ci/tools/go.mod.
// (`goreleaser check` itself runs in .ci/run, .ci/release/snapshot.sh.)
func TestDistGoreleaserConfig(t *testing.T) {
	t.Parallel()
	raw := readRepoFile(t, ".goreleaser.yaml")
	var c struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main, Binary string
			Env, Flags   []string
			Ldflags      []string
			Goos, Goarch []string
		}
		Archives []struct {
			Formats         []string `yaml:"formats"`
			FormatOverrides []struct {
				Goos    string
				Formats []string
			} `yaml:"format_overrides"`
			NameTemplate string   `yaml:"name_template"`
			Files        []string `yaml:"files"`
		}
		Sboms []struct {
			Artifacts, Cmd string
			Args           []string
			Documents      []string
		}
		Checksum struct {
			NameTemplate string `yaml:"name_template"`
			Algorithm    string
		}
	}
	if err := yaml.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != 2 || len(c.Builds) != 1 || len(c.Archives) != 1 || len(c.Sboms) != 1 {
		t.Fatalf("version %d, %d builds, %d archives, %d sboms; want GoReleaser v2 config with one of each", c.Version, len(c.Builds), len(c.Archives), len(c.Sboms))
	}
	b := c.Builds[0]
	slices.Sort(b.Goos)
	slices.Sort(b.Goarch)
	if b.Main != "./cmd/conform" || !slices.Equal(b.Goos, []string{"darwin", "linux", "windows"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) ||
		!slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build %+v: want ./cmd/conform for linux, darwin, windows × amd64, arm64, CGO_ENABLED=0, -trimpath", b)
	}
	ld := strings.Join(b.Ldflags, " ")
	if !strings.Contains(ld, "-X main.commit={{ .FullCommit }}") || strings.Contains(ld, "main.version") || !strings.Contains(ld, "-s -w") {
		t.Errorf("ldflags %q: want -s -w and the commit stamped, no version", ld)
	}
	a := c.Archives[0]
	if !strings.Contains(a.NameTemplate, "{{ .Env.CONFORM_VERSION }}") || !slices.Contains(a.Files, "LICENSE") || !slices.Equal(a.Formats, []string{"tar.gz"}) ||
		len(a.FormatOverrides) != 1 || a.FormatOverrides[0].Goos != "windows" || !slices.Equal(a.FormatOverrides[0].Formats, []string{"zip"}) {
		t.Errorf("archives %+v: want tar.gz (zip for windows) named by the source's version, with the LICENSE", a)
	}
	s := c.Sboms[0]
	if s.Artifacts != "binary" || s.Cmd != "cyclonedx-gomod" || s.Args[0] != "bin" || !slices.Contains(s.Args, "$artifact") || !slices.Contains(s.Args, "$document") {
		t.Errorf("sboms %+v: want cyclonedx-gomod bin over each binary", s)
	}
	if c.Checksum.NameTemplate != "SHA256SUMS" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want SHA256SUMS by sha256", c.Checksum)
	}
	if !strings.Contains(raw, "\n    goos: [linux, darwin, windows]\n") || !strings.Contains(readRepoFile(t, ".ci/release/snapshot.sh"), `s/^    goos: \[linux, darwin, windows\]$/    goos: [linux]/`) {
		t.Error("the snapshot script no longer narrows .goreleaser.yaml's goos line")
	}
	tools := readRepoFile(t, ".ci/tools/go.mod")
	for _, want := range []string{"github.com/goreleaser/goreleaser/v2 v2.15.1", "github.com/CycloneDX/cyclonedx-gomod v1.10.0", "\tgithub.com/goreleaser/goreleaser/v2\n", "\tgithub.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod\n"} {
		if !strings.Contains(tools, want) {
			t.Errorf(".ci/tools/go.mod lacks %q", want)
		}
	}
	if run := readRepoFile(t, ".ci/run"); !strings.Contains(run, "sh .ci/release/snapshot.sh") || !strings.Contains(run, "go -C .ci/image test ./...") {
		t.Error(".ci/run no longer rehearses the release (snapshot.sh) or tests the image builder")
	}
}

// The action's cache step, as the runner runs it: a key of the OS, the
// architecture, the Go release and the action's go.sum (and conform-ref
// when given), the Go module and build caches as the directories; without
// Go on PATH, no outputs (the cache step is skipped) and no failure.
func TestDistActionCache(t *testing.T) {
	t.Parallel()
	goenv := func(k string) string {
		b, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	prefix := "conform-go-" + goenv("GOOS") + "-" + goenv("GOARCH") + "-" + goenv("GOVERSION") + "-"
	script := filepath.Join(repoRoot(t), ".ci", "action", "cache.sh")
	for ref, suffix := range map[string]string{"": "", "feature/x y": "-feature_x_y"} {
		r := newGitHubRunner(t)
		r.env["CONFORM_REF"] = ref
		code, log := runSh(t, r.workspace, ciEnv(r.env), script)
		out := r.outputs(t)
		if code != 0 || !regexp.MustCompile(`^`+regexp.QuoteMeta(prefix)+`[0-9a-f]{16}`+regexp.QuoteMeta(suffix)+`$`).MatchString(out["key"]) ||
			out["restore-key"] != prefix || out["gomodcache"] != goenv("GOMODCACHE") || out["gocache"] != goenv("GOCACHE") {
			t.Errorf("conform-ref %q: exit %d, outputs %v; want key %s<go.sum>%s and go env's directories:\n%s", ref, code, out, prefix, suffix, log)
		}
	}
	r := newGitHubRunner(t)
	env := ciEnv(r.env)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + t.TempDir()
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, script)
	cmd.Env, cmd.Dir = env, r.workspace
	if b, err := cmd.CombinedOutput(); err != nil || len(r.outputs(t)) != 0 {
		t.Errorf("without go: %v, outputs %v:\n%s", err, r.outputs(t), b)
	}
}
