package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/load"
	"github.com/harn-conform/conform/internal/suite"
)

// The Core concurrency checks (issue 23, docs/concurrency.md): the MUSTs
// that only break when clients race. Each fires requests at once with the
// load driver (internal/load), --concurrency of them, for a few rounds, and
// judges each round with the verifiers of internal/check; a failure names
// the first round that showed the race, its requests with their times and
// answers and what was read afterwards, and reproduces it with a script
// that fires the same requests at once.

// Default rounds of each check: sized so that each race the reference
// Harness's faults plant shows in at least 99 % of runs
// (docs/performance.md, "Concurrency checks"); --concurrency-rounds
// overrides them.
const (
	roundsKeyed  = 4
	roundsOrder  = 4
	roundsPaging = 4
	roundsFanout = 3
	roundsCancel = 6
)

// The paging check's round: the waves of appends, and the pagers that
// walk the growing list meanwhile (several clients paging at once).
const (
	burstWaves = 4
	pagerCount = 4
)

// idsOf lists the ids of every item of a list, following next_cursor. It
// judges nothing: a list that cannot be read leaves the round unjudged
// (the resource read specs judge lists).
func idsOf(ctx context.Context, path string) ([]string, error) {
	var ids []string
	q := url.Values{}
	for range 50 {
		resp, err := suite.Client().Do(ctx, client.Request{Path: path, Query: q})
		if err != nil {
			return ids, err
		}
		if resp.Status != http.StatusOK {
			return ids, fmt.Errorf("%s%s", resp, hint(resp))
		}
		p, err := check.ListPage(resp)
		if err != nil {
			return ids, err
		}
		ids = append(ids, p.IDs...)
		if !p.HasMore {
			return ids, nil
		}
		q.Set("cursor", p.NextCursor)
	}
	return ids, fmt.Errorf("GET %s: more than 50 pages", path)
}

// eventsOf reads a whole event list, following its pages.
func eventsOf(ctx context.Context, path string) ([]check.Event, error) {
	var all []check.Event
	q := url.Values{}
	seen := map[string]bool{}
	for range 100 {
		resp, err := suite.Client().Do(ctx, client.Request{Path: path, Query: q})
		if err != nil {
			return all, err
		}
		p, err := check.Events(resp)
		if err != nil {
			return all, err
		}
		evs := p.Events
		if n := len(all); n > 0 && len(evs) > 0 && evs[0].ID == all[n-1].ID {
			evs = evs[1:] // a page that repeats the last of the one before: paging's failure (CORE-EVT-004), not this read's
		}
		all = append(all, evs...)
		if !p.HasMore || p.NextCursor == "" || seen[p.NextCursor] {
			return all, nil
		}
		seen[p.NextCursor] = true
		q = url.Values{"after_event_id": {p.NextCursor}}
	}
	return all, fmt.Errorf("GET %s: more than 100 pages", path)
}

// messageIDs are the Messages the events announce as appended, in event
// order.
func messageIDs(evs []check.Event) []string {
	var out []string
	for _, e := range evs {
		if id, ok := check.AppendedMessage(e); ok {
			out = append(out, id)
		}
	}
	return out
}

// tail shows the last few of ids.
func tail(ids []string) string {
	if len(ids) > 8 {
		return fmt.Sprintf("%d items, the last 8: %v", len(ids), ids[len(ids)-8:])
	}
	return fmt.Sprintf("%d items: %v", len(ids), ids)
}

// responses are a round's answers as responses, for the verifiers.
func responses(r *load.Round) []*client.Response {
	out := make([]*client.Response, len(r.Answers))
	for i, a := range r.Answers {
		out[i] = a.Response()
	}
	return out
}

// fire fires a round of shots. A failure below HTTP ends the spec with an
// error verdict for reqs (the suite could not observe the race), never a
// failure; a round the target kept refusing under load is unjudged.
func fire(ctx context.Context, d *load.Driver, shots []load.Shot, reqs ...string) (*load.Round, string) {
	GinkgoHelper()
	r, err := d.Fire(ctx, shots)
	if err != nil {
		suite.Must(reqs[0], fmt.Errorf("firing a round: %w", err))
	}
	suite.Transport(r.TransportError(), reqs...)
	if r.GaveUp {
		return r, "the target still refused (429 or 503) at the round's deadline"
	}
	return r, ""
}

