package wsadapter

import (
	"fmt"
	"time"

	"github.com/harn-conform/conform/internal/load"
	"github.com/harn-conform/conform/refharness"
)

// The probes of the WebSocket race faults (issue 23): requests and
// connections fired at once, round after round, until the race shows.
// The race faults wait a store round trip between their read and their act
// (refharness's raceGap), and in the bubble requests released at once all
// arrive within it: the race shows in the first round, the others are a
// margin. The bounds keep a clean harness's probe cheap (the matrix runs
// every probe under every fault).
const (
	commandRounds    = 3
	subscriberRounds = 3
)

// durable is a harness with p's faults (variants aside) and its journal on
// disk, as selftest and the proof runs serve the reference: a write waits
// for the journal's fsync (the race faults' windows are their store round
// trip, refharness's raceGap, on top of it).
func (p *env) durable() *env {
	ro := refharness.Options{Faults: refharness.Faults{}, DataDir: p.t.TempDir()}
	for _, f := range refharness.AllFaults() {
		if p.srv.Fault(f) {
			ro.Faults[f] = true
		}
	}
	q := newEnvWith(p.t, ro, Options{}, nil)
	q.lax = p.lax
	return q
}

// within waits up to d for a frame of c that satisfies want (await waits
// the hang guard, longer than the heartbeat that would wake a lost
// subscriber).
func (c *client) within(d time.Duration, want func(m msg) bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, m := range c.held {
		if want(m) {
			return true
		}
	}
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return false
			}
			if want(m) {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

func init() {
	wsProbes[refharness.FaultWSCommandIdempotencyRaced] = func(p *env) error {
		p = p.durable()
		sess := p.session()
		path := "/v1/sessions/" + sess + "/events/stream"
		cs := make([]*client, 3)
		for i := range cs {
			c, err := p.open(path)
			if err != nil {
				return err
			}
			defer c.close()
			cs[i] = c
		}
		for round := range commandRounds {
			key := fmt.Sprintf("race-%d", round)
			msg := textMessage(fmt.Sprintf("sent at once over both transports, round %d", round))
			ids := make([]string, 2*len(cs))
			errs := make([]error, len(ids))
			load.AtOnce(len(ids), nil, func(i int) {
				if i < len(cs) {
					m, err := cs[i].ask(map[string]any{"type": "user_message", "id": fmt.Sprintf("r%d-%d", round, i), "idempotency_key": key, "session_id": sess, "message": msg})
					if err == nil {
						var r map[string]any
						if r, err = resultOf(m, 201); err == nil {
							ids[i], _ = r["id"].(string)
						}
					}
					errs[i] = err
					return
				}
				// In the bubble a command's frame takes no time but a few
				// goroutine hops, and an in-process REST request none: the
				// REST requests go a moment later (virtual time), as a
				// client's would over the network, so some arrive after a
				// command looked its key up and before it acted.
				time.Sleep(time.Millisecond)
				code, body := p.rest("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": msg}, "Idempotency-Key", key)
				if code/100 != 2 {
					errs[i] = fmt.Errorf("POST messages: status %d: %v", code, body)
					return
				}
				ids[i], _ = body["id"].(string)
			})
			for i, id := range ids {
				if errs[i] != nil {
					return errs[i]
				}
				if id != ids[0] {
					return fmt.Errorf("round %d: a user_message and its REST append sent at once with key %s made %s and %s", round, key, ids[0], id)
				}
			}
		}
		return nil
	}
	wsProbes[refharness.FaultWSSubscribersLost] = func(p *env) error {
		p = p.durable()
		sess := p.session()
		path := "/v1/sessions/" + sess + "/events/stream"
		for round := range subscriberRounds {
			cs := make([]*client, 6)
			errs := make([]error, len(cs))
			load.AtOnce(len(cs), nil, func(i int) { cs[i], errs[i] = p.open(path) })
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			// Two waves, each stream's next live append awaited in each: a
			// stream registers a moment after its history (the fault's
			// window), and what was appended meanwhile it still delivers; a
			// lost registration shows from the second wave.
			var lost error
			for wave := range 2 {
				text := fmt.Sprintf("round %d wave %d", round, wave)
				p.ok("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": textMessage(text)})
				for i, c := range cs {
					if lost == nil && !c.within(time.Second, func(m msg) bool {
						ev, _ := m.f["event"].(map[string]any)
						return m.f["type"] == "event" && m.f["replayed"] == false && ev["event"] == "session.message_appended"
					}) {
						lost = fmt.Errorf("round %d, wave %d: session %d of %d opened at once delivered no live event within a second", round, wave+1, i+1, len(cs))
					}
				}
			}
			for _, c := range cs {
				c.close()
			}
			if lost != nil {
				return lost
			}
		}
		return nil
	}
}
