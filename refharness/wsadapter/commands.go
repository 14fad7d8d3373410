package wsadapter

import (
	"context"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness"
)

// dispatch acts on client frames after ready, one at a time, until the
// connection closes: commands become their REST operations (section 4),
// resume frames go to the deliverer, pings are answered.
func (c *conn) dispatch() {
	for {
		var m inbound
		var ok bool
		select {
		case m, ok = <-c.in:
			if !ok {
				return
			}
		case <-c.done:
			c.drain()
			return
		}
		f, ok := c.framing(m, c.a.opts.MaxFrameBytes)
		if !ok {
			c.drain()
			return
		}
		c.handle(f)
	}
}

// handle acts on one well-formed client frame.
func (c *conn) handle(f frame) {
	typ, isStr := f["type"].(string)
	if !isStr {
		c.sendError(f.replyTo(), invalid("/type", "member type: got %s, want a string naming a client frame type", jsonv.Kind(f["type"])))
		return
	}
	id, idOK := f.frameID()
	if !idOK {
		c.sendError(f.replyTo(), invalid("/id", "member id must be a string of 1 to 128 characters"))
		return
	}
	switch typ {
	case "ping":
		if id == "" {
			c.sendError(nil, invalid("/id", "a ping needs an id for its pong"))
			return
		}
		b, _ := json.Marshal(map[string]any{"type": "pong", "in_reply_to": id, "sent_at": c.a.srv.Now()})
		c.send(b)
		return
	case "pong":
		return // an answer to a server ping: the connection is alive
	case "auth":
		c.sendError(f.replyTo(), invalid("/type", "the connection is already authenticated"))
		return
	}
	if _, known := commands[typ]; !known && typ != "resume" {
		c.sendError(f.replyTo(), invalid("/type", "unknown frame type %q: want a client frame of %s", typ, Profile))
		return
	}
	if id == "" {
		c.sendError(nil, invalid("/id", "member id is required on a %s frame", typ))
		return
	}
	if typ == "resume" {
		if _, present := f["last_event_id"]; !present {
			c.sendError(&id, invalid("/last_event_id", "member last_event_id is required (null: from the start)"))
			return
		}
		cur, e := f.cursor("last_event_id")
		if e != nil {
			c.sendError(&id, e)
			return
		}
		select {
		case c.resume <- runReq{cursor: cur, param: "/last_event_id", frameID: &id}:
		case <-c.done:
		}
		return
	}
	key, e := idempotencyKey(f)
	if e != nil {
		c.sendError(&id, e)
		return
	}
	cmd, e := commands[typ](c, f)
	if e != nil {
		c.sendError(&id, e)
		return
	}
	cmd.IdempotencyKey = key
	if c.a.srv.Fault(refharness.FaultWSIdempotencyIgnored) {
		cmd.IdempotencyKey = "" // the fault: a repeated command acts again
	}
	ctx, cancel := context.WithTimeout(c.ctx, commandTimeout)
	defer cancel()
	rep := c.exec(ctx, typ, f, cmd)
	if rep.Status >= 200 && rep.Status < 300 {
		c.send(resultFrame(id, rep.Status, rep.Body))
		return
	}
	c.write(errorFrame(&id, rep.Status, rep.Body), false)
}

// idempotencyKey reads the optional idempotency_key (section 5).
func idempotencyKey(f frame) (string, *refharness.Error) {
	v, ok := f["idempotency_key"]
	if !ok {
		return "", nil
	}
	s, isStr := v.(string)
	if n := utf8.RuneCountInString(s); !isStr || n < 1 || n > 255 {
		return "", invalid("/idempotency_key", "member idempotency_key must be a string of 1 to 255 characters")
	}
	return s, nil
}