// keyedWrite is a write whose retries race: req is what it checks, same
// whether every shot carries one body (else each its own).
type keyedWrite struct {
	req  string
	same bool
	// round prepares the state of one round: the path to write and the
	// list that must then hold the one resource made.
	round func(ctx context.Context) (path, list string)
	body  func(i int) any
}

// keyedRace runs the rounds of a keyed write fired --concurrency ways at
// once with one Idempotency-Key.
func keyedRace(ctx context.Context, ws ...keyedWrite) {
	GinkgoHelper()
	d := suite.Driver()
	d.Warm(ctx, d.Limits().N)
	tallies := map[string]*load.Tally{}
	var order []string
	rounds := suite.Rounds(roundsKeyed)
	for _, w := range ws {
		if tallies[w.req] == nil {
			tallies[w.req] = load.NewTally(rounds * countReq(ws, w.req))
			order = append(order, w.req)
		}
	}
	i := map[string]int{}
	for range rounds {
		for _, w := range ws {
			i[w.req]++
			tallies[w.req].Add(i[w.req], keyedRound(ctx, d, w))
		}
	}
	for _, req := range order {
		suite.Race(req, tallies[req])
	}
}

func countReq(ws []keyedWrite, req string) int {
	n := 0
	for _, w := range ws {
		if w.req == req {
			n++
		}
	}
	return n
}

// keyedRound is one round of a keyed write: its answers (KeyedRound), the
// retries of what it refused as retryable (Settled), and what the list
// gained (Grew).
func keyedRound(ctx context.Context, d *load.Driver, w keyedWrite) load.Outcome {
	GinkgoHelper()
	path, list := w.round(ctx)
	before, err := idsOf(ctx, list)
	if err != nil {
		return load.Outcome{Unjudged: "reading the list before the round: " + err.Error()}
	}
	key := suite.Key("race")
	shots := make([]load.Shot, d.Limits().N)
	for j := range shots {
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: path, Body: w.body(j), IdempotencyKey: key}}
	}
	r, why := fire(ctx, d, shots, w.req)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}
	}
	what := "POST " + path
	winner, retry, err := check.KeyedRound(what, w.same, responses(r))
	errs := []error{err}
	for _, j := range retry {
		resp := suite.Do(ctx, shots[j].Req, w.req)
		winner, err = check.Settled(what, w.same, winner, resp)
		errs = append(errs, err)
	}
	after, err := idsOf(ctx, list)
	if err != nil {
		if e := errors.Join(errs...); e != nil {
			return load.Outcome{Round: r, Err: e}
		}
		return load.Outcome{Round: r, Unjudged: "reading the list after the round: " + err.Error()}
	}
	errs = append(errs, check.Grew("GET "+list, before, after, winner))
	return load.Outcome{Round: r, Err: errors.Join(errs...), After: []load.Read{{What: "GET " + list, Saw: tail(after)}}}
}

// taskRace is a Task submit raced on a Session of its own each round.
func taskRace(req string, same bool) keyedWrite {
	return keyedWrite{req: req, same: same,
		round: func(ctx context.Context) (string, string) {
			p := "/v1/sessions/" + client.Seg(sessionID(ctx, req)) + "/tasks"
			return p, p
		},
		body: func(i int) any {
			if same {
				return echoTask("conform concurrent retry")
			}
			return echoTask(fmt.Sprintf("conform concurrent write %d", i+1))
		}}
}

// messageRace is a Message append raced on one Session.
func messageRace(ctx context.Context, req string, same bool) keyedWrite {
	GinkgoHelper()
	p := "/v1/sessions/" + client.Seg(sessionID(ctx, req)) + "/messages"
	return keyedWrite{req: req, same: same,
		round: func(context.Context) (string, string) { return p, p },
		body: func(i int) any {
			if same {
				return map[string]any{"message": textMessage("user", "conform concurrent retry")}
			}
			return map[string]any{"message": textMessage("user", fmt.Sprintf("conform concurrent write %d", i+1))}
		}}
}

