package wsadapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harn-conform/conform/refharness"
)

// The WebSocket faults' probes, the counterpart of refharness's fault ×
// probe matrix (refharness/faults_test.go), which cannot hold them: a
// probe needs this adapter, and refharness's tests cannot import it (it
// imports refharness). Each probe checks one requirement of the profile
// over a fresh harness and returns an error when it is broken. Each
// WebSocket fault must break its own probe and no other; every probe must
// pass on a clean harness and under every variant. (The REST faults break
// WebSocket probes where the transports share the core by design: a
// cancel that does nothing over REST does nothing as a command either.
// refharness's matrix runs each WebSocket fault against every REST probe,
// which it must not break.)

type wsProbe func(p *env) error

// await reads c's frames until one satisfies want, without failing the
// test: a probe's error says what did not come.
func (c *client) await(what string, want func(m msg) bool) (msg, error) {
	deadline := time.Now().Add(hang)
	for _, m := range c.held {
		if want(m) {
			return m, nil
		}
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return msg{}, fmt.Errorf("no %s within %s", what, hang)
		}
		t := time.NewTimer(left)
		select {
		case m, ok := <-c.msgs:
			t.Stop()
			if !ok {
				return msg{}, fmt.Errorf("the connection ended before %s: %v", what, c.endErr())
			}
			if want(m) {
				return m, nil
			}
			if m.f["type"] != "ping" {
				c.held = append(c.held, m)
			}
		case <-t.C:
			return msg{}, fmt.Errorf("no %s within %s", what, hang)
		}
	}
}

func isType(typ string) func(m msg) bool { return func(m msg) bool { return m.f["type"] == typ } }

func isEvent(kind string) func(m msg) bool {
	return func(m msg) bool {
		ev, _ := m.f["event"].(map[string]any)
		return m.f["type"] == "event" && ev["event"] == kind
	}
}

func answers(id string) func(m msg) bool {
	return func(m msg) bool {
		return m.f["in_reply_to"] == id && (m.f["type"] == "result" || m.f["type"] == "error")
	}
}

// open dials path with the first key's headers and waits for ready.
func (p *env) open(path string) (*client, error) {
	c, resp, err := p.dial(path, headers(testKey))
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return nil, fmt.Errorf("the upgrade on %s was refused (%d): %v", path, status, err)
	}
	if _, err := c.await("ready", isType("ready")); err != nil {
		return nil, err
	}
	return c, nil
}

// ask sends a command and returns its answer.
func (c *client) ask(frame map[string]any) (msg, error) {
	b, _ := json.Marshal(frame)
	c.sendRaw(1, b)
	return c.await("the answer to "+frame["id"].(string), answers(frame["id"].(string)))
}

func resultOf(m msg, status int) (map[string]any, error) {
	if m.f["type"] != "result" || num(m.f["status"]) != status {
		return nil, fmt.Errorf("answer %s, want result %d", m.raw, status)
	}
	r, _ := m.f["result"].(map[string]any)
	return r, nil
}

