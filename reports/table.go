package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the console's final table: the gate's decision first,
// then the levels, then what to look at.
func WriteTable(w io.Writer, r *Report) {
	if r.Gate != nil {
		fmt.Fprintf(w, "GATE %s\n", oneLine(r.Gate.Summary))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	withBaseline := r.Baseline != nil
	head := "LEVEL\tSTATUS\tPASS\tFAIL\tWARN\tUNVERIFIED\tSKIP\tERROR"
	if withBaseline {
		head += "\tEXPECTED"
	}
	head += "\t\tMUSTS:\tNO-HOOK\tHOOK\tNOT-VERIFIED"
	fmt.Fprintln(tw, head)
	var hooks []string
	for _, l := range r.Levels {
		if !l.Run {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-", l.Level, l.Status)
			if withBaseline {
				fmt.Fprint(tw, "\t-")
			}
			fmt.Fprintln(tw, "\t\t\t-\t-\t-")
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d", l.Level, l.Status, l.Counts.Pass, l.Counts.Fail, l.Counts.Warn, l.Counts.Unverified, l.Counts.Skip, l.Counts.Error)
		if withBaseline {
			fmt.Fprintf(tw, "\t%d", l.Counts.Expected)
		}
		if m := l.MUSTs; m != nil {
			fmt.Fprintf(tw, "\t\t\t%d\t%d\t%d", m.VerifiedWithoutHook, m.VerifiedWithHook, m.NotVerified)
			for _, h := range m.Hooks {
				if !slices.Contains(hooks, h) {
					hooks = append(hooks, h)
				}
			}
		} else {
			fmt.Fprint(tw, "\t\t\t-\t-\t-")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	slices.Sort(hooks)
	fmt.Fprintf(w, "MUSTS: the observable MUSTs verified without any conform.* test hook (NO-HOOK), verified with one (HOOK%s), and not verified (unverified or error)\n", hookNames(hooks))
	for _, l := range r.Levels {
		for _, rm := range l.ToVerify {
			fmt.Fprintf(w, "UNVERIFIED %s: %s\n  to verify: %s\n", l.Level, list(rm.Requirements), oneLine(rm.Remedy))
		}
	}
	for _, l := range r.Levels {
		var ids []string
		for _, q := range r.Requirements {
			if q.Expected && q.Level == string(l.Level) {
				ids = append(ids, q.ID)
			}
		}
		if len(ids) > 0 {
			fmt.Fprintf(w, "EXPECTED %s (by %s): %s\n", l.Level, baselineFile(r), list(ids))
		}
	}
	for _, q := range r.Requirements {
		switch {
		case q.Expected:
		case q.Stale:
			fmt.Fprintf(w, "STALE %s: passes now; remove it from the baseline %s\n", q.ID, baselineFile(r))
		case byStop(r, q):
		case q.Verdict == Fail || q.Verdict == Error:
			fmt.Fprintf(w, "%s %s: %s\n  %s\n", strings.ToUpper(string(q.Verdict)), q.ID, oneLine(firstLine(q.Message)), q.Link)
		}
	}
	if why, hint, unchecked := stopLines(r); why != "" {
		if unchecked != "" {
			fmt.Fprintf(w, "ERROR %s\n", unchecked)
		}
		fmt.Fprintf(w, "STOPPED %s\n", oneLine(why))
		if hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", oneLine(hint))
		}
	}
	fmt.Fprintf(w, "result: %s (exit %d)\n", verdictLine(r), r.ExitCode)
}
