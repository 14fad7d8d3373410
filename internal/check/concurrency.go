package check

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// The verifiers of the concurrency checks (docs/concurrency.md): what the
// answers of writes fired at once, and the state read afterwards, must
// show. The rounds themselves are made by internal/load.

// Retryable reports whether the answer to one of several keyed writes
// fired at once is a refusal a client may retry, which the concurrency
// checks accept while the first request is in flight
// (docs/interpretations.md#in-flight-answer): 409 with code conflict (the
// key is in use), 423 resource_locked, 429, or 503. A retry afterwards
// must then get the key's settled answer.
func Retryable(resp *client.Response) bool {
	switch resp.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusLocked:
		return true
	case http.StatusConflict:
		e, err := Envelope(resp)
		return err == nil && e.Code == "conflict"
	}
	return false
}

// AnswerID is the resource a 2xx answer names: its body's id, or for an
// answer without one (a 202 pointing at the in-flight resource) the last
// segment of its Location header. "" when it names none.
func AnswerID(resp *client.Response) string {
	if m, err := resp.Object(); err == nil {
		if id, ok := m["id"].(string); ok && id != "" {
			return id
		}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return path.Base(strings.TrimRight(loc, "/"))
	}
	return ""
}

// KeyedRound judges the answers of writes fired at once with one
// Idempotency-Key: with one body (sameBody), every success names one
// resource; with different bodies, one succeeds and every other is refused
// with 409 idempotency_key_reused. Either way an answer may instead be a
// retryable refusal (Retryable): their indexes are returned for the caller
// to send again once the round is over, and judge with Settled. what names
// the write ("POST /v1/sessions/s_1/tasks"); winner is the resource the
// successes named ("" when none succeeded yet).
func KeyedRound(what string, sameBody bool, resps []*client.Response) (winner string, retry []int, err error) {
	return KeyedRoundBy(what, sameBody, resps, AnswerID)
}

// KeyedRoundBy is KeyedRound for a write whose answers name their result
// otherwise than by an id (a truncate's counts): id says what a 2xx answer
// names ("" for nothing).
func KeyedRoundBy(what string, sameBody bool, resps []*client.Response, id func(*client.Response) string) (winner string, retry []int, err error) {
	var bad []string
	ids := map[string][]int{}
	var wins []int
	for i, r := range resps {
		switch {
		case r.Status/100 == 2:
			named := id(r)
			if named == "" {
				bad = append(bad, fmt.Sprintf("request %d answered %d naming no resource (no id, no Location)%s", i+1, r.Status, bodyHint(r)))
				continue
			}
			ids[named] = append(ids[named], i+1)
			wins = append(wins, i+1)
		case r.Status == http.StatusConflict && errorCode(r) == "idempotency_key_reused":
			if sameBody {
				bad = append(bad, fmt.Sprintf("request %d, with the same body as the others, was refused 409 idempotency_key_reused (a different body's refusal)", i+1))
			}
		case Retryable(r):
			retry = append(retry, i)
		default:
			want := "a 2xx naming the resource"
			if !sameBody {
				want = "409 idempotency_key_reused (or the one success)"
			}
			bad = append(bad, fmt.Sprintf("request %d answered %d %s; want %s, or a retryable refusal (409 conflict, 423, 429, 503)%s", i+1, r.Status, errorCode(r), want, bodyHint(r)))
		}
	}
	for id := range ids {
		winner = id
	}
	if len(ids) > 1 {
		bad = append([]string{fmt.Sprintf("%d concurrent requests with one Idempotency-Key named %d resources (%s), want one", len(resps), len(ids), idCounts(ids))}, bad...)
		winner = ""
	}
	if !sameBody && len(wins) > 1 && len(ids) == 1 {
		bad = append([]string{fmt.Sprintf("requests %v, with one Idempotency-Key and different bodies, all succeeded naming %s: want one winner and 409 idempotency_key_reused for the others", wins, winner)}, bad...)
	}
	if len(bad) > 0 {
		return winner, retry, fmt.Errorf("%s: %s", what, strings.Join(bad, "; "))
	}
	return winner, retry, nil
}

