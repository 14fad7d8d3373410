package refharness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/load"
)

// The probes of the race faults (issue 23): each fires requests at once
// in-process, round after round, until the race shows or the rounds run
// out. A clean harness never shows it; the fault's harness does within a
// few rounds (the bound is a hang guard, far above what they take).

// Rounds of the race probes: every race fault waits raceGap between its
// early read and its act (the subscriber list's, between reading the list
// and storing it), so in the bubble, where requests released at once all
// arrive within it, the race shows in the first round; the second is a
// margin. The matrix runs every probe under every fault, so a clean
// harness's rounds are kept few.
const (
	raceRounds       = 2
	receiptRounds    = 2
	subscriberRounds = 2
)

// durable is a harness like p's (its faults and variants) with its journal
// on disk: the reference as selftest and the proof runs serve it, where a
// write waits for the journal's fsync (the race faults' windows are their
// store round trip, raceGap, on top of it).
func (p *probeEnv) durable() *probeEnv {
	o := p.s.opts
	o.DataDir = p.t.TempDir()
	return newProbeEnv(p.t, Options{Faults: o.Faults, Variants: o.Variants, DataDir: o.DataDir})
}

// raceProbe runs round until it returns an error (the race showed) or
// raceRounds pass.
func raceProbe(round func() error) error {
	for range raceRounds {
		if err := round(); err != nil {
			return err
		}
	}
	return nil
}

func appendText(text string) map[string]any {
	return map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}}
}

// appendAtOnce appends n messages to sess at once.
func (p *probeEnv) appendAtOnce(sess string, n int) {
	load.AtOnce(n, nil, func(i int) { p.do("POST", "/v1/sessions/"+sess+"/messages", appendText(fmt.Sprintf("racer %d", i))) })
}

// appendedEvents are sess's session.message_appended events, in list order.
func (p *probeEnv) appendedEvents(sess string) []map[string]any {
	var out []map[string]any
	for _, e := range p.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil).list() {
		if e["event"] == "session.message_appended" {
			out = append(out, e)
		}
	}
	return out
}

// sequentialRetryReplays sends two requests one after the other with one
// fresh key (send returns the resource id) and reports whether the second
// replayed the first: the control of the idempotency race probes, which
// judge only a server whose keys work when nothing races.
func (p *probeEnv) sequentialRetryReplays(send func(key string) string) bool {
	p.controls++
	key := fmt.Sprintf("control-%d", p.controls)
	return send(key) == send(key)
}

// sequentialAppends appends three messages one after the other to a fresh
// session and reports whether ok holds of it: the control of the append
// race probes.
func (p *probeEnv) sequentialAppends(ok func(sess string) bool) bool {
	sess := p.session()
	for i := range 3 {
		p.do("POST", "/v1/sessions/"+sess+"/messages", appendText(fmt.Sprintf("in turn %d", i)))
	}
	return ok(sess)
}

// sharedSequence names two of evs that share a sequence number, or is "".
func sharedSequence(evs []map[string]any) string {
	seen := map[string]string{}
	for _, e := range evs {
		n := fmt.Sprint(e["sequence"])
		if other, dup := seen[n]; dup {
			return fmt.Sprintf("events %s and %v share sequence %s", other, e["id"], n)
		}
		seen[n] = fmt.Sprint(e["id"])
	}
	return ""
}

// transcriptAgrees reports whether sess lists its messages in the order its
// session.message_appended events announce them.
func (p *probeEnv) transcriptAgrees(sess string) bool {
	var byEvents, listed []string
	for _, e := range p.appendedEvents(sess) {
		byEvents = append(byEvents, fmt.Sprint(e["payload"].(map[string]any)["message_id"]))
	}
	for _, m := range p.do("GET", "/v1/sessions/"+sess+"/messages?limit=200", nil).list() {
		listed = append(listed, fmt.Sprint(m["id"]))
	}
	return strings.Join(byEvents, ",") == strings.Join(listed, ",")
}

// pipeWriter is a ResponseWriter that streams into a pipe, for an SSE
// stream served in-process and read live.
type pipeWriter struct {
	h  http.Header
	pw *io.PipeWriter
}

