package wrapfault

import (
	"net/http"
	"net/http/httptest"
	"regexp"

	"github.com/harn-conform/conform/refharness/fault"
)

var (
	taskEventList = regexp.MustCompile(`^/v1/tasks/[^/]+/events$`)
	replayPath    = regexp.MustCompile(`^/v1/tasks/([^/]+)/replay$`)
)

// Replay surfaces on the wire: what the answers say of the replayed events
// and of the replay request, rather than how the Harness replays (those
// are its in-server faults, refharness/replay*.go).
func init() {
	// A range read of a replay task's events (after_event_id) serves its
	// replayed events unmarked; the whole list, SSE and WebSocket still
	// mark them.
	wireFault(fault.Fault{Name: "replay-range-unmarked",
		Doc:   "a task's event list read with after_event_id serves replayed events with replayed: false",
		Fails: []string{"RPLY-MARK-001"}},
		rewriting(func(r *http.Request, v any) {
			if r.Method != http.MethodGet || !taskEventList.MatchString(r.URL.Path) || r.URL.Query().Get("after_event_id") == "" {
				return
			}
			eachObject(v, "event", func(e map[string]any) {
				if e["replayed"] == true {
					e["replayed"] = false
				}
			})
		}))

	// Every replayed event is served under its original's id: two events
	// of the log, the source's and the replay's, share it. The ids
	// double as cursors, so paging on after a recycled id walks back into
	// the source's events.
	wireFault(fault.Fault{Name: "replay-recycles-ids",
		Doc:       "REST answers serve each replayed event under the id of the source event it replays (replay.original_event_id)",
		Fails:     []string{"RPLY-LOG-002"},
		Tolerated: []string{"RPLY-RANGE-001"},
		Why:       "an event list that holds a replay is paged on after the last id of each page: a recycled id is the source event's cursor, and the walk goes back and repeats events"},
		rewriting(func(r *http.Request, v any) {
			eachObject(v, "event", func(e map[string]any) {
				rp, _ := e["replay"].(map[string]any)
				if orig, _ := rp["original_event_id"].(string); orig != "" {
					e["id"] = orig
				}
			})
		}))

	// A legal reading of the replay cursor: a cursor into the source's
	// log (docs/interpretations.md#replay-cursor), the original event's id,
	// which the source's event list takes as after_event_id.
	wireVariant(fault.Variant{Name: "replay-cursor-source",
		Doc:   "replay.replay_cursor is a cursor into the source task's log (the original event's id) rather than the replayed event's own",
		Level: "replay",
		Met:   true},
		func(next http.Handler, env Env) (http.Handler, error) {
			return rewritingFunc(func(r *http.Request, v any) {
				eachObject(v, "event", func(e map[string]any) {
					rp, _ := e["replay"].(map[string]any)
					if orig, _ := rp["original_event_id"].(string); orig != "" && rp["replay_cursor"] != nil {
						rp["replay_cursor"] = orig
						env.Used()
					}
				})
			})(next), nil
		})

	// A replay of a task that does not exist is a server error.
	wireFault(fault.Fault{Name: "replay-unknown-task-500",
		Doc:       "POST /v1/tasks/{id}/replay of a task that does not exist answers 500 internal_error instead of 404",
		Fails:     []string{"RPLY-API-008"},
		Tolerated: []string{"RPLY-NEG-001"},
		Why:       "the hostile-input pass of Replay sends replays of hostile task ids, which name no task, and sees the same 500 (RPLY-NEG-001: answered below 500)"},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				m := replayPath.FindStringSubmatch(r.URL.Path)
				if r.Method != http.MethodPost || m == nil || rec.Code != http.StatusNotFound ||
					setupRequest(next, env, http.MethodGet, "/v1/tasks/"+m[1], "").Code != http.StatusNotFound {
					copyRecorded(w, rec, rec.Body.Bytes())
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				w.Write([]byte(`{"error":{"type":"server_error","code":"internal_error","message":"cannot load the source task","request_id":"req_conform_wrapfault"}}`))
			}), nil
		})
}