// appendShots are n appends of distinct messages to a session, as n
// clients would send them (each with a key of its own).
func appendShots(sess string, n int, label string) []load.Shot {
	shots := make([]load.Shot, n)
	for j := range shots {
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages",
			Body: map[string]any{"message": textMessage("user", fmt.Sprintf("conform client %d, %s", j+1, label))}, IdempotencyKey: suite.Key("append")}}
	}
	return shots
}

// appended are the Messages a round of appends made, and a finding for
// each append that was not accepted.
func appended(r *load.Round) ([]string, error) {
	var ids []string
	var errs []string
	for _, a := range r.Answers {
		resp := a.Response()
		if resp.Status/100 != 2 || check.AnswerID(resp) == "" {
			errs = append(errs, fmt.Sprintf("%s %s answered %s; want 201 with the Message", a.Label, a.Path, a.Summary()))
			continue
		}
		ids = append(ids, check.AnswerID(resp))
	}
	if len(errs) > 0 {
		return ids, fmt.Errorf("appends fired at once by several clients: %s", strings.Join(errs, "; "))
	}
	return ids, nil
}

// transportOnly ends the spec with an error verdict when err is a failure
// below HTTP (the target could not be spoken to), and otherwise does
// nothing: what an answer that is no stream says is another check's.
func transportOnly(err error) {
	GinkgoHelper()
	var te *client.TransportError
	if errors.As(err, &te) {
		suite.Transport(err, suite.SpecReqs()...)
	}
}

// notStream is a subscriber that could not read a stream as one: its
// answer was no event stream, or its frames are not Events (CORE-SSE-001,
// CORE-SSE-003). A round that meets one is unjudged, never failed.
type notStream struct{ error }

// subscriber is a session stream opened during a concurrency round and
// read in the background.
type subscriber struct {
	w      *watch
	stream *client.Stream
}