func (w *pipeWriter) Header() http.Header         { return w.h }
func (w *pipeWriter) WriteHeader(int)             {}
func (w *pipeWriter) Write(b []byte) (int, error) { return w.pw.Write(b) }
func (w *pipeWriter) Flush()                      {}

// liveStream serves path as an SSE stream until ctx ends and sends the id
// of every event frame it delivers on the returned channel: the frame's id
// field, or, when the server leaves that out (drop-sse-id's bug, not this
// probe's), the id its JSON data names.
func (p *probeEnv) liveStream(ctx context.Context, path string) <-chan string {
	pr, pw := io.Pipe()
	req := httptest.NewRequestWithContext(ctx, "GET", path, nil)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	go func() {
		p.s.ServeHTTP(&pipeWriter{h: http.Header{}, pw: pw}, req)
		pw.Close()
	}()
	ids := make(chan string, 1024)
	go func() {
		defer close(ids)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var id string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, v)
			}
			if line != "" {
				continue
			}
			if id == "" && len(data) > 0 {
				var e struct{ ID string }
				if json.Unmarshal([]byte(strings.Join(data, "\n")), &e) == nil {
					id = e.ID
				}
			}
			if id != "" {
				select {
				case ids <- id:
				case <-ctx.Done():
					return
				}
			}
			id, data = "", nil
		}
	}()
	return ids
}