func idCounts(ids map[string][]int) string {
	var out []string
	for id, reqs := range ids {
		out = append(out, fmt.Sprintf("%s by requests %v", id, reqs))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Settled judges a retry, sent once a round was over, of a request the
// round refused as retryable: with the round's body (sameBody), the
// success naming winner (the first success names it when winner is "");
// with a different body, 409 idempotency_key_reused, or the success that
// makes it the winner when nothing won yet. It returns the winner.
func Settled(what string, sameBody bool, winner string, resp *client.Response) (string, error) {
	return SettledBy(what, sameBody, winner, resp, AnswerID)
}

// SettledBy is Settled for a write whose answers name their result
// otherwise than by an id (KeyedRoundBy).
func SettledBy(what string, sameBody bool, winner string, resp *client.Response, named func(*client.Response) string) (string, error) {
	switch {
	case resp.Status/100 == 2:
		id := named(resp)
		switch {
		case id == "":
			return winner, fmt.Errorf("%s: the retry of a refused request answered %d naming no resource%s", what, resp.Status, bodyHint(resp))
		case winner == "":
			return id, nil
		case id != winner && sameBody:
			return winner, fmt.Errorf("%s: the retry of a refused request made %s, want the round's resource %s (a duplicate)", what, id, winner)
		case !sameBody:
			return winner, fmt.Errorf("%s: the retry of a request with a different body succeeded naming %s after %s had won; want 409 idempotency_key_reused", what, id, winner)
		}
		return winner, nil
	case resp.Status == http.StatusConflict && errorCode(resp) == "idempotency_key_reused" && !sameBody:
		return winner, nil
	}
	want := "the round's resource " + winner
	if !sameBody {
		want = "409 idempotency_key_reused"
	}
	return winner, fmt.Errorf("%s: the retry of a request the round refused as retryable answered %d %s once the round was over; want %s%s", what, resp.Status, errorCode(resp), want, bodyHint(resp))
}

// Grew checks what a round of keyed writes added to a list (ids before
// and after, in list order): exactly the one resource winner, once.
func Grew(what string, before, after []string, winner string) error {
	old := map[string]bool{}
	for _, id := range before {
		old[id] = true
	}
	var added []string
	for _, id := range after {
		if !old[id] {
			added = append(added, id)
		}
	}
	switch {
	case len(added) == 1 && (winner == "" || added[0] == winner):
		return nil
	case len(added) == 0 && winner != "" && slices.Contains(before, winner):
		return fmt.Errorf("%s: %s was listed before the round that made it", what, winner)
	case len(added) == 0:
		return fmt.Errorf("%s lists nothing new after the round, want the resource %s", what, orNoneID(winner))
	}
	return fmt.Errorf("%s lists %d new items after one round of writes with one Idempotency-Key: %v; want the one resource %s", what, len(added), short(added), orNoneID(winner))
}

func orNoneID(id string) string {
	if id == "" {
		return "the round made"
	}
	return id
}

// Seq is one view of an ordered sequence: a list, a stream, a page walk.
type Seq struct {
	Name string
	IDs  []string
}

// OneOrder checks that every view shows each of want exactly once and that
// all views show them in one order (the first view's): ids outside want
// are ignored. It is how a Session's transcript, event list and streams
// must agree after several clients appended at once.
func OneOrder(want []string, views []Seq) error {
	set := map[string]bool{}
	for _, id := range want {
		set[id] = true
	}
	var ref Seq
	var errs []string
	for _, v := range views {
		var got []string
		count := map[string]int{}
		for _, id := range v.IDs {
			if set[id] {
				count[id]++
				if count[id] == 1 {
					got = append(got, id)
				}
			}
		}
		var lost, twice []string
		for _, id := range want {
			switch n := count[id]; {
			case n == 0:
				lost = append(lost, id)
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s×%d", id, n))
			}
		}
		if len(lost) > 0 {
			errs = append(errs, fmt.Sprintf("%s lacks %d of the %d appended messages: %v", v.Name, len(lost), len(want), short(lost)))
		}
		if len(twice) > 0 {
			errs = append(errs, fmt.Sprintf("%s shows appended messages more than once: %v", v.Name, twice))
		}
		if ref.Name == "" {
			ref = Seq{Name: v.Name, IDs: got}
			continue
		}
		if i, ok := firstOrderDiff(ref.IDs, got); ok {
			errs = append(errs, fmt.Sprintf("%s shows %s before %s, while %s shows them the other way round (%s: %v; %s: %v)",
				v.Name, got[i], following(got, ref.IDs, i), ref.Name, ref.Name, short(ref.IDs), v.Name, short(got)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("messages appended at once by %d clients: %s; want each once, in one order everywhere", len(want), strings.Join(errs, "; "))
	}
	return nil
}

// firstOrderDiff finds the first place where b, restricted to the ids both
// hold, departs from a's order.
func firstOrderDiff(a, b []string) (int, bool) {
	pos := map[string]int{}
	for i, id := range a {
		pos[id] = i
	}
	last := -1
	for i, id := range b {
		p, ok := pos[id]
		if !ok {
			continue
		}
		if p < last {
			return i, true
		}
		last = p
	}
	return 0, false
}

// following names an id b shows after b[i] that a shows before it.
func following(b, a []string, i int) string {
	pos := map[string]int{}
	for j, id := range a {
		pos[id] = j
	}
	for j := i - 1; j >= 0; j-- {
		if pos[b[j]] > pos[b[i]] {
			return b[j]
		}
	}
	return "an earlier one"
}

// SeenOnce checks a reader's view of a sequence that grew while it read (a
// page walk, a stream, a stream and its resumption): it saw exactly all,
// each once, in all's order. all is the whole sequence as read once the
// writes were over, from the reader's starting point.
func SeenOnce(where string, seen, all []string) error {
	count := map[string]int{}
	for _, id := range seen {
		count[id]++
	}
	var twice, lost []string
	for id, n := range count {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", id, n))
		}
	}
	sort.Strings(twice)
	in := map[string]bool{}
	for _, id := range all {
		in[id] = true
		if count[id] == 0 {
			lost = append(lost, id)
		}
	}
	var errs []string
	if len(lost) > 0 {
		errs = append(errs, fmt.Sprintf("missed %d of the %d events: %v", len(lost), len(all), short(lost)))
	}
	if len(twice) > 0 {
		errs = append(errs, fmt.Sprintf("got events more than once: %v", twice))
	}
	var alien []string
	for _, id := range seen {
		if !in[id] && !slices.Contains(alien, id) {
			alien = append(alien, id)
		}
	}
	if len(alien) > 0 {
		errs = append(errs, fmt.Sprintf("got events the list does not hold: %v", short(alien)))
	}
	if len(errs) == 0 && !slices.Equal(seen, all) {
		i := 0
		for i < len(seen) && seen[i] == all[i] {
			i++
		}
		errs = append(errs, fmt.Sprintf("got them in another order: item %d is %s where the list has %s", i+1, seen[i], all[i]))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s; want every event once, in the list's order (%d events)", where, strings.Join(errs, "; "), len(all))
	}
	return nil
}

// CancelRace is what a check saw of one task whose cancels raced each
// other and its end.
type CancelRace struct {
	Task string
	// Reads are the task's status as read several times once it settled.
	Reads []string
	// Terminal are the task's terminal state events (kind and status), in
	// the order of its event list.
	Terminal []Change
	// Outcomes are the task's Outcomes (from GET /v1/outcomes?task_id= or
	// its outcome_id).
	Outcomes []map[string]any
	// Cancels are the answers of the cancels fired at once.
	Cancels []*client.Response
}

// OneTerminal checks a task after cancels raced each other and its end:
// one terminal status on every read, exactly one terminal state event
// naming it, every Outcome agreeing, and each cancel's answer agreeing (a
// 200 showing a terminal status shows that one; a refusal is 400
// invalid_state_transition or 409 conflict, or a retryable one).
func OneTerminal(c CancelRace) error {
	var errs []string
	final := ""
	for _, s := range c.Reads {
		if final == "" {
			final = s
		}
		if s != final || !Terminal(s) {
			errs = append(errs, fmt.Sprintf("reads of the settled task show %v, want one terminal status every time", c.Reads))
			break
		}
	}
	switch len(c.Terminal) {
	case 1:
		if st := c.Terminal[0].To; final != "" && st != final {
			errs = append(errs, fmt.Sprintf("its terminal event %s says %s, the task reads %s", c.Terminal[0], st, final))
		}
	case 0:
		errs = append(errs, "its event list has no terminal state event")
	default:
		var ks []string
		for _, ch := range c.Terminal {
			ks = append(ks, ch.String()+" → "+ch.To)
		}
		errs = append(errs, fmt.Sprintf("its event list has %d terminal state events (%s), want exactly one", len(c.Terminal), strings.Join(ks, ", ")))
	}
	for _, o := range c.Outcomes {
		if err := OutcomeMatches("outcome "+showValue(o["id"]), o, c.Task, final); err != nil && Terminal(final) {
			errs = append(errs, err.Error())
		}
	}
	for i, r := range c.Cancels {
		switch {
		case r.Status == http.StatusOK:
			m, _ := r.Object()
			if s, _ := m["status"].(string); Terminal(s) && s != final {
				errs = append(errs, fmt.Sprintf("cancel %d answered 200 with status %s, but the task ended %s", i+1, s, final))
			}
		case Retryable(r) || Refused(r, []int{400, 409}, "invalid_state_transition", "conflict") == nil:
		default:
			errs = append(errs, fmt.Sprintf("cancel %d answered %d %s; want 200 with the Task, or a refusal (400 invalid_state_transition, 409 conflict)", i+1, r.Status, errorCode(r)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("task %s, after %d cancels fired at once raced each other and its end: %s", c.Task, len(c.Cancels), strings.Join(errs, "; "))
	}
	return nil
}

// Link is one receipt's place in the chain.
type Link struct {
	Receipt, Task string
	Hash          string // its chain.receipt_hash
	Previous      string // its chain.previous_receipt_hash ("" for null)
}

// NoFork checks receipts issued at once: no two link to the same previous
// receipt, for a chain is a line (docs/interpretations.md#receipt-chain-fork).
func NoFork(links []Link) error {
	by := map[string][]string{}
	for _, l := range links {
		if l.Previous != "" {
			by[l.Previous] = append(by[l.Previous], fmt.Sprintf("%s (task %s)", l.Receipt, l.Task))
		}
	}
	var forks []string
	for prev, rs := range by {
		if len(rs) > 1 {
			sort.Strings(rs)
			forks = append(forks, fmt.Sprintf("%s all link to %s", strings.Join(rs, ", "), prev))
		}
	}
	if len(forks) > 0 {
		sort.Strings(forks)
		return fmt.Errorf("receipts of %d tasks that completed at once fork the chain: %s; want each receipt to be the one successor of its previous receipt", len(links), strings.Join(forks, "; "))
	}
	return nil
}

// AppendedMessage is the Message an event announces as appended to a
// Session: a user.message, session.message_appended or agent.message
// event that names it in payload.message_id or payload.message.id, or any
// event whose resource is the Message. ok is false for other events.
func AppendedMessage(e Event) (string, bool) {
	if e.Resource.Object == "message" && e.Resource.ID != "" {
		return e.Resource.ID, true
	}
	switch e.Kind {
	case "user.message", "session.message_appended", "agent.message":
	default:
		return "", false
	}
	if id, ok := e.Payload["message_id"].(string); ok && id != "" {
		return id, true
	}
	if m, ok := e.Payload["message"].(map[string]any); ok {
		if id, ok := m["id"].(string); ok && id != "" {
			return id, true
		}
	}
	return "", false
}
