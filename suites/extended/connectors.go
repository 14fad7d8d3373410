package extended

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Connectors and delivery dedupe (EXT-CONNECTOR-001..004). A client cannot
// make a provider deliver: the conform.connectors hook
// (docs/scenarios.md#resource-hooks) creates a connector aimed at a session
// of the suite's and hands it deliveries, whose connector.* events land on
// that session's stream.

const (
	reqConnector       = "EXT-CONNECTOR-001" // list, get, fields
	reqConnectorKey    = "EXT-CONNECTOR-002" // a stable dedupe key derived from the delivery id
	reqConnectorDedupe = "EXT-CONNECTOR-003" // a redelivery is deduplicated: event, no second task
	reqConnectorIdem   = "EXT-CONNECTOR-004" // SHOULD: the delivery id reaches the task's idempotency key
)

var connectorStatuses = []string{"ACTIVE", "PAUSED", "FAILED", "DISABLED"}

var _ = Describe("Connectors", func() {
	It("lists Connectors and reads each by id, with provider, workspace, status and event kinds", suite.Req(reqConnector), func(ctx SpecContext) {
		created := ""
		if _, ok := hooked(capConnectors); ok {
			ws, err := suite.Workspace(ctx, reqConnector)
			if err != nil {
				suite.Unverified(err.Error(), suite.RemedyWorkspace)
			}
			created = hookConnector(ctx, newSession(ctx, ws, reqConnector), reqConnector)
		}
		readCollection(ctx, reqConnector, "connector", "Connector", "/v1/connectors", capConnectors, created, connectorFields)
	})

	It("deduplicates a redelivered provider delivery by a key derived from its delivery id", suite.Req(reqConnectorKey, reqConnectorDedupe, reqConnectorIdem), func(ctx SpecContext) {
		needHooks(capConnectors)
		ws, err := suite.Workspace(ctx, reqConnectorDedupe)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		sess := newSession(ctx, ws, reqConnectorDedupe)
		conn := hookConnector(ctx, sess, reqConnectorDedupe)
		d1, d2 := suite.Key("delivery"), suite.Key("delivery")
		sessionTasks := func() []string {
			items, _, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/tasks", nil, reqConnectorDedupe)
			suite.Must(reqConnectorDedupe, err)
			return ids(items)
		}

		// The first delivery: one task.
		deliver(ctx, conn, d1, reqConnectorDedupe)
		var tasks []string
		err = poll(ctx, suite.Env().Config.Timeouts.Task, func() (bool, error) {
			tasks = sessionTasks()
			return len(tasks) >= 1, nil
		})
		if pollErr(ctx, err, "/v1/sessions/"+sess+"/tasks", reqConnectorDedupe) != nil || len(tasks) != 1 {
			suite.Unverified(fmt.Sprintf("delivery %s to connector %s submitted %d tasks to its target session %s within --task-timeout %s, want 1",
				d1, conn, len(tasks), sess, suite.Env().Config.Timeouts.Task), "have the "+capConnectors+" hook's connector submit a task to its target session for each new delivery (docs/scenarios.md#resource-hooks)")
		}
		task := tasks[0]
		if waitTerminal(ctx, task, reqConnectorDedupe) == nil {
			suite.Unverified(fmt.Sprintf("task %s did not end within --task-timeout %s", task, suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
		}
		before := transcript(ctx, sess)

		// The same delivery again: deduplicated, visibly, and nothing new.
		deliver(ctx, conn, d1, reqConnectorDedupe)
		var evs []map[string]any
		err = poll(ctx, suite.Env().Config.Timeouts.Task, func() (bool, error) {
			evs = connectorEvents(ctx, sess, conn)
			// Done when it is deduplicated, or plainly was not (submitted again).
			return len(withKind(evs, "connector.delivery_deduped", d1)) > 0 || len(withKind(evs, "connector.task_submitted", d1)) > 1, nil
		})
		if pollErr(ctx, err, "/v1/sessions/"+sess+"/events", reqConnectorDedupe) != nil || len(withKind(evs, "connector.delivery_deduped", d1)) == 0 {
			suite.Check(reqConnectorDedupe, fmt.Errorf("redelivering %s to connector %s produced no connector.delivery_deduped event on session %s within --task-timeout %s (connector events: %v)",
				d1, conn, sess, suite.Env().Config.Timeouts.Task, eventKinds(evs)))
		}
		if n := len(withKind(evs, "connector.task_submitted", d1)); n != 1 {
			suite.Check(reqConnectorDedupe, fmt.Errorf("delivery %s, delivered twice, has %d connector.task_submitted events, want 1", d1, n))
		}
		if got := sessionTasks(); len(got) != 1 {
			suite.Check(reqConnectorDedupe, fmt.Errorf("delivery %s, delivered twice, left session %s with tasks %v, want only %s", d1, sess, got, task))
		}
		suite.Check(reqConnectorDedupe, sameTranscript("redelivering "+d1, before, transcript(ctx, sess), "\x00"))

		// A different delivery: its own key, its own task.
		deliver(ctx, conn, d2, reqConnectorKey)
		err = poll(ctx, suite.Env().Config.Timeouts.Task, func() (bool, error) {
			tasks = sessionTasks()
			// Done when d2 has its task, or was (wrongly) deduplicated.
			return len(tasks) >= 2 || len(withKind(connectorEvents(ctx, sess, conn), "connector.delivery_deduped", d2)) > 0, nil
		})
		if pollErr(ctx, err, "/v1/sessions/"+sess+"/tasks", reqConnectorKey) != nil || len(tasks) < 2 {
			suite.Check(reqConnectorKey, fmt.Errorf("delivery %s, a new delivery id after %s, submitted no task of its own within --task-timeout %s (session tasks %v): the dedupe key must come from the delivery id, not stand for every delivery",
				d2, d1, suite.Env().Config.Timeouts.Task, tasks))
		}
		evs = connectorEvents(ctx, sess, conn)
		suite.Check(reqConnectorKey, stableKeys(evs, d1, d2))

		// SHOULD: the delivery reaches the task as its idempotency key.
		if t, ok := submittedEvent(ctx, task); ok {
			key, _ := t["idempotency_key"].(string)
			dk := keyOf(withKind(evs, "connector.task_submitted", d1))
			if key == "" || (key != dk && !strings.Contains(key, d1)) {
				suite.Should(reqConnectorIdem, fmt.Errorf("task %s, submitted for delivery %s, has idempotency_key %s on its task.submitted event: want the delivery id or the dedupe key %q, so that no redelivery can duplicate it",
					task, d1, jsonText(t["idempotency_key"]), dk))
			}
		} else {
			suite.NothingToCheck(reqConnectorIdem, fmt.Sprintf("task %s has no task.submitted event to read its idempotency key from", task),
				"emit task.submitted with the task's idempotency_key (Event taxonomy)")
		}
	})
})

// hookConnector creates a connector aimed at sess through the hook.
func hookConnector(ctx context.Context, sess, req string) string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/conform/connectors", Probe: hookProbe(capConnectors),
		Body: map[string]any{"provider": "conform-test", "target_session_id": sess}}, req)
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || id == "" {
		suite.Must(req, fmt.Errorf("%s: the %s hook did not create a connector (status %d, want 201 with an id)", resp, capConnectors, resp.Status))
	}
	return id
}

