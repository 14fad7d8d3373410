package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Scope is the resource an event list or stream is of, with the tasks the
// suite knows around it, so that an event of another resource is seen for
// what it is.
type Scope struct {
	// Task is the task whose events these are; "" for a session's events.
	Task string
	// Session is the session whose events these are, or the task's session.
	Session string
	// Tasks are the session's tasks the suite submitted (session scope).
	Tasks []string
	// Elsewhere are tasks the suite submitted to other sessions.
	Elsewhere []string
}

func (sc Scope) String() string {
	if sc.Task != "" {
		return "task " + sc.Task
	}
	return "session " + sc.Session
}

// attribute says whether e names the scope's resource (own) or, if it names
// another one, which (foreign). An event that names neither (a message or
// artifact resource without task_id or session_id) is the scope's as far
// as a client can tell (docs/interpretations.md#event-scoping).
func (sc Scope) attribute(e Event) (own bool, foreign string) {
	if sc.Task != "" {
		switch {
		case e.Resource == Pointer{"task", sc.Task} || e.TaskID == sc.Task:
			return true, ""
		case e.TaskID != "":
			return false, "task_id " + e.TaskID
		case e.Resource.Object == "task":
			return false, "resource task/" + e.Resource.ID
		case e.SessionID != "" && e.SessionID != sc.Session:
			return false, "session_id " + e.SessionID
		case e.Resource.Object == "session" && e.Resource.ID != sc.Session:
			return false, "resource session/" + e.Resource.ID
		}
		return false, ""
	}
	switch {
	case e.SessionID != "" && e.SessionID != sc.Session:
		return false, "session_id " + e.SessionID
	case e.Resource.Object == "session" && e.Resource.ID != sc.Session:
		return false, "resource session/" + e.Resource.ID
	case e.Resource.Object == "task" && slices.Contains(sc.Elsewhere, e.Resource.ID):
		return false, "resource task/" + e.Resource.ID + ", a task of another session"
	case e.TaskID != "" && slices.Contains(sc.Elsewhere, e.TaskID):
		return false, "task_id " + e.TaskID + ", a task of another session"
	case e.SessionID == sc.Session || e.Resource == Pointer{"session", sc.Session},
		e.Resource.Object == "task" && slices.Contains(sc.Tasks, e.Resource.ID),
		e.TaskID != "" && slices.Contains(sc.Tasks, e.TaskID):
		return true, ""
	}
	return false, ""
}

// Scoped checks that every event of a task's or a session's event list or
// stream belongs to that resource: a task's events name the task (as their
// resource or by task_id); a session's events name the session (session_id
// or resource) or one of its tasks. An event that names another task or
// session is a leak. It returns how many events named the scope itself, so
// a caller can tell a list that could not be attributed at all (own = 0)
// from one that was checked.
func Scoped(where string, sc Scope, evs []Event) (own int, err error) {
	var leaks []string
	n := 0
	for _, e := range evs {
		ok, foreign := sc.attribute(e)
		if ok {
			own++
		}
		if foreign == "" {
			continue
		}
		n++
		if len(leaks) < 5 {
			leaks = append(leaks, fmt.Sprintf("event %s (%s) has %s", e.ID, e.Kind, foreign))
		}
	}
	if n == 0 {
		return own, nil
	}
	if n > len(leaks) {
		leaks = append(leaks, fmt.Sprintf("and %d more", n-len(leaks)))
	}
	want := "only the task's own events (the task as resource, or its task_id)"
	if sc.Task == "" {
		want = "only the session's events (its session_id, the session as resource, or one of its tasks)"
	}
	return own, fmt.Errorf("%s: %d of %d events are not %s's: %s; want %s", where, n, len(evs), sc, strings.Join(leaks, "; "), want)
}

// MonotonicIDs checks that event ids, in delivery order, strictly increase
// and never repeat. Ids are opaque strings, so the order is accepted when
// any of these readings of the whole sequence strictly increases: the ids
// as byte strings; the ids as decimal integers; or the ids as one common
// prefix followed by a decimal number, compared by the number
// (docs/interpretations.md#monotonic-event-ids).
func MonotonicIDs(where string, ids []string) error {
	seen := map[string]int{}
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%s: event id %q is delivered twice (items %d and %d); want every event id once, each greater than the one before", where, id, j+1, i+1)
		}
		seen[id] = i
	}
	lex := firstBreak(ids, func(a, b string) bool { return a < b })
	if lex < 0 {
		return nil
	}
	num, numeric := -1, false
	if nums, ok := numbered(ids); ok {
		numeric = true
		num = firstBreak(nums, func(a, b string) bool { return decimalLess(a, b) })
		if num < 0 {
			return nil
		}
	}
	at, reading := lex, "as byte strings"
	if numeric {
		at, reading = num, "by their decimal numbers"
	}
	return fmt.Errorf("%s: event id %q (item %d) follows %q (item %d), so the ids do not increase %s; want event ids that increase in delivery order (read as byte strings, as decimal numbers, or as a common prefix and a decimal number), ids: %v",
		where, ids[at], at+1, ids[at-1], at, reading, short(ids))
}

// firstBreak returns the first index i with !less(xs[i-1], xs[i]), or -1.
func firstBreak(xs []string, less func(a, b string) bool) int {
	for i := 1; i < len(xs); i++ {
		if !less(xs[i-1], xs[i]) {
			return i
		}
	}
	return -1
}

// numbered splits every id into a prefix and a trailing decimal number; it
// returns the numbers when all ids have one and share one prefix (an empty
// prefix: the ids are decimal integers).
func numbered(ids []string) ([]string, bool) {
	nums := make([]string, len(ids))
	prefix := ""
	for i, id := range ids {
		j := len(id)
		for j > 0 && id[j-1] >= '0' && id[j-1] <= '9' {
			j--
		}
		if j == len(id) {
			return nil, false
		}
		if i == 0 {
			prefix = id[:j]
		} else if id[:j] != prefix {
			return nil, false
		}
		nums[i] = id[j:]
	}
	return nums, true
}

// decimalLess compares two strings of decimal digits as numbers, of any
// size.
func decimalLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Reordered rewrites a JSON text into an equivalent one with other bytes:
// every object's members in reverse order of their keys, and a space after
// every comma and colon. A server that compares request bodies as JSON
// values sees the same body; one that compares bytes does not.
func Reordered(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	var b bytes.Buffer
	if err := writeReordered(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeReordered(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		b.WriteString("{ ")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return err
			}
			b.Write(kb)
			b.WriteString(": ")
			if err := writeReordered(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteString(" }")
	case []any:
		b.WriteString("[ ")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeReordered(b, e); err != nil {
				return err
			}
		}
		b.WriteString(" ]")
	default:
		vb, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	return nil
}

// NoNewChanges checks that an operation added no task state event: the
// state events read after it are the ones read before.
func NoNewChanges(where string, before, after []Change) error {
	had := map[string]bool{}
	for _, c := range before {
		had[c.EventID] = true
	}
	var added []string
	for _, c := range after {
		if !had[c.EventID] {
			added = append(added, fmt.Sprintf("%s → %s", c, c.To))
		}
	}
	if len(added) > 0 {
		return fmt.Errorf("%s: new task state events appeared: %s; want the task's state events unchanged", where, strings.Join(added, ", "))
	}
	return nil
}