// subscribe opens an SSE stream (resuming after lastID when set) and reads
// it in the background until ctx ends. It calls no Ginkgo function, so a
// load driver's shot may call it.
func subscribe(ctx context.Context, path, lastID string) (*subscriber, *client.Response, error) {
	req := client.Request{Path: path}
	if lastID != "" {
		req.Header = http.Header{"Last-Event-ID": {lastID}}
	}
	s, err := suite.Client().Stream(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := check.EventStream(s.Response); err != nil {
		s.Close()
		return nil, s.Response, notStream{err}
	}
	w := &watch{path: path, resp: s.Response, changed: make(chan struct{}, 1)}
	go w.read(ctx, s)
	return &subscriber{w: w, stream: s}, s.Response, nil
}

// ids are the event ids the subscriber received so far.
func (s *subscriber) ids() []string {
	evs, _, _ := s.w.snapshot()
	return check.IDs(evs)
}

// until waits, up to the stream timeout, for the subscriber to hold every
// one of want.
func (s *subscriber) until(ctx context.Context, want []string) []string {
	evs, _ := s.w.until(ctx, func(evs []check.Event) bool { return containsAll(check.IDs(evs), want) })
	return check.IDs(evs)
}

var _ = Describe("Concurrency", suite.Concurrency, func() {
	It("creates one Task for retries of one submit fired at once", suite.Req("CORE-IDEM-003"), func(ctx SpecContext) {
		keyedRace(ctx, taskRace("CORE-IDEM-003", true))
	})

	It("creates one Message for retries of one append fired at once", suite.Req("CORE-IDEM-008"), func(ctx SpecContext) {
		keyedRace(ctx, messageRace(ctx, "CORE-IDEM-008", true))
	})

	It("lets one of a key's submits and appends with different bodies win and refuses the others with 409", suite.Req("CORE-IDEM-009"), func(ctx SpecContext) {
		keyedRace(ctx, taskRace("CORE-IDEM-009", false), messageRace(ctx, "CORE-IDEM-009", false))
	})

	It("keeps messages appended at once by several clients in one order in the transcript, the event list and a live stream", suite.Req("CORE-ORDER-001", "CORE-EVT-002", "CORE-EVT-006"), func(ctx SpecContext) {
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		sess := sessionID(ctx, "CORE-ORDER-001")
		evPath, msgPath := "/v1/sessions/"+client.Seg(sess)+"/events", "/v1/sessions/"+client.Seg(sess)+"/messages"
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		sub, _, err := subscribe(sctx, evPath+"/stream", "")
		if err != nil {
			transportOnly(err)
			suite.Note(fmt.Sprintf("CORE-ORDER-001: the session stream could not be read (%v): only the message and event lists were compared (the stream is CORE-SSE-001's to judge)", err))
		}
		rounds := suite.Rounds(roundsOrder)
		order, seqs, ids := load.NewTally(rounds), load.NewTally(rounds), load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			r, why := fire(ctx, d, appendShots(sess, n, fmt.Sprintf("round %d", i)), "CORE-ORDER-001")
			if why != "" {
				for _, t := range []*load.Tally{order, seqs, ids} {
					t.Add(i, load.Outcome{Round: r, Unjudged: why})
				}
				continue
			}
			want, appendErr := appended(r)
			msgs, err1 := idsOf(ctx, msgPath)
			evs, err2 := eventsOf(ctx, evPath)
			if err := errors.Join(err1, err2); err != nil {
				suite.Transport(err, suite.SpecReqs()...)
				for _, t := range []*load.Tally{order, seqs, ids} {
					t.Add(i, load.Outcome{Round: r, Unjudged: "reading the session's lists: " + err.Error()})
				}
				continue
			}
			views := []check.Seq{{Name: "GET " + evPath, IDs: messageIDs(evs)}, {Name: "GET " + msgPath, IDs: msgs}}
			after := []load.Read{{What: "GET " + msgPath, Saw: tail(msgs)}, {What: "GET " + evPath, Saw: tail(check.IDs(evs))}}
			var streamed []check.Event
			if sub != nil {
				sub.until(ctx, check.IDs(evs))
				var bad error
				streamed, bad, _ = sub.w.snapshot()
				if bad != nil {
					// Frames that are not Events are CORE-SSE-003's: the
					// stream is left out of the comparison.
					suite.Note(fmt.Sprintf("CORE-ORDER-001: the session stream's frames are not all Events (%v): only the message and event lists were compared", bad))
					sub, streamed = nil, nil
				} else {
					views = append(views, check.Seq{Name: "GET " + evPath + "/stream", IDs: messageIDs(streamed)})
					after = append(after, load.Read{What: "GET " + evPath + "/stream", Saw: tail(check.IDs(streamed))})
				}
			}
			order.Add(i, load.Outcome{Round: r, Err: errors.Join(appendErr, check.OneOrder(want, views)), After: after})
			seqs.Add(i, load.Outcome{Round: r, Err: errors.Join(check.Sequences("GET "+evPath, evs), check.Sequences("GET "+evPath+"/stream", streamed)), After: after})
			ids.Add(i, load.Outcome{Round: r, Err: errors.Join(check.MonotonicIDs("GET "+evPath, check.IDs(evs)), check.MonotonicIDs("GET "+evPath+"/stream", check.IDs(streamed))), After: after})
		}
		suite.Race("CORE-ORDER-001", order)
		suite.Race("CORE-EVT-002", seqs)
		suite.Race("CORE-EVT-006", ids)
	})

	It("pages through and resumes a session's events while several clients append, seeing each event once", suite.Req("CORE-EVT-004", "CORE-RESUME-001"), func(ctx SpecContext) {
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		sess := sessionID(ctx, "CORE-EVT-004")
		evPath := "/v1/sessions/" + client.Seg(sess) + "/events"
		rounds := suite.Rounds(roundsPaging)
		paging, resume := load.NewTally(rounds), load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			p, rs := pageAndResume(ctx, d, sess, evPath, i)
			paging.Add(i, p)
			resume.Add(i, rs)
		}
		suite.Race("CORE-EVT-004", paging)
		suite.Race("CORE-RESUME-001", resume)
	})

	It("delivers every event once, in order, to each of several subscribers that open a session stream at once", suite.Req("CORE-FANOUT-001"), func(ctx SpecContext) {
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, 2*n)
		rounds := suite.Rounds(roundsFanout)
		t := load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			o := fanOutRound(ctx, d, i)
			t.Add(i, o)
			if o.Err != nil {
				break // a subscriber that lost events cost this round its deadline: one is enough
			}
		}
		suite.Race("CORE-FANOUT-001", t)
	})

	It("leaves one terminal state when cancels race each other and the task's end", suite.Req("CORE-CANCEL-004"), func(ctx SpecContext) {
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		f := newFlow(ctx)
		hook := suite.Env().Discovery.Scenarios() != ""
		rounds := suite.Rounds(roundsCancel)
		t := load.NewTally(rounds)
		for i := 1; i <= rounds; i++ {
			// With the scenario hook, odd rounds cancel a task that works a
			// second (every cancel meets it WORKING: they race each other),
			// even ones a task that ends at once (they race its end).
			// Without it, the target's own agent sets the pace.
			var steps []any
			if hook {
				steps = workThenComplete(map[bool]int{true: 1000, false: 0}[i%2 == 1])
			}
			o := cancelRound(ctx, d, f, steps)
			t.Add(i, o)
			if o.Unjudged != "" {
				break // a task that did not end cost this round --task-timeout: the next would too
			}
		}
		suite.Race("CORE-CANCEL-004", t)
	})
})