// deliver hands the connector one provider delivery through the hook.
func deliver(ctx context.Context, conn, delivery, req string) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/conform/connectors/" + client.Seg(conn) + "/deliveries", Probe: hookProbe(capConnectors),
		Body: map[string]any{"delivery_id": delivery, "event_kind": "conform.ping", "payload": map[string]any{"run": suite.Env().RunID}}}, req)
	if resp.Status/100 != 2 {
		suite.Must(req, fmt.Errorf("%s: the %s hook refused delivery %s (status %d, want 202)", resp, capConnectors, delivery, resp.Status))
	}
}

// connectorEvents reads the connector's events on its target session.
func connectorEvents(ctx context.Context, sess, conn string) []map[string]any {
	GinkgoHelper()
	evs, _, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/events", nil, reqConnectorDedupe)
	suite.Must(reqConnectorDedupe, err)
	return slices.DeleteFunc(evs, func(e map[string]any) bool {
		k, _ := e["event"].(string)
		return !strings.HasPrefix(k, "connector.")
	})
}

// withKind is the events of kind about delivery.
func withKind(evs []map[string]any, kind, delivery string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["event"] == kind && payload(e)["delivery_id"] == delivery {
			out = append(out, e)
		}
	}
	return out
}

// keyOf is the dedupe key the events name ("" when none does).
func keyOf(evs []map[string]any) string {
	for _, e := range evs {
		if k, _ := payload(e)["dedupe_key"].(string); k != "" {
			return k
		}
	}
	return ""
}

