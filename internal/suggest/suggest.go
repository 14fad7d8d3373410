// Package suggest finds what a user probably meant: the "did you mean" of
// unknown commands, flags, levels and names.
package suggest

import "strings"

// Closest returns the candidate nearest to word, "" when none is near: an
// edit distance of at most a third of the word's length (at least 1, at
// most 3), or a candidate the word is a prefix of (three letters or more).
// Case does not count. Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	if w == "" {
		return ""
	}
	limit := min(max(len(w)/3, 1), 3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			continue
		}
		d := distance(w, lc)
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(w) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(strings.ToLower(c), w) {
				return c
			}
		}
	}
	return best
}

// Hint is " (did you mean X?)" for the Closest candidate, quoted by
// format (e.g. "%q", "--%s"), or "" when none is near.
func Hint(word string, candidates []string, format string) string {
	c := Closest(word, candidates)
	if c == "" {
		return ""
	}
	return " (did you mean " + sprintf(format, c) + "?)"
}

func sprintf(format, s string) string {
	switch format {
	case "%q":
		return `"` + s + `"`
	case "":
		return s
	}
	return strings.Replace(format, "%s", s, 1)
}

// distance is the optimal string alignment distance of a and b (byte
// wise): insertions, deletions, substitutions and adjacent transpositions.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30 // not a typo of anything we name
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