// pageAndResume is one round of the paging check: while clients append in
// burstWaves waves, pagerCount pagers walk the session's events by their
// cursors, and a stream is dropped after its first event and resumed from
// the last id it got. Each must see every event after the round's start
// once, in order.
func pageAndResume(ctx context.Context, d *load.Driver, sess, evPath string, i int) (paging, resume load.Outcome) {
	GinkgoHelper()
	before, err := eventsOf(ctx, evPath)
	if err != nil {
		suite.Transport(err, suite.SpecReqs()...)
		u := load.Outcome{Unjudged: "reading the session's events before the round: " + err.Error()}
		return u, u
	}
	start := ""
	if len(before) > 0 {
		start = before[len(before)-1].ID
	}
	sctx, stop := context.WithTimeout(ctx, suite.Env().Config.Concurrency.RoundTimeout)
	defer stop()
	writesDone, cut := make(chan struct{}), make(chan struct{})
	wantC := make(chan []string, 1)
	var wg sync.WaitGroup
	pagers := make([][]string, pagerCount)
	pagerErrs := make([]error, pagerCount)
	for j := range pagerCount {
		wg.Go(func() { pagers[j], pagerErrs[j] = walkEvents(sctx, evPath, start, writesDone) })
	}
	var resumed []string
	var resumeErr error
	wg.Go(func() { resumed, resumeErr = dropAndResume(sctx, evPath+"/stream", start, cut, wantC) })
	var waves []*load.Round
	unjudged := ""
	for w := range burstWaves {
		r, why := fire(ctx, d, appendShots(sess, d.Limits().N, fmt.Sprintf("round %d wave %d", i, w+1)), suite.SpecReqs()...)
		waves = append(waves, r)
		if why != "" {
			unjudged = why
		}
		if w == 0 {
			close(cut) // the stream drops once it has an event of the burst, and resumes while the burst goes on
		}
	}
	close(writesDone)
	r := load.Merge(waves...)
	all, err := eventsOf(ctx, evPath)
	if err != nil {
		stop()
		wg.Wait()
		suite.Transport(err, suite.SpecReqs()...)
		u := load.Outcome{Round: r, Unjudged: "reading the session's events after the round: " + err.Error()}
		return u, u
	}
	want := all
	if start != "" {
		want, _ = check.After(all, start)
	}
	wantIDs := check.IDs(want)
	wantC <- wantIDs
	wg.Wait()
	read := []load.Read{{What: "GET " + evPath, Saw: tail(wantIDs)}}
	if unjudged != "" {
		u := load.Outcome{Round: r, Unjudged: unjudged}
		return u, u
	}
	paging = load.Outcome{Round: r, After: read}
	var errs []error
	for j, pager := range pagers {
		paging.After = append(paging.After, load.Read{What: fmt.Sprintf("pager %d (limit 2, after_event_id)", j+1), Saw: tail(pager)})
		var refused refusedCursor
		if errors.As(pagerErrs[j], &refused) {
			errs = append(errs, fmt.Errorf("pager %d of %d: %w", j+1, pagerCount, refused.error))
			continue
		}
		if pagerErrs[j] != nil {
			paging = load.Outcome{Round: r, Unjudged: fmt.Sprintf("pager %d could not read a page: %v", j+1, pagerErrs[j])}
			break
		}
		errs = append(errs, check.SeenOnce(fmt.Sprintf("GET %s walked by cursors (limit 2) by pager %d of %d while clients appended", evPath, j+1, pagerCount), pager, wantIDs))
	}
	if paging.Unjudged == "" {
		paging.Err = errors.Join(errs...)
	}
	resume = load.Outcome{Round: r, After: append(read, load.Read{What: "GET " + evPath + "/stream, dropped and resumed", Saw: tail(resumed)})}
	var refused refusedCursor
	switch {
	case errors.As(resumeErr, &refused):
		resume.Err = errors.Join(refused.error, check.SeenOnce("GET "+evPath+"/stream dropped after its first event and resumed with Last-Event-ID while clients appended", resumed, wantIDs))
	case resumeErr != nil:
		resume = load.Outcome{Round: r, Unjudged: "the stream could not be read: " + resumeErr.Error()}
	default:
		resume.Err = check.SeenOnce("GET "+evPath+"/stream dropped after its first event and resumed with Last-Event-ID while clients appended", resumed, wantIDs)
	}
	return paging, resume
}