// stableKeys checks the dedupe keys the connector events report: every
// event about d1 (both deliveries of it) names the same non-empty key,
// and d2's key is another.
func stableKeys(evs []map[string]any, d1, d2 string) error {
	var k1 []string
	for _, e := range evs {
		if payload(e)["delivery_id"] == d1 {
			k, _ := payload(e)["dedupe_key"].(string)
			k1 = append(k1, k)
		}
	}
	if len(k1) == 0 {
		return fmt.Errorf("no connector event names delivery %s in payload.delivery_id (docs/scenarios.md#resource-hooks), so its dedupe key cannot be read", d1)
	}
	for _, k := range k1 {
		if k == "" || k != k1[0] {
			return fmt.Errorf("the connector events of delivery %s (delivered twice) name dedupe keys %q: want one stable, non-empty key for every redelivery", d1, k1)
		}
	}
	var k2 []string
	for _, e := range evs {
		if payload(e)["delivery_id"] == d2 {
			k, _ := payload(e)["dedupe_key"].(string)
			k2 = append(k2, k)
		}
	}
	if slices.Contains(k2, k1[0]) {
		return fmt.Errorf("deliveries %s and %s share the dedupe key %q: the key must be derived from the delivery id", d1, d2, k1[0])
	}
	return nil
}

// submittedEvent is the task's task.submitted event.
func submittedEvent(ctx context.Context, task string) (map[string]any, bool) {
	GinkgoHelper()
	evs, _, err := listAll(ctx, "/v1/tasks/"+client.Seg(task)+"/events", nil, reqConnectorIdem)
	if err != nil {
		return nil, false
	}
	for _, e := range evs {
		if e["event"] == "task.submitted" {
			return e, true
		}
	}
	return nil, false
}

// connectorFields checks a Connector's members.
func connectorFields(c map[string]any) error {
	var errs []string
	if c["object"] != "connector" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"connector\"", jsonText(c["object"])))
	}
	for _, k := range []string{"provider", "workspace_id"} {
		if s, _ := c[k].(string); s == "" {
			errs = append(errs, fmt.Sprintf("%s = %s, want a non-empty string", k, jsonText(c[k])))
		}
	}
	if s, _ := c["status"].(string); !slices.Contains(connectorStatuses, s) {
		errs = append(errs, fmt.Sprintf("status = %s, want one of %s", jsonText(c["status"]), strings.Join(connectorStatuses, ", ")))
	}
	kinds, ok := c["event_kinds"].([]any)
	for _, k := range kinds {
		if _, isStr := k.(string); !isStr {
			ok = false
		}
	}
	if !ok {
		errs = append(errs, fmt.Sprintf("event_kinds = %s, want the normalized event kinds (strings)", jsonText(c["event_kinds"])))
	}
	if len(errs) > 0 {
		return fmt.Errorf("connector %v: %s", c["id"], strings.Join(errs, "; "))
	}
	return nil
}
