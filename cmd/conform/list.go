package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/runner"
)

// listed is one requirement with the specs that verify it.
type listed struct {
	requirements.Requirement
	Link  string   `json:"link"`
	Specs []string `json:"specs"`
}

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("conform list", flag.ContinueOnError)
	levels := fs.String("levels", "all", "levels to list: all, or a list of core,extended,receipts,replay")
	format := fs.String("format", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: conform list [--levels …] [--format text|json]\n\nLists every requirement of the registry and the specs that verify it, without running anything.\n\nflags:")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 2, err
	}
	if *format != "text" && *format != "json" {
		return 2, usageError{msg: fmt.Sprintf("--format: %q is not text or json", *format), usage: flagUsage(fs)}
	}
	want := map[requirements.Level]bool{}
	for _, l := range strings.Split(*levels, ",") {
		if strings.TrimSpace(l) == "all" {
			for _, lv := range requirements.Levels() {
				want[lv] = true
			}
			continue
		}
		lv, err := requirements.ParseLevel(l)
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
	var rows []listed
	for _, r := range reg.All() {
		if want[r.Level] {
			rows = append(rows, listed{Requirement: r, Link: r.Link(), Specs: append([]string{}, specs[r.ID]...)})
		}
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return 0, enc.Encode(rows)
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
	return 0, tw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