// walkEvents pages through an event list after start (limit 2), following
// next_cursor, and once a page ends the list, the last event's id, until
// done is closed and a read begun after that found nothing new.
func walkEvents(ctx context.Context, path, start string, done <-chan struct{}) ([]string, error) {
	var seen []string
	cursor := start
	used := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages == maxWalkPages {
			return seen, fmt.Errorf("GET %s: more than %d pages", path, maxWalkPages)
		}
		over := false
		select {
		case <-done:
			over = true
		default:
		}
		q := url.Values{"limit": {"2"}}
		if cursor != "" {
			q.Set("after_event_id", cursor)
		}
		resp, err := suite.Client().Do(ctx, client.Request{Path: path, Query: q})
		if err != nil {
			return seen, err
		}
		if resp.Status == http.StatusGone && cursor != start {
			// The walk's cursor came from the server a moment ago: refusing
			// it ends the walk short of the events after it.
			return seen, refusedCursor{fmt.Errorf("%s: the walk's cursor %s, which the list itself handed out, was refused%s", resp, cursor, hint(resp))}
		}
		p, err := check.Events(resp)
		if err != nil {
			return seen, err
		}
		seen = append(seen, check.IDs(p.Events)...)
		next := cursor
		switch {
		case p.HasMore && p.NextCursor != "":
			next = p.NextCursor
		case len(p.Events) > 0:
			next = p.Events[len(p.Events)-1].ID
		case over:
			return seen, nil
		}
		if next == cursor && len(p.Events) > 0 {
			return seen, refusedCursor{fmt.Errorf("%s: the page after cursor %s ends with %s again; the walk cannot move on", resp, cursor, cursor)}
		}
		if next != cursor {
			if used[next] {
				// The list led the walk back to a cursor it had left: it
				// would go round for ever.
				return seen, refusedCursor{fmt.Errorf("%s: the walk was led back to cursor %s, which it had already read after; the walk cannot end", resp, next)}
			}
			used[cursor] = true
			cursor = next
			continue
		}
		select {
		case <-ctx.Done():
			return seen, ctx.Err()
		case <-time.After(suite.FirstPollEvery):
		case <-done:
		}
	}
}

// maxWalkPages bounds one page walk: a list that never lets it end costs
// a bounded number of requests.
const maxWalkPages = 2000

// refusedCursor is a reader's finding: the target refused a cursor it had
// handed out itself, or led the walk in a circle (a failure of the check,
// not a reason to leave the round unjudged).
type refusedCursor struct{ error }

