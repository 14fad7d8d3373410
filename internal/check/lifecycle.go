package check

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// Task statuses (narrative spec, "Task lifecycle").
const (
	Submitted     = "SUBMITTED"
	Working       = "WORKING"
	InputRequired = "INPUT_REQUIRED"
	AuthRequired  = "AUTH_REQUIRED"
	Completed     = "COMPLETED"
	Failed        = "FAILED"
	Canceled      = "CANCELED"
)

// Transitions is the spec's table of allowed task status changes; terminal
// statuses have none. The reference Harness has its own copy on purpose: a
// checker that shared the implementation's table would pass whatever
// mistake the table held.
var Transitions = map[string][]string{
	Submitted:     {Working, Canceled, Failed},
	Working:       {InputRequired, AuthRequired, Completed, Failed, Canceled},
	InputRequired: {Working, Failed, Canceled},
	AuthRequired:  {Working, Failed, Canceled},
	Completed:     nil,
	Failed:        nil,
	Canceled:      nil,
}

// KnownStatus reports whether s is one of the seven task statuses. Other
// values may be new enum values a later protocol revision adds; the
// lifecycle checks do not judge them (docs/interpretations.md#unknown-status).
func KnownStatus(s string) bool { _, ok := Transitions[s]; return ok }

// Terminal reports whether a status is final.
func Terminal(s string) bool { return s == Completed || s == Failed || s == Canceled }

// Allowed reports whether the table permits the direct move from → to.
func Allowed(from, to string) bool { return slices.Contains(Transitions[from], to) }

