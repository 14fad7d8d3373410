package refharness

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: connectors and delivery dedupe.
var (
	FaultConnectorNotReadable = declare(fault.Fault{Name: "connector-not-readable",
		Doc:   "GET /v1/connectors/{id} answers 404 (connectors are still listed)",
		Fails: []string{"EXT-CONNECTOR-001"}})
	// The key stays stable (EXT-CONNECTOR-002 holds); the redelivery is not
	// deduplicated.
	FaultConnectorNoDedupe = declare(fault.Fault{Name: "connector-no-dedupe",
		Doc:   "a redelivered provider delivery submits a second task (its dedupe key is still reported)",
		Fails: []string{"EXT-CONNECTOR-003"}})
	// Redeliveries are deduplicated (EXT-CONNECTOR-003 holds), and so is every
	// other delivery: the key does not come from the delivery id.
	FaultConnectorKeyIgnoresID = declare(fault.Fault{Name: "connector-key-ignores-delivery-id",
		Doc:   "the dedupe key is the connector and event kind, so distinct deliveries are deduplicated too",
		Fails: []string{"EXT-CONNECTOR-002"}})
	FaultConnectorTaskNoKey = declare(fault.Fault{Name: "connector-task-no-key",
		Doc:   "connector tasks carry no idempotency key",
		Warns: []string{"EXT-CONNECTOR-004"}})
)

// Connectors with delivery dedupe (EXT-CONNECTOR-001..004). Connectors are
// read-only over the API; the conform.connectors hook creates one
// (POST /v1/conform/connectors) and hands it provider deliveries
// (POST /v1/conform/connectors/{id}/deliveries). A delivery's dedupe key is
// derived from its provider delivery id ("<connector id>/<delivery id>"),
// so every redelivery has the same key: the first delivery of a key
// submits a task to the connector's target session (with the key as the
// task's idempotency key), a redelivery emits connector.delivery_deduped
// and submits nothing.

func (s *Server) listConnectors(c *call) (any, *apiError) {
	ws := c.q.Get("workspace_id")
	return listPage(s, c, s.st.mg.connectors, func(x *Connector) bool { return ws == "" || x.WorkspaceID == ws })
}

func (s *Server) getConnector(c *call) (any, *apiError) {
	if x, ok := s.st.mg.connectors.get(c.params[0]); ok && !s.opts.Faults.Has(FaultConnectorNotReadable) {
		return x, nil
	}
	return nil, notFound("connector", c.params[0])
}