// until reads ids until want arrives, within d.
func until(ids <-chan string, want string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case id, ok := <-ids:
			if !ok {
				return false
			}
			if id == want {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

func init() {
	probes[FaultDuplicateOnConcurrentRetry] = func(p *probeEnv) error {
		p = p.durable()
		sess := p.sessionID()
		n := 0
		return raceProbe(func() error {
			n++
			key := fmt.Sprintf("k-%d", n)
			ids := make([]string, 6)
			load.AtOnce(len(ids), nil, func(i int) {
				ids[i] = p.do("POST", "/v1/sessions/"+sess+"/messages", appendText("once"), "Idempotency-Key", key).str("id")
			})
			for _, id := range ids {
				if id != ids[0] {
					if !p.sequentialRetryReplays(func(k string) string {
						return p.do("POST", "/v1/sessions/"+sess+"/messages", appendText("once"), "Idempotency-Key", k).str("id")
					}) {
						return nil // keys ignored outright: not the race (forget-idempotency's probe)
					}
					return fmt.Errorf("appends fired at once with one key made %s and %s", ids[0], id)
				}
			}
			return nil
		})
	}
	probes[FaultExtDuplicateOnConcurrentRetry] = func(p *probeEnv) error {
		p = p.durable()
		n := 0
		return raceProbe(func() error {
			n++
			key := fmt.Sprintf("k-%d", n)
			ids := make([]string, 6)
			load.AtOnce(len(ids), nil, func(i int) { ids[i] = ws(p, key).str("id") })
			for _, id := range ids {
				if id != ids[0] {
					if !p.sequentialRetryReplays(func(k string) string { return ws(p, k).str("id") }) {
						return nil // keys ignored outright: not the race (forget-idempotency's probe)
					}
					return fmt.Errorf("workspace creates fired at once with one key made %s and %s", ids[0], id)
				}
			}
			return nil
		})
	}
	probes[FaultSessionSequenceReadEarly] = func(p *probeEnv) error {
		p = p.durable()
		return raceProbe(func() error {
			sess := p.session()
			p.appendAtOnce(sess, 6)
			if dup := sharedSequence(p.appendedEvents(sess)); dup != "" {
				if !p.sequentialAppends(func(sess string) bool { return sharedSequence(p.appendedEvents(sess)) == "" }) {
					return nil // sequential appends share numbers too: not the race (sequence-not-increasing's probe)
				}
				return fmt.Errorf("session %s: %s", sess, dup)
			}
			return nil
		})
	}
	probes[FaultEventIDReadEarly] = func(p *probeEnv) error {
		p = p.durable()
		return raceProbe(func() error {
			sess := p.session()
			p.appendAtOnce(sess, 6)
			seen := map[string]bool{}
			for _, e := range p.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil).list() {
				id := fmt.Sprint(e["id"])
				if seen[id] {
					return fmt.Errorf("session %s lists event id %s twice", sess, id)
				}
				seen[id] = true
			}
			return nil
		})
	}
	probes[FaultTranscriptIndexedLate] = func(p *probeEnv) error {
		p = p.durable()
		return raceProbe(func() error {
			sess := p.session()
			p.appendAtOnce(sess, 6)
			if !p.transcriptAgrees(sess) {
				if !p.sequentialAppends(p.transcriptAgrees) {
					return nil // sequential appends are misordered too: not the race (messages-newest-first's probe)
				}
				return fmt.Errorf("session %s lists its messages in another order than its events announce them", sess)
			}
			return nil
		})
	}
	probes[FaultCancelNoRecheck] = func(p *probeEnv) error {
		p = p.durable()
		sess := p.sessionID()
		return raceProbe(func() error {
			id := p.submit(sess, []map[string]any{step("work", "ms", 600000)}).str("id")
			p.waitStatus(id, StatusWorking)
			load.AtOnce(6, nil, func(int) { p.do("POST", "/v1/tasks/"+id+"/cancel", map[string]any{}) })
			// Only more than one is this race: none is cancel-noop's bug, and
			// a list with other tasks' events is events-not-scoped's.
			_, evs := p.taskEvents(id)
			n := 0
			for _, e := range evs {
				if e["event"] == "task.canceled" && e["task_id"] == id {
					n++
				}
			}
			if n > 1 {
				return fmt.Errorf("task %s, canceled 6 ways at once, has %d task.canceled events", id, n)
			}
			return nil
		})
	}
	probes[FaultReceiptChainHeadStale] = func(p *probeEnv) error {
		p = p.durable()
		sess := p.sessionID()
		for range receiptRounds {
			ids := make([]string, 4)
			load.AtOnce(len(ids), nil, func(i int) { ids[i] = p.submit(sess, nil).str("id") })
			p.waitTerminal(ids[0])
			links := map[string]string{}
			for _, id := range ids {
				for _, r := range p.do("GET", "/v1/tasks/"+id+"/receipts", nil).list() {
					prev := fmt.Sprint(r["chain"].(map[string]any)["previous_receipt_hash"])
					if other, fork := links[prev]; fork {
						return fmt.Errorf("receipts %s and %v both link to %s", other, r["receipt_id"], prev)
					}
					links[prev] = fmt.Sprint(r["receipt_id"])
				}
			}
		}
		return nil
	}
	probes[FaultSSESubscribersLost] = func(p *probeEnv) error {
		p = p.durable()
		sess := p.session()
		path := "/v1/sessions/" + sess + "/events/stream"
		for range subscriberRounds {
			ctx, cancel := context.WithCancel(context.Background())
			streams := make([]<-chan string, 8)
			load.AtOnce(len(streams), nil, func(i int) { streams[i] = p.liveStream(ctx, path) })
			first := p.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil).list()
			for i, s := range streams {
				if !until(s, fmt.Sprint(first[len(first)-1]["id"]), waitLimit) {
					cancel()
					return cannotJudge("stream %d did not deliver the session's history", i+1)
				}
			}
			// Two waves: a stream registers a moment after its history (the
			// fault's window), and what was appended meanwhile it still
			// delivers; a lost registration shows from the second wave.
			for wave := range 2 {
				p.do("POST", "/v1/sessions/"+sess+"/messages", appendText(fmt.Sprintf("after the streams opened, wave %d", wave)))
				evs := p.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil).list()
				last := fmt.Sprint(evs[len(evs)-1]["id"])
				for i, s := range streams {
					if !until(s, last, time.Second) {
						cancel()
						return fmt.Errorf("wave %d: stream %d of %d opened at once did not deliver event %s within a second", wave+1, i+1, len(streams), last)
					}
				}
			}
			cancel()
		}
		return nil
	}
}
