package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// File names inside the report directory.
const (
	JSONFile     = "conform.json"
	JUnitFile    = "junit.xml"
	MarkdownFile = "summary.md"
	HTMLFile     = "report.html"
)

// BadgeFile is the name of a level's shields.io endpoint badge
// ("badge-core.json").
func BadgeFile(level string) string { return "badge-" + level + ".json" }

// Permissions of what WriteAll creates: readable by the CI user that
// uploads the artifacts, whatever the umask of the temporary files.
const (
	FileMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o755
)

// JUnit granularities (the values of config.JUnit).
const (
	JUnitPerRequirement = "requirement" // one testcase per requirement (default)
	JUnitPerSpec        = "spec"        // one testcase per Ginkgo spec
)

// WriteOptions say how WriteAllWith renders the report files.
type WriteOptions struct {
	// JUnit is the testcase granularity of junit.xml: JUnitPerRequirement
	// (also for "") or JUnitPerSpec.
	JUnit string
}

// reportFile is one file of the report directory: its name and what
// writes it.
type reportFile struct {
	name  string
	write func(io.Writer) error
}

// reportFiles is the one list of the report directory's files for r, in
// the order they are written: WriteAllWith writes them and Files names
// them. A new format is one more entry here and one file of its own
// (docs/architecture.md).
func reportFiles(r *Report, opts WriteOptions) []reportFile {
	files := []reportFile{
		{JSONFile, func(w io.Writer) error { return WriteJSON(w, r) }},               // json.go
		{JUnitFile, func(w io.Writer) error { return WriteJUnit(w, r, opts.JUnit) }}, // junit.go
		{MarkdownFile, func(w io.Writer) error { return WriteMarkdown(w, r) }},       // markdown.go
		{HTMLFile, func(w io.Writer) error { return WriteHTML(w, r) }},               // html.go
	}
	for _, l := range r.Levels {
		if Judged(l) {
			files = append(files, reportFile{BadgeFile(string(l.Level)), func(w io.Writer) error { return WriteBadge(w, l) }}) // badge.go
		}
	}
	return files
}

// Judged reports whether the run judged a level, so that its badge says
// something about the target: a level the run checked and decided. A level
// not requested, not claimed (and not run) or undecided (the run stopped)
// gets no badge: a job that checks some levels leaves the badges other jobs
// wrote for the rest as they are.
func Judged(l LevelResult) bool { return l.Run && l.Status != Undecided }

// Unjudged names the levels that get no badge from this run.
func Unjudged(r *Report) []string {
	var out []string
	for _, l := range r.Levels {
		if !Judged(l) {
			out = append(out, string(l.Level))
		}
	}
	return out
}

// Files lists the names WriteAll writes into the report directory for r.
func Files(r *Report) []string {
	var names []string
	for _, f := range reportFiles(r, WriteOptions{}) {
		names = append(names, f.name)
	}
	return names
}

// WriteAll writes every report file into dir, creating it, with the junit
// granularity the run was configured with (the report's config "junit").
func WriteAll(dir string, r *Report) error {
	return WriteAllWith(dir, r, WriteOptions{JUnit: r.Config["junit"]})
}

// WriteAllWith writes conform.json, junit.xml, summary.md, report.html and
// one badge-LEVEL.json per level judged (Judged) into dir (created 0755 when missing), each
// file 0644 and replaced atomically.
func WriteAllWith(dir string, r *Report, opts WriteOptions) error {
	if opts.JUnit != "" && opts.JUnit != JUnitPerRequirement && opts.JUnit != JUnitPerSpec {
		return fmt.Errorf("junit granularity %q: want %s or %s", opts.JUnit, JUnitPerRequirement, JUnitPerSpec)
	}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return fmt.Errorf("report directory: %w", err)
		}
		// MkdirAll's mode is cut by the umask; the report directory itself
		// is meant to be readable.
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("report directory: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	for _, p := range SchemaProblems(r) {
		if !slices.Contains(r.SuiteDefects, p) {
			r.SuiteDefects = append(r.SuiteDefects, p)
		}
	}
	for _, f := range reportFiles(r, opts) {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes through a temporary file and renames it, so a crash
// never leaves a half-written report for CI to misread. The temporary file
// is created 0600; it is made FileMode before the rename.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	// Buffered: the HTML template writes thousands of small pieces.
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