// hookCreateConnector creates a connector: {provider, target_session_id,
// event_kinds?}. Its workspace is the target session's.
func (s *Server) hookCreateConnector(c *call) (*result, *apiError) {
	b := c.body
	provider, _, e := b.str("provider", true)
	if e != nil {
		return nil, e
	}
	sess, _, e := b.str("target_session_id", true)
	if e != nil {
		return nil, e
	}
	se, ok := s.st.sessions.get(sess)
	if !ok {
		e := notFound("session", sess)
		e.Param = "target_session_id"
		return nil, e
	}
	kinds, ok, e := b.strings("event_kinds")
	if e != nil {
		return nil, e
	}
	if !ok || len(kinds) == 0 {
		kinds = []string{"connector.delivery_received", "connector.delivery_deduped", "connector.normalized", "connector.task_submitted", "connector.failed"}
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	x := &Connector{Envelope: s.envelope("connector", "connector", meta), Provider: provider, WorkspaceID: se.WorkspaceID,
		Status: "ACTIVE", EventKinds: kinds, DedupePolicy: map[string]any{"key": "delivery_id", "scope": "connector"},
		TargetSessionID: ptr(se.ID)}
	return mgmtCreated(x, &mgmtCommit{Connectors: []*Connector{x}}), nil
}

// dedupeKey derives a delivery's dedupe key from its provider delivery id.
func (s *Server) dedupeKey(x *Connector, deliveryID, kind string) string {
	if s.opts.Faults.Has(FaultConnectorKeyIgnoresID) {
		return x.ID + "/" + kind // the fault: one key for every delivery of a kind
	}
	return scenario.DedupeKey(x.ID, deliveryID)
}

// hookDeliver receives one provider delivery: {delivery_id, event_kind?,
// payload?}. It answers 202 with what became of it:
// {object: "conform.connector_delivery", connector_id, delivery_id,
// dedupe_key, deduplicated, task_id}.
func (s *Server) hookDeliver(c *call) (*result, *apiError) {
	x, ok := s.st.mg.connectors.get(c.params[0])
	if !ok {
		return nil, notFound("connector", c.params[0])
	}
	b := c.body
	did, _, e := b.str("delivery_id", true)
	if e != nil {
		return nil, e
	}
	if n := utf8.RuneCountInString(did); n > 255 {
		return nil, badRequest("delivery_id", "field delivery_id: %d characters, want 1..255", n)
	}
	kind := "delivery"
	if k, ok, e := b.str("event_kind", false); e != nil {
		return nil, e
	} else if ok && k != "" {
		kind = k
	}
	payload, _, e := b.object("payload", false)
	if e != nil {
		return nil, e
	}
	if x.TargetSessionID == nil {
		return nil, conflict("connector %s has no target session", x.ID)
	}
	key := s.dedupeKey(x, did, kind)
	res := Pointer{"connector", x.ID}
	ev := func(name string, p map[string]any) *Event {
		p["delivery_id"], p["dedupe_key"], p["event_kind"] = did, key, kind
		return s.newEvent(name, res, p, x.WorkspaceID, *x.TargetSessionID, "", x.ID)
	}
	cm := &commit{Events: []*Event{ev("connector.delivery_received", map[string]any{})}}
	answer := map[string]any{"object": "conform.connector_delivery", "connector_id": x.ID, "delivery_id": did, "dedupe_key": key}
	if task, seen := s.st.mg.delivered[x.ID+"\x00"+key]; seen && !s.opts.Faults.Has(FaultConnectorNoDedupe) {
		cm.Events = append(cm.Events, ev("connector.delivery_deduped", map[string]any{"task_id": task}))
		answer["deduplicated"], answer["task_id"] = true, task
		return &result{status: http.StatusAccepted, body: answer, c: cm}, nil
	}
	// Normalize the delivery into a task of the target session.
	text := kind
	if payload.m != nil {
		if raw, err := json.Marshal(payload.m); err == nil {
			text += ": " + string(raw)
		}
	}
	idem := key
	if s.opts.Faults.Has(FaultConnectorTaskNoKey) {
		idem = ""
	}
	sub := &call{r: c.r, actor: x.ID, q: c.q, idem: idem, target: c.target, body: obj{m: map[string]any{
		"input":    map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}},
		"metadata": map[string]any{"conform.connector_id": x.ID, "conform.delivery_id": did},
	}}}
	cm.Events = append(cm.Events, ev("connector.normalized", map[string]any{}))
	r, e := s.submit(sub, *x.TargetSessionID, "")
	if e != nil {
		return nil, e
	}
	// The submit's own commit (the task, its event, its quota usage) with
	// the connector's events around it and the dedupe record.
	t := r.body.(*Task)
	sc := r.c
	sc.Events = append(append(cm.Events, sc.Events...), ev("connector.task_submitted", map[string]any{"task_id": t.ID}))
	if sc.Mgmt == nil {
		sc.Mgmt = &mgmtCommit{}
	}
	sc.Mgmt.Deliveries = append(sc.Mgmt.Deliveries, deliveryRecord{Connector: x.ID, Key: key, Task: t.ID})
	answer["deduplicated"], answer["task_id"] = false, t.ID
	return &result{status: http.StatusAccepted, body: answer, c: sc, after: r.after}, nil
}