var wsProbes = map[refharness.Fault]wsProbe{
	refharness.FaultWSUpgradeUnauthenticated: func(p *env) error {
		path := "/v1/sessions/" + p.session() + "/events/stream"
		if c, _, err := p.dial(path, headers("wrong-key")); err == nil {
			c.close()
			return errors.New("an upgrade with a wrong Authorization header was accepted")
		}
		c, _, err := p.dial(path, nil)
		if err != nil {
			return fmt.Errorf("the header-less upgrade was refused: %v", err)
		}
		c.send(authFrame("a", "wrong-key"))
		m, err := c.await("an answer to the auth frame", func(m msg) bool { return m.f["type"] != "ping" })
		if err != nil {
			return err
		}
		if m.f["type"] != "error" || num(m.f["status"]) != 401 {
			return fmt.Errorf("an auth frame with a wrong credential was answered %s, want error 401", m.raw)
		}
		return nil
	},
	refharness.FaultWSAdvertisesPlainRemote: func(p *env) error {
		for _, it := range p.ok("GET", "/v1/agent-card", nil, "Authorization", "")["harn_interfaces"].([]any) {
			m := it.(map[string]any)
			u, err := url.Parse(fmt.Sprint(m["url"]))
			if m["transport"] != "websocket" || err != nil || u.Scheme != "ws" {
				continue
			}
			h := u.Hostname()
			if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return fmt.Errorf("the card advertises %s: plain ws:// on a host that is no loopback address", u)
			}
		}
		return nil
	},
	refharness.FaultWSBinaryEventFrames: func(p *env) error {
		c, err := p.open("/v1/sessions/" + p.session() + "/events/stream")
		if err != nil {
			return err
		}
		m, err := c.await("an event frame", isType("event"))
		if err != nil {
			return err
		}
		if m.binary {
			return errors.New("an event frame came as a binary message")
		}
		return nil
	},
	refharness.FaultWSMessageNotAppended: func(p *env) error {
		sess := p.session()
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		a, err := c.ask(map[string]any{"type": "user_message", "id": "m", "session_id": sess, "message": textMessage("probe")})
		if err != nil {
			return err
		}
		r, err := resultOf(a, 201)
		if err != nil {
			return err
		}
		listed := p.ok("GET", "/v1/sessions/"+sess+"/messages", nil)["data"].([]any)
		if !slices.ContainsFunc(listed, func(v any) bool { return v.(map[string]any)["id"] == r["id"] }) {
			return fmt.Errorf("user_message answered message %v, which GET /v1/sessions/{id}/messages does not list", r["id"])
		}
		for _, ev := range p.events("/v1/sessions/" + sess + "/events") {
			if pl, _ := ev["payload"].(map[string]any); pl["message_id"] == r["id"] {
				return nil
			}
		}
		return fmt.Errorf("no event announces message %v", r["id"])
	},
	refharness.FaultWSCancelIgnored: func(p *env) error {
		sess := p.session()
		task := p.submit(sess, step("work", "ms", 600000))
		c, err := p.open("/v1/tasks/" + task + "/stream")
		if err != nil {
			return err
		}
		a, err := c.ask(map[string]any{"type": "cancel_task", "id": "c", "task_id": task})
		if err != nil {
			return err
		}
		if _, err := resultOf(a, 200); err != nil {
			return err
		}
		if st := p.status(task); st != "CANCELED" {
			return fmt.Errorf("cancel_task answered 200, and the task is %s, want CANCELED", st)
		}
		return nil
	},
	refharness.FaultWSTruncateKeepsAll: func(p *env) error {
		sess := p.session()
		for _, text := range []string{"one", "two", "three"} {
			p.ok("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": textMessage(text)})
		}
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		a, err := c.ask(map[string]any{"type": "truncate_session", "id": "t", "session_id": sess, "keep_first": 1})
		if err != nil {
			return err
		}
		if _, err := resultOf(a, 200); err != nil {
			return err
		}
		if n := len(p.ok("GET", "/v1/sessions/"+sess+"/messages", nil)["data"].([]any)); n != 1 {
			return fmt.Errorf("after keep_first 1, %d messages are listed", n)
		}
		if !slices.Contains(kinds(p.events("/v1/sessions/"+sess+"/events")), "session.truncated") {
			return errors.New("no session.truncated event")
		}
		return nil
	},
	refharness.FaultWSEventFrameDiffers: func(p *env) error {
		sess := p.session()
		task := p.submit(sess, step("emit", "count", 2))
		p.waitStatus(task, "COMPLETED")
		rest := p.events("/v1/tasks/" + task + "/events")
		c, err := p.open("/v1/tasks/" + task + "/stream")
		if err != nil {
			return err
		}
		for _, want := range rest {
			m, err := c.await("event frame "+want["id"].(string), isType("event"))
			if err != nil {
				return err
			}
			c.held = nil
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(m.f["event"])
			if m.f["event_id"] != want["id"] || string(wb) != string(gb) {
				return fmt.Errorf("event frame %v differs from the REST copy:\n got %s\nwant %s", m.f["event_id"], gb, wb)
			}
		}
		return nil
	},
	refharness.FaultWSNoInputRequest: func(p *env) error {
		sess := p.session()
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		task := p.submit(sess, step("input_required", "prompt", "probe"), step("work", "ms", 600000))
		r, err := c.await("an input_request", isType("input_request"))
		if err != nil {
			return err
		}
		a, err := c.ask(map[string]any{"type": "input_response", "id": "i", "request_id": r.f["request_id"], "task_id": task, "message": textMessage("x")})
		if err != nil {
			return err
		}
		if _, err := resultOf(a, 201); err != nil {
			return err
		}
		p.waitStatus(task, "WORKING")
		return nil
	},
	refharness.FaultWSApprovalAnswerIgnored: func(p *env) error {
		sess := p.session()
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		task := p.submit(sess, step("tool_approval", "tool", "conform.write"), step("work", "ms", 600000))
		r, err := c.await("an approval_request", isType("approval_request"))
		if err != nil {
			return err
		}
		a, err := c.ask(map[string]any{"type": "approval_response", "id": "y", "request_id": r.f["request_id"], "task_id": task, "approved": true})
		if err != nil {
			return err
		}
		if a.f["type"] != "result" {
			return fmt.Errorf("approval_response answered %s", a.raw)
		}
		m, err := c.await("the tool call's end", func(m msg) bool { return isEvent("tool.completed")(m) || isEvent("tool.denied")(m) })
		if err != nil {
			return err
		}
		if isEvent("tool.denied")(m) {
			return errors.New("an approved tool call was denied")
		}
		return nil
	},
	refharness.FaultWSResumeSkipsEvent: func(p *env) error {
		sess := p.session()
		task := p.submit(sess, step("emit", "count", 3))
		p.waitStatus(task, "COMPLETED")
		rest := restIDs(p.events("/v1/tasks/" + task + "/events"))
		h := headers(testKey)
		h.Set("Last-Event-ID", rest[1])
		c, _, err := p.dial("/v1/tasks/"+task+"/stream", h)
		if err != nil {
			return err
		}
		for _, want := range rest[2:] {
			m, err := c.await("event frame "+want, isType("event"))
			if err != nil {
				return err
			}
			c.held = nil
			if m.f["event_id"] != want {
				return fmt.Errorf("resumed after %s: event frame %v, want %s", rest[1], m.f["event_id"], want)
			}
		}
		return nil
	},
	refharness.FaultWSNoHeartbeat: func(p *env) error {
		c, err := p.open("/v1/sessions/" + p.session() + "/events/stream")
		if err != nil {
			return err
		}
		start := time.Now()
		if _, err := c.await("a ping frame", isType("ping")); err != nil {
			return err
		}
		if d := time.Since(start); d > 30*time.Second {
			return fmt.Errorf("the first ping came %s after ready, want at most 30s", d)
		}
		return nil
	},
	refharness.FaultWSReplayedUnmarked: func(p *env) error {
		sess := p.session()
		task := p.submit(sess, step("auth_required", "reason", "probe"), step("work", "ms", 600000))
		p.waitStatus(task, "AUTH_REQUIRED")
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		for _, want := range restIDs(p.events("/v1/sessions/" + sess + "/events")) {
			m, err := c.await("event frame "+want, isType("event"))
			if err != nil {
				return err
			}
			c.held = nil
			if m.f["replayed"] != true {
				return fmt.Errorf("history event frame %s marked replayed %v", want, m.f["replayed"])
			}
		}
		r, err := c.await("the pending authorization_request", isType("authorization_request"))
		if err != nil {
			return err
		}
		if r.f["replayed"] != true {
			return fmt.Errorf("the pending request re-sent from history is marked replayed %v", r.f["replayed"])
		}
		live := p.submit(sess)
		m, err := c.await("the live task.submitted", func(m msg) bool {
			ev, _ := m.f["event"].(map[string]any)
			return ev["event"] == "task.submitted" && ev["task_id"] == live
		})
		if err != nil {
			return err
		}
		if m.f["replayed"] != false {
			return fmt.Errorf("a live event frame is marked replayed %v", m.f["replayed"])
		}
		return nil
	},
	refharness.FaultWSUnauthenticatedSilent: func(p *env) error {
		c, _, err := p.dial("/v1/sessions/"+p.session()+"/events/stream", nil)
		if err != nil {
			return fmt.Errorf("the header-less upgrade was refused: %v", err)
		}
		defer c.close()
		m, err := c.await("an answer to the missing auth frame", func(m msg) bool { return m.f["type"] != "ping" })
		if err != nil {
			return err
		}
		if m.f["type"] != "error" || num(m.f["status"]) != 401 {
			return fmt.Errorf("an upgrade that never sent its auth frame got %s, want error 401", m.raw)
		}
		return nil
	},
	refharness.FaultWSIdempotencyIgnored: func(p *env) error {
		sess := p.session()
		task := p.submit(sess, step("work", "ms", 600000))
		c, err := p.open("/v1/sessions/" + sess + "/events/stream")
		if err != nil {
			return err
		}
		var first map[string]any
		for _, id := range []string{"k1", "k2"} {
			a, err := c.ask(map[string]any{"type": "cancel_task", "id": id, "idempotency_key": "probe-key", "task_id": task})
			if err != nil {
				return err
			}
			r, err := resultOf(a, 200)
			if err != nil {
				return fmt.Errorf("the repeat of a keyed cancel_task: %w", err)
			}
			if first == nil {
				first = r
			} else if r["id"] != first["id"] || r["status"] != first["status"] {
				return fmt.Errorf("the repeat answered %v %v, the first %v %v", r["id"], r["status"], first["id"], first["status"])
			}
		}
		return nil
	},
}