// dropAndResume reads a stream after start until cut is closed and it has
// an event delivered after that (one of the writes in flight), drops it,
// and resumes it with Last-Event-ID set to the last id it got. Once want arrives (the list's events after start, read when the
// writes were over), it reads on until it holds them all or the stream
// timeout passes, and returns every id received on either connection.
func dropAndResume(ctx context.Context, path, start string, cut <-chan struct{}, wantC <-chan []string) ([]string, error) {
	first, _, err := subscribe(ctx, path, start)
	if err != nil {
		return nil, err
	}
	<-cut
	// Drop it at an event of the writes still in flight: one delivered
	// after the cut.
	had, _, _ := first.w.snapshot()
	evs, _ := first.w.until(ctx, func(evs []check.Event) bool { return len(evs) > len(had) })
	first.stream.Close()
	got := check.IDs(evs)
	last := start
	if len(got) > 0 {
		last = got[len(got)-1]
	}
	second, _, err := subscribe(ctx, path, last)
	if err != nil {
		return got, err
	}
	defer second.stream.Close()
	want := <-wantC
	_, complete := second.w.until(ctx, func(evs []check.Event) bool { return containsAll(append(slices.Clone(got), check.IDs(evs)...), want) })
	all := append(got, second.ids()...)
	for _, w := range []*watch{first.w, second.w} {
		if _, bad, _ := w.snapshot(); bad != nil {
			return all, notStream{bad}
		}
	}
	if _, _, ended := second.w.snapshot(); !complete && ended != nil {
		return all, refusedCursor{fmt.Errorf("GET %s resumed with Last-Event-ID %s, an id the stream itself delivered, ended short: %v", path, last, ended)}
	}
	return all, nil
}

// fanOutRound is one round of the fan-out check: on a fresh session, half
// of --concurrency subscribers open its stream at once with as many
// clients appending, and then --concurrency clients append at once; each
// subscriber must receive the session's whole event list once, in order.
func fanOutRound(ctx context.Context, d *load.Driver, i int) load.Outcome {
	GinkgoHelper()
	n := d.Limits().N
	k := max(2, n/2)
	sess := sessionID(ctx, "CORE-FANOUT-001")
	evPath := "/v1/sessions/" + client.Seg(sess) + "/events"
	sctx, stop := context.WithTimeout(ctx, suite.Env().Config.Concurrency.RoundTimeout)
	defer stop()
	subs := make([]*subscriber, k)
	refused := make([]string, k)
	shots := appendShots(sess, n-k, fmt.Sprintf("round %d, with the subscribers", i))
	for j := range k {
		req := client.Request{Path: evPath + "/stream"}
		shots = append(shots, load.Shot{Label: fmt.Sprintf("sub#%d", j+1), Transport: "sse", Req: req, Shell: suite.Client().Curl(req) + " -N",
			Send: func(context.Context) (load.Answer, error) {
				s, resp, err := subscribe(sctx, req.Path, "")
				if resp == nil {
					return load.Answer{}, err
				}
				subs[j] = s
				if err != nil {
					refused[j] = err.Error()
				}
				return load.Answer{Status: resp.Status, Body: resp.Body}, nil // the subscriber's answer: the stream's head
			}})
	}
	opened, why := fire(ctx, d, shots, "CORE-FANOUT-001")
	if why != "" {
		return load.Outcome{Round: opened, Unjudged: why}
	}
	burst, why := fire(ctx, d, appendShots(sess, n, fmt.Sprintf("round %d", i)), "CORE-FANOUT-001")
	r := load.Merge(opened, burst)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}
	}
	_, appendErr := appended(burst)
	all, err := eventsOf(ctx, evPath)
	if err != nil {
		suite.Transport(err, "CORE-FANOUT-001")
		return load.Outcome{Round: r, Unjudged: "reading the session's events after the round: " + err.Error()}
	}
	want := check.IDs(all)
	errs := []error{appendErr}
	after := []load.Read{{What: "GET " + evPath, Saw: tail(want)}}
	for j, s := range subs {
		if s == nil {
			return load.Outcome{Round: r, Unjudged: fmt.Sprintf("subscriber %d: GET %s/stream is not an event stream (CORE-SSE-001's to judge): %s", j+1, evPath, refused[j])}
		}
		got := s.until(sctx, want)
		if _, bad, _ := s.w.snapshot(); bad != nil {
			return load.Outcome{Round: r, Unjudged: fmt.Sprintf("subscriber %d: the frames of GET %s/stream are not all Events (CORE-SSE-003's to judge): %v", j+1, evPath, bad)}
		}
		after = append(after, load.Read{What: fmt.Sprintf("subscriber %d", j+1), Saw: tail(got)})
		errs = append(errs, check.SeenOnce(fmt.Sprintf("subscriber %d of %d, GET %s/stream opened at once with the others", j+1, k, evPath), got, want))
	}
	return load.Outcome{Round: r, Err: errors.Join(errs...), After: after}
}