// commands maps each command frame to its REST operation: the path from
// the ids it names (which must be the connection's resource or belong to
// it: else 404) and the REST body from the rest of its members. The body
// is what idempotency compares, so a command and its REST equivalent
// with the same key are the same write (section 5).
var commands = map[string]func(c *conn, f frame) (refharness.Command, *refharness.Error){
	"user_message": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		sess, e := c.session(f)
		if e != nil {
			return refharness.Command{}, e
		}
		if e := f.need("message"); e != nil {
			return refharness.Command{}, e
		}
		return post("/v1/sessions/"+sess+"/messages", map[string]any{"message": f["message"]}), nil
	},
	"cancel_task": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		task, e := c.task(f)
		if e != nil {
			return refharness.Command{}, e
		}
		body := map[string]any{}
		if v, ok := f["reason"]; ok {
			body["reason"] = v
		}
		return post("/v1/tasks/"+task+"/cancel", body), nil
	},
	"truncate_session": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		sess, e := c.session(f)
		if e != nil {
			return refharness.Command{}, e
		}
		if e := f.need("keep_first"); e != nil {
			return refharness.Command{}, e
		}
		body := map[string]any{"keep_first": f["keep_first"]}
		if v, ok := f["reason"]; ok {
			body["reason"] = v
		}
		return post("/v1/sessions/"+sess+"/truncate", body), nil
	},
	"input_response": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		task, ref, e := c.answering(f, "input_request")
		if e != nil {
			return refharness.Command{}, e
		}
		if e := f.need("message"); e != nil {
			return refharness.Command{}, e
		}
		cmd := post("/v1/tasks/"+task+"/messages", map[string]any{"kind": "input", "message": f["message"]})
		cmd.Answers = ref
		return cmd, nil
	},
	"authorization_response": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		return c.decision(f, false)
	},
	"approval_response": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		return c.decision(f, true)
	},
	"tool_result": func(c *conn, f frame) (refharness.Command, *refharness.Error) {
		// The reference Harness runs its tools itself and sends no
		// tool_request, so no tool_result names a request it knows.
		if _, e := c.task(f); e != nil {
			return refharness.Command{}, e
		}
		rid, e := f.str("request_id", true)
		if e != nil {
			return refharness.Command{}, e
		}
		return refharness.Command{}, refharness.NewError(http.StatusNotFound, "resource_not_found", "/request_id",
			"no tool request "+rid+": this server sends no tool_request frames (its tools run in the Harness)", nil)
	},
}

func post(path string, body map[string]any) refharness.Command {
	b, _ := json.Marshal(body) // values decoded from JSON marshal back
	return refharness.Command{Method: http.MethodPost, Path: path, Body: b}
}

// session reads session_id, which must be the stream's Session (or its
// Task's).
func (c *conn) session(f frame) (string, *refharness.Error) {
	id, e := f.str("session_id", true)
	if e != nil {
		return "", e
	}
	if !c.st.CoversSession(id) {
		return "", outside("session", id, "/session_id", c.st.Resource())
	}
	return id, nil
}

// task reads task_id, which must be the stream's Task (or one of its
// Session's).
func (c *conn) task(f frame) (string, *refharness.Error) {
	id, e := f.str("task_id", true)
	if e != nil {
		return "", e
	}
	if !c.st.CoversTask(id) {
		return "", outside("task", id, "/task_id", c.st.Resource())
	}
	return id, nil
}

func outside(kind, id, param string, res refharness.Resource) *refharness.Error {
	return refharness.NewError(http.StatusNotFound, "resource_not_found", param,
		kind+" "+id+" is not "+res.Object+" "+res.ID+" of this connection nor belongs to it", nil)
}

// answering reads the task_id and request_id of an answer to a request of
// one of kinds.
func (c *conn) answering(f frame, kinds ...string) (string, *refharness.RequestRef, *refharness.Error) {
	task, e := c.task(f)
	if e != nil {
		return "", nil, e
	}
	rid, e := f.str("request_id", true)
	if e != nil {
		return "", nil, e
	}
	return task, &refharness.RequestRef{Kinds: kinds, TaskID: task, ID: rid, Param: "/request_id"}, nil
}

