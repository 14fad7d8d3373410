package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the console's final table.
func WriteTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	withBaseline := r.Baseline != nil
	head := "LEVEL\tSTATUS\tPASS\tFAIL\tWARN\tUNVERIFIED\tSKIP\tERROR"
	if withBaseline {
		head += "\tEXPECTED"
	}
	fmt.Fprintln(tw, head)
	for _, l := range r.Levels {
		if !l.Run {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-", l.Level, l.Status)
			if withBaseline {
				fmt.Fprint(tw, "\t-")
			}
			fmt.Fprintln(tw)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d", l.Level, l.Status, l.Counts.Pass, l.Counts.Fail, l.Counts.Warn, l.Counts.Unverified, l.Counts.Skip, l.Counts.Error)
		if withBaseline {
			fmt.Fprintf(tw, "\t%d", l.Counts.Expected)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
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