// cancelRound is one round of the cancel race: a task is submitted and
// --concurrency cancels fire at once; once it settled, it must have one
// terminal state.
func cancelRound(ctx context.Context, d *load.Driver, f *flow, steps []any) load.Outcome {
	GinkgoHelper()
	const req = "CORE-CANCEL-004"
	id := f.submit(ctx, steps)
	task := "/v1/tasks/" + client.Seg(id)
	shots := make([]load.Shot, d.Limits().N)
	for j := range shots {
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: task + "/cancel", Body: map[string]any{"reason": "conform: cancels racing each other"}}}
	}
	r, why := fire(ctx, d, shots, req)
	if why != "" {
		return load.Outcome{Round: r, Unjudged: why}
	}
	final, _ := f.awaitTerminal(ctx, id)
	if !check.Terminal(final) {
		return load.Outcome{Round: r, Unjudged: fmt.Sprintf("task %s did not end within --task-timeout %s (it is %s)", id, suite.Env().Config.Timeouts.Task, final)}
	}
	c := check.CancelRace{Task: id, Cancels: responses(r)}
	var m map[string]any
	for range 3 {
		m, _ = f.get(ctx, id)
		s, _ := m["status"].(string)
		c.Reads = append(c.Reads, s)
	}
	evs, err := eventsOf(ctx, task+"/events")
	if err != nil {
		suite.Transport(err, req)
		return load.Outcome{Round: r, Unjudged: "reading the task's events: " + err.Error()}
	}
	cs, err := check.Changes(id, evs)
	if err != nil {
		return load.Outcome{Round: r, Unjudged: "reading the task's state events: " + err.Error()}
	}
	for _, ch := range cs {
		if check.Terminal(ch.To) {
			c.Terminal = append(c.Terminal, ch)
		}
	}
	c.Outcomes = outcomesOf(ctx, id, m)
	var terms, outs []string
	for _, ch := range c.Terminal {
		terms = append(terms, ch.String())
	}
	for _, o := range c.Outcomes {
		outs = append(outs, fmt.Sprintf("%v %v", o["id"], o["status"]))
	}
	after := []load.Read{{What: "GET " + task + " (3 reads)", Saw: strings.Join(c.Reads, ", ")},
		{What: "GET " + task + "/events, terminal state events", Saw: strings.Join(terms, ", ")},
		{What: "the task's Outcomes", Saw: strings.Join(outs, ", ")}}
	return load.Outcome{Round: r, Err: check.OneTerminal(c), After: after}
}

// outcomesOf finds a task's Outcomes: its outcome_id, and the outcome list
// filtered by task_id (items that name another task left out: a list
// that ignores the filter is not this check's to judge).
func outcomesOf(ctx context.Context, id string, task map[string]any) []map[string]any {
	var out []map[string]any
	seen := map[string]bool{}
	add := func(o map[string]any) {
		if tid, ok := o["task_id"].(string); (ok && tid != id) || seen[idOf(o)] {
			return
		}
		seen[idOf(o)] = true
		out = append(out, o)
	}
	if resp, err := suite.Client().Do(ctx, client.Request{Path: "/v1/outcomes", Query: url.Values{"task_id": {id}}}); err == nil && resp.Status == http.StatusOK {
		if p, err := check.ListPage(resp); err == nil {
			for _, o := range p.Items {
				add(o)
			}
		}
	}
	if oid, _ := task["outcome_id"].(string); oid != "" && !seen[oid] {
		if resp, err := suite.Client().Do(ctx, client.Request{Path: "/v1/outcomes/" + client.Seg(oid)}); err == nil && resp.Status == http.StatusOK {
			if o, err := resp.Object(); err == nil {
				add(o)
			}
		}
	}
	return out
}