func TestEveryWSFaultHasAProbe(t *testing.T) {
	for _, f := range refharness.WSFaults() {
		if wsProbes[f] == nil {
			t.Errorf("WebSocket fault %s has no probe", f)
		}
		if !slices.Contains(refharness.AllFaults(), f) {
			t.Errorf("WebSocket fault %s is not in refharness.AllFaults", f)
		}
	}
	if len(wsProbes) != len(refharness.WSFaults()) {
		t.Errorf("%d probes for %d WebSocket faults", len(wsProbes), len(refharness.WSFaults()))
	}
}

// probeRun runs probe g against a fresh harness with options ro.
func probeRun(t *testing.T, ro refharness.Options, g refharness.Fault) error {
	p := newEnvWith(t, ro, Options{}, nil)
	p.lax = true
	return wsProbes[g](p)
}

func TestWSProbesPassOnCleanServerAndVariants(t *testing.T) {
	configs := map[string]refharness.Variants{"clean": {}}
	for _, v := range refharness.AllVariants() {
		if v == refharness.VariantNoScenarioHook || v == refharness.VariantCoreOnly {
			continue // the probes drive tasks by the hook and set up through the Workspace API
		}
		configs[string(v)] = refharness.Variants{v: true}
	}
	for name, vs := range configs {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, g := range refharness.WSFaults() {
					if err := probeRun(t, refharness.Options{Variants: vs}, g); err != nil {
						t.Errorf("probe %s fails: %v", g, err)
					}
				}
			})
		})
	}
}

func TestEachWSFaultBreaksExactlyItsProbe(t *testing.T) {
	for _, f := range refharness.WSFaults() {
		t.Run(string(f), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, g := range refharness.WSFaults() {
					err := probeRun(t, refharness.Options{Faults: refharness.Faults{f: true}}, g)
					switch {
					case g == f && err == nil:
						t.Errorf("fault %s does not break its probe", f)
					case g != f && err != nil && !declaredToBreak(f, g):
						t.Errorf("fault %s also breaks probe %s: %v", f, g, err)
					}
				}
			})
		})
	}
}

// declaredToBreak reports whether fault f's declaration fails or tolerates
// a requirement that g fails or warns about: then f may break g's probe
// too (the race probes see a broken command from another side:
// ws-idempotency-ignored and ws-message-not-appended make two Messages of
// one keyed write; a lost subscription never shows the approval_request
// that ws-approval-answer-ignored's probe answers).
func declaredToBreak(f, g refharness.Fault) bool {
	df, _ := f.Decl()
	dg, _ := g.Decl()
	return slices.ContainsFunc(slices.Concat(df.Fails, df.Tolerated), func(id string) bool { return slices.Contains(dg.Own(), id) })
}

var _ = http.StatusOK
