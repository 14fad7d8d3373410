package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/cmd/conform/internal/runner"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/requirements"
)

// listed is one requirement with the specs that verify it.
type listed struct {
	requirements.Requirement
	Link  string   `json:"link"`
	Specs []string `json:"specs"`
}

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("conform list", flag.ContinueOnError)
	levels := fs.String("levels", "all", "levels to list: all (every level and profile), or a `list` of core,extended,receipts,replay and profiles (openharness, acp-harbor)")
	format := formatFlag(fs, "what standard output carries: text, a table; json, the list as JSON")
	out := fs.String("out", "", "also write the list as JSON to `FILE`")
	areas := fs.Bool("areas", false, "list the areas instead (requirement-id prefixes such as CORE-DUR, what conform run --areas and --skip-areas take), with their requirements")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform list [--levels …] [--areas] [--format text|json] [--out FILE]\n\nLists every requirement of the registry (Harn levels and profiles) and the specs that verify it, or with --areas its areas, without running anything.\n\nflags:")
		cli.PrintFlags(fs.Output(), fs, nil)
		fmt.Fprint(fs.Output(), exitCodes)
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 0, err
	}
	if err := checkFormat(fs, *format); err != nil {
		return 2, err
	}
	want := map[requirements.Level]bool{}
	for _, l := range strings.Split(*levels, ",") {
		if strings.TrimSpace(l) == "all" {
			for _, lv := range append(requirements.Levels(), requirements.Profiles()...) {
				want[lv] = true
			}
			continue
		}
		lv, err := requirements.ParseAny(l)
		if err != nil {
			return 2, usageError{msg: "--levels: " + err.Error(), usage: flagUsage(fs)}
		}
		want[lv] = true
	}
	reg, err := requirements.Default()
	if err != nil {
		return 2, err
	}
	specs, err := runner.Inventory()
	if err != nil {
		return 2, err
	}
	if *areas {
		return listAreas(reg, want, *format, *out, stdout)
	}
	var rows []listed
	for _, r := range reg.All() {
		if want[r.Level] {
			rows = append(rows, listed{Requirement: r, Link: r.Link(), Specs: append([]string{}, specs[r.ID]...)})
		}
	}
	if rows == nil {
		rows = []listed{}
	}
	if *out != "" {
		var b bytes.Buffer
		if err := writeJSON(&b, rows); err != nil {
			return 2, err
		}
		if err := cli.WriteOut(*out, b.Bytes()); err != nil {
			return 2, err
		}
	}
	if *format == cli.FormatJSON {
		return 0, writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tKEYWORD\tSPECS\tSUMMARY")
	for _, r := range rows {
		n := fmt.Sprint(len(r.Specs))
		switch {
		case !r.Observable:
			n = "-"
		case len(r.Specs) == 0 && r.Exclusion != "":
			n = "excl"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Keyword, n, oneLine(r.Summary, 90))
	}
	if err := tw.Flush(); err != nil {
		return 2, err
	}
	// The profiles: related protocols checked on their own
	// (docs/profiles.md), each with the command line that checks one.
	var shown []string
	for _, p := range profile.All() {
		if want[p.Name] {
			shown = append(shown, fmt.Sprintf("  %-12s %s: %s", p.Name, p.Title, p.Usage))
		}
	}
	if len(shown) > 0 {
		fmt.Fprintf(stdout, "\nprofiles (level column; docs/profiles.md):\n%s\n", strings.Join(shown, "\n"))
	}
	return 0, nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

// area is one area of the registry: a requirement-id prefix.
type area struct {
	Area         string             `json:"area"`
	Level        requirements.Level `json:"level"`
	Requirements []string           `json:"requirements"`
	MUSTs        int                `json:"musts"`
}

// listAreas lists the areas of the levels wanted (conform list --areas).
func listAreas(reg *requirements.Registry, want map[requirements.Level]bool, format, out string, stdout io.Writer) (int, error) {
	rows := []area{}
	for _, r := range reg.All() {
		if !want[r.Level] {
			continue
		}
		a := requirements.AreaOf(r.ID)
		if len(rows) == 0 || rows[len(rows)-1].Area != a {
			rows = append(rows, area{Area: a, Level: r.Level})
		}
		row := &rows[len(rows)-1]
		row.Requirements = append(row.Requirements, r.ID)
		if r.Keyword.Mandatory() {
			row.MUSTs++
		}
	}
	if out != "" {
		var b bytes.Buffer
		if err := writeJSON(&b, rows); err != nil {
			return 2, err
		}
		if err := cli.WriteOut(out, b.Bytes()); err != nil {
			return 2, err
		}
	}
	if format == cli.FormatJSON {
		return 0, writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AREA\tLEVEL\tREQUIREMENTS\tMUSTS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.Area, r.Level, len(r.Requirements), r.MUSTs)
	}
	if err := tw.Flush(); err != nil {
		return 2, err
	}
	fmt.Fprintln(stdout, "\nconform run --areas A,B checks only these areas of the selected levels; --skip-areas A,B checks all but these (docs/ci.md#choosing-the-gate).")
	return 0, nil
}