// decision maps authorization_response and approval_response (either
// answers either kind of request: both are the same decision): the
// permission request's respond operation, or (a wait that opened no
// PermissionRequest) a tool_confirmation message of the task.
func (c *conn) decision(f frame, approval bool) (refharness.Command, *refharness.Error) {
	task, ref, e := c.answering(f, "authorization_request", "approval_request")
	if e != nil {
		return refharness.Command{}, e
	}
	approved, e := f.boolean("approved")
	if e != nil {
		return refharness.Command{}, e
	}
	if approval && approved && c.a.srv.Fault(refharness.FaultWSApprovalAnswerIgnored) {
		approved = false // the fault: answered, and the tool call is denied
	}
	body := map[string]any{"approved": approved}
	if v, ok := f["reason"]; ok && v != nil {
		body["reason"] = v
	}
	if v, ok := f["answer"]; ok {
		body["answer"] = v
	}
	if v, ok := f["input"]; ok && approved && approval {
		// A modified approval: the reference agent's tools run with
		// their scenario's input, so the replacement is recorded with
		// the decision (its answer) rather than run.
		body["answer"] = map[string]any{"input": v}
	}
	var cmd refharness.Command
	if c.st.IsPermissionRequest(ref.ID) {
		cmd = post("/v1/permission-requests/"+ref.ID+"/respond", body)
	} else {
		value := map[string]any{"decision": "approve", "approved": approved}
		if !approved {
			value["decision"] = "deny"
		}
		for _, k := range []string{"reason", "answer"} {
			if v, ok := body[k]; ok {
				value[k] = v
			}
		}
		cmd = post("/v1/tasks/"+task+"/messages", map[string]any{"kind": "tool_confirmation",
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "json", "value": value, "visibility": "public"}}}})
	}
	cmd.Answers = ref
	return cmd, nil
}

// exec runs a command's REST operation, or the WS fault that replaces it.
func (c *conn) exec(ctx context.Context, typ string, f frame, cmd refharness.Command) refharness.Reply {
	switch {
	case typ == "user_message" && c.a.srv.Fault(refharness.FaultWSMessageNotAppended):
		return c.fakeMessage(f)
	case typ == "cancel_task" && c.a.srv.Fault(refharness.FaultWSCancelIgnored):
		task, _ := f["task_id"].(string)
		rep := c.st.Exec(ctx, refharness.Command{Method: http.MethodGet, Path: "/v1/tasks/" + task})
		return rep // 200 with the task, which goes on running
	case typ == "truncate_session" && c.a.srv.Fault(refharness.FaultWSTruncateKeepsAll):
		return c.fakeTruncate(ctx, f)
	}
	return c.st.Exec(ctx, cmd)
}

// fakeMessage is FaultWSMessageNotAppended's answer: a Message-shaped 201
// for a message that is never stored.
func (c *conn) fakeMessage(f frame) refharness.Reply {
	sess, _ := f["session_id"].(string)
	msg, _ := f["message"].(map[string]any)
	now := c.a.srv.Now()
	b, _ := json.Marshal(map[string]any{"id": c.a.srv.NewID("msg"), "object": "message", "created_at": now, "updated_at": now,
		"metadata": map[string]any{}, "session_id": sess, "task_id": nil, "role": msg["role"], "parts": msg["parts"]})
	return refharness.Reply{Status: http.StatusCreated, Body: b}
}

// fakeTruncate is FaultWSTruncateKeepsAll's answer: a truncate result
// whose counts say the session was cut, while every turn stays.
func (c *conn) fakeTruncate(ctx context.Context, f frame) refharness.Reply {
	sess, _ := f["session_id"].(string)
	rep := c.st.Exec(ctx, refharness.Command{Method: http.MethodGet, Path: "/v1/sessions/" + sess})
	if rep.Status != http.StatusOK {
		return rep
	}
	var se map[string]any
	if json.Unmarshal(rep.Body, &se) != nil {
		return rep
	}
	keep, _ := f["keep_first"].(json.Number)
	k, _ := keep.Int64()
	total := int64(0)
	if tr, ok := se["transcript"].(map[string]any); ok {
		if n, ok := tr["message_count"].(float64); ok {
			total = int64(n)
		}
	}
	kept := min(k, total)
	b, _ := json.Marshal(map[string]any{"object": "session.truncate_result", "session_id": sess, "kept_turn_count": kept,
		"removed_turn_count": total - kept, "new_tip_turn_id": nil, "session": se})
	return refharness.Reply{Status: http.StatusOK, Body: b}
}