// Reachable reports whether to can follow from through allowed moves (what
// a poller may see, since it can miss intermediate statuses).
func Reachable(from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range Transitions[s] {
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}

// Polled checks the statuses read by polling a task, in order: each change
// is reachable through allowed moves, and a terminal status never changes.
// Unknown statuses are skipped.
func Polled(where string, statuses []string) error {
	prev := ""
	for _, s := range statuses {
		if !KnownStatus(s) || s == prev {
			continue
		}
		switch {
		case prev == "":
		case Terminal(prev):
			return fmt.Errorf("%s: the task read %s, later %s; a terminal status never changes (reads: %s)", where, prev, s, seq(statuses))
		case !Reachable(prev, s):
			return fmt.Errorf("%s: the task read %s, later %s, which no allowed transition reaches (reads: %s)", where, prev, s, seq(statuses))
		}
		prev = s
	}
	return nil
}

func seq(ss []string) string {
	var out []string
	for _, s := range ss {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	if len(out) > 12 {
		out = append(out[:12], "…")
	}
	return strings.Join(out, " → ")
}

// Change is what one task state event says about the task's status.
type Change struct {
	EventID, Kind string
	To            string // the status the event announces
	From          string // the previous status, when the payload names it
}

func (c Change) String() string { return c.EventID + " (" + c.Kind + ")" }

// kindStatus maps the task state event kinds to the status they announce.
var kindStatus = map[string]string{
	"task.submitted":      Submitted,
	"task.started":        Working,
	"task.input_required": InputRequired,
	"task.auth_required":  AuthRequired,
	"task.completed":      Completed,
	"task.failed":         Failed,
	"task.canceled":       Canceled,
}

// payloadStatus reads a status from the first of keys that holds a string.
func payloadStatus(p map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := p[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Changes picks the task state events of task id from evs, in delivery
// order. The kind says the new status; task.status_changed must name it in
// its payload (status, to, new_status or state). The previous status is
// read from payload previous_status or from, when present
// (docs/interpretations.md#task-state-events).
func Changes(taskID string, evs []Event) ([]Change, error) {
	var out []Change
	for _, e := range evs {
		if !strings.HasPrefix(e.Kind, "task.") || (e.Resource.ID != taskID && e.TaskID != taskID) {
			continue
		}
		to, ok := kindStatus[e.Kind]
		if e.Kind == "task.status_changed" {
			to = payloadStatus(e.Payload, "status", "to", "new_status", "state")
			if to == "" {
				return out, fmt.Errorf("event %s (task.status_changed) names no new status (payload %s); want payload.status", e.ID, compact(e.Payload))
			}
			ok = true
		}
		if !ok {
			continue // another task.* event (vendor or future kind): not a state event
		}
		out = append(out, Change{EventID: e.ID, Kind: e.Kind, To: to, From: payloadStatus(e.Payload, "previous_status", "from")})
	}
	return out, nil
}

// Legal checks the moves that state events record, starting from the
// status the task was created in (initial; SUBMITTED unless the submit
// answer said otherwise): each is an allowed transition, and nothing follows
// a terminal status. A task's first state event is a move too: a task
// created SUBMITTED whose first event announces COMPLETED skipped WORKING.
func Legal(where, initial string, cs []Change) error {
	cur := initial
	if !KnownStatus(cur) {
		cur = Submitted
	}
	for _, c := range cs {
		if !KnownStatus(c.To) {
			continue
		}
		if c.To == cur {
			continue // the same status announced again is not a move
		}
		if Terminal(cur) {
			return fmt.Errorf("%s: event %s moves the task from terminal %s to %s; a terminal status never changes", where, c, cur, c.To)
		}
		from := cur
		if KnownStatus(c.From) {
			from = c.From
		}
		if from != "" && from != c.To && !Allowed(from, c.To) {
			return fmt.Errorf("%s: event %s records %s → %s, which the lifecycle table does not allow (allowed from %s: %s)",
				where, c, from, c.To, from, orNone(Transitions[from]))
		}
		cur = c.To
	}
	return nil
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none, it is terminal"
	}
	return strings.Join(ss, ", ")
}

// Recorded checks that every transition has its state event: an event that
// names its previous status must follow an event announcing that status, or
// the status the task was created in (initial) when it is the first;
// every status seen by polling (other than SUBMITTED, which is where a task
// starts, not a transition) must be announced by some event; and the task's
// final status must be the last one announced.
func Recorded(where, initial string, cs []Change, polled []string, final string) error {
	cur := initial
	if !KnownStatus(cur) {
		cur = Submitted
	}
	announced := map[string]bool{}
	last := ""
	for _, c := range cs {
		if KnownStatus(c.From) && c.From != cur && c.To != cur {
			return fmt.Errorf("%s: event %s says the task moved %s → %s, but no state event records the move %s → %s (the task was %s before it)",
				where, c, c.From, c.To, cur, c.From, cur)
		}
		announced[c.To] = true
		cur, last = c.To, c.To
	}
	for _, s := range polled {
		if KnownStatus(s) && s != Submitted && !announced[s] {
			return fmt.Errorf("%s: polling the task read %s, but no task state event announces %s (events: %s)", where, s, s, changeList(cs))
		}
	}
	if KnownStatus(final) && final != last {
		return fmt.Errorf("%s: the task is %s, but its last task state event announces %q (events: %s)", where, final, last, changeList(cs))
	}
	return nil
}

func changeList(cs []Change) string {
	if len(cs) == 0 {
		return "none"
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind+"→"+c.To)
	}
	return strings.Join(out, ", ")
}

// StaysCanceled checks a sequence of statuses (reads or announced states, in
// order): once CANCELED appears, no other status follows it.
func StaysCanceled(where string, statuses []string) error {
	canceled := false
	for _, s := range statuses {
		if s == Canceled {
			canceled = true
			continue
		}
		if canceled && KnownStatus(s) {
			return fmt.Errorf("%s: the task was CANCELED and later %s (%s); once CANCELED is recorded nothing may replace it", where, s, seq(statuses))
		}
	}
	return nil
}

// CanceledAfterEnd checks a task's announced states (in order) for a cancel
// that moved an already finished task: CANCELED right after COMPLETED or
// FAILED (CORE-CANCEL-002).
func CanceledAfterEnd(where string, cs []Change) error {
	for i := 1; i < len(cs); i++ {
		if cs[i].To == Canceled && (cs[i-1].To == Completed || cs[i-1].To == Failed) {
			return fmt.Errorf("%s: the task was %s and a cancel then moved it to CANCELED (event %s); a terminal task must stay as it is",
				where, cs[i-1].To, cs[i])
		}
	}
	return nil
}

// ChangeStatuses lists the statuses the changes announce, in order.
func ChangeStatuses(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.To
	}
	return out
}

// NoCompletedAt checks that a CANCELED task carries no completed_at.
func NoCompletedAt(where string, task map[string]any) error {
	if task["status"] != Canceled {
		return nil
	}
	if v, ok := task["completed_at"]; ok && v != nil {
		return fmt.Errorf("%s: the task is CANCELED but carries completed_at = %s; want it absent or null (canceled_at records the end)", where, compact(v))
	}
	return nil
}

// OutcomeStatus maps a terminal task status to its Outcome status.
var OutcomeStatus = map[string]string{Completed: "SUCCEEDED", Failed: "FAILED", Canceled: "CANCELED"}

// OutcomeMatches checks an Outcome against its task: the outcome enum, and
// agreement with the task's terminal status and id.
func OutcomeMatches(where string, outcome map[string]any, taskID, taskStatus string) error {
	st, _ := outcome["status"].(string)
	if !slices.Contains([]string{"SUCCEEDED", "FAILED", "CANCELED"}, st) {
		return fmt.Errorf("%s: outcome status is %s, want SUCCEEDED, FAILED or CANCELED (the outcome enum, not the task statuses)", where, compact(outcome["status"]))
	}
	if tid, ok := outcome["task_id"].(string); ok && tid != taskID {
		return fmt.Errorf("%s: outcome task_id is %q, want %q", where, tid, taskID)
	}
	if want, ok := OutcomeStatus[taskStatus]; ok && st != want {
		return fmt.Errorf("%s: outcome status is %s for a %s task, want %s", where, st, taskStatus, want)
	}
	return nil
}

// Refused checks a refusal: the status is one of statuses and, when the
// body is an error envelope, its code is one of codes. A body that is not
// an envelope is the error-envelope checks' business, so it is not judged
// here (one broken behaviour, one failed requirement).
func Refused(resp *client.Response, statuses []int, codes ...string) error {
	if err := Status(resp, statuses...); err != nil {
		return err
	}
	e, err := Envelope(resp)
	if err == nil && len(codes) > 0 && !slices.Contains(codes, e.Code) {
		return fmt.Errorf("%s: error.code = %q, want %s", resp, e.Code, orList(quoted(codes)))
	}
	return nil
}

// CancelRefusal judges a cancel the target did not answer 200 (CORE-CANCEL-001):
// a refusal is right only for a task that had already ended, and then with
// 400 or 409. after is the task's status read after the answer: a task still
// not terminal then was running when its cancel was refused. (An unknown
// status is the task read checks' to judge.)
func CancelRefusal(resp *client.Response, after string) error {
	if KnownStatus(after) && !Terminal(after) {
		return fmt.Errorf("%s: the cancel was refused, but the task read %s after it, so it was running: a cancel of a running task answers 200 with the Task", resp, after)
	}
	return Refused(resp, []int{400, 409})
}

// Unchanged checks that the named fields of a resource read before and
// after an operation are equal (absent and null count as the same).
func Unchanged(where string, before, after map[string]any, fields ...string) error {
	var diffs []string
	for _, f := range fields {
		b, a := before[f], after[f]
		if !reflect.DeepEqual(b, a) {
			diffs = append(diffs, fmt.Sprintf("%s %s → %s", f, compact(b), compact(a)))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: the task changed: %s; want it exactly as it was", where, strings.Join(diffs, ", "))
	}
	return nil
}
