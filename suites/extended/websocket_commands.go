package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The WebSocket profile, part 2: commands are their REST operations
// (docs/websocket.md section 4): user messages (EXT-WS-004), cancel
// (EXT-WS-005), truncate (EXT-WS-006) and idempotency keys (EXT-WS-015:
// the key is the client's MAY, EXT-WS-013; acting once on it is the server's
// MUST NOT of the Idempotency section, docs/interpretations.md#ws-idempotency-server).

// frameResponse presents a command's result or error frame as the REST
// answer it stands for, so the REST checks apply to it unchanged.
func frameResponse(l *wsLink, command string, f ws.Frame) *client.Response {
	var body any = f.Obj["result"]
	if f.Type == "error" {
		body = map[string]any{"error": f.Obj["error"]}
	}
	b, _ := json.Marshal(body)
	return &client.Response{Method: command + " frame on", URL: l.Path, Status: f.Status(), Body: b}
}

// announces matches an event frame announcing message id appended to a
// session: user.message (the profile's name for it) or
// session.message_appended (what the REST append emits; the commands are
// their REST operations), naming the message in its payload when the
// payload names one.
func announces(id string) func(ws.Frame) bool {
	return func(f ws.Frame) bool {
		k := f.EventKind()
		if f.Type != "event" || (k != "user.message" && k != "session.message_appended") {
			return false
		}
		p, _ := f.Member("event")["payload"].(map[string]any)
		m, named := p["message_id"]
		return !named || m == id
	}
}

// cancelAtEnd cancels task id over REST when the spec ends, so that a task
// left waiting by a failed check does not run on.
func cancelAtEnd(ctx context.Context, id string) {
	suite.AtSpecEnd(func() {
		_, _ = suite.Client().Do(context.WithoutCancel(ctx), client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/cancel",
			Body: map[string]any{"reason": "conform: spec ended"}})
	})
}

// wsTruncateShown truncates sess to its first keep turns over the
// WebSocket profile, with no verdict: where that works (a result frame
// with status 200), it says so, as evidence that the target offers
// transcript walk-back (docs/interpretations.md#offered-by-evidence); ""
// when the suite may not open a WebSocket, none opens, or the command did
// not work (the WebSocket specs judge those).
func wsTruncateShown(ctx context.Context, sess string, keep int) string {
	GinkgoHelper()
	if wsBlocked() != "" {
		return ""
	}
	l, err := wsConnect(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
	if err != nil {
		return ""
	}
	defer l.Close()
	f, why := l.command(ctx, map[string]any{"type": "truncate_session", "session_id": sess, "keep_first": keep, "reason": "conform: is walk-back offered?"})
	if why != "" || f.Type != ws.TypeResult || f.Status() != http.StatusOK {
		return ""
	}
	return fmt.Sprintf("the WebSocket truncate_session of the same session (on GET %s) answered a result with status 200", l.Path)
}

var _ = Describe("WebSocket commands (harn-ws.v1)", func() {
	It("appends a user_message frame to the Session: a 201 result with the Message, listed by the message list and announced by an event", suite.Req(reqWSMessage), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		text := "conform ws message " + suite.Key("m")
		f, why := l.command(ctx, map[string]any{"type": "user_message", "session_id": sess, "message": xText(text)})
		if why != "" {
			suite.Must(reqWSMessage, fmt.Errorf("%s", why))
		}
		msg, err := resultOf(f, "user_message", http.StatusCreated)
		suite.Must(reqWSMessage, err)
		id := xID(msg)
		if id == "" || msg["object"] != "message" {
			suite.Check(reqWSMessage, fmt.Errorf("user_message: the result is not a Message (object %v, id %v): %s", msg["object"], msg["id"], bounded(f.Raw)))
		}
		if ms, ok := messagesOf(ctx, reqWSMessage, sess); ok {
			i := slices.IndexFunc(ms, func(m map[string]any) bool { return xID(m) == id })
			switch {
			case i < 0:
				suite.Check(reqWSMessage, fmt.Errorf("GET /v1/sessions/%s/messages does not list message %q, which the user_message frame's result made (listed: %v)", sess, id, xIDs(ms)))
			case texts(ms[i : i+1])[0] != text:
				suite.Check(reqWSMessage, fmt.Errorf("GET /v1/sessions/%s/messages lists message %s with text %q, want the text sent, %q", sess, id, texts(ms[i : i+1])[0], text))
			}
		}
		ev, why := l.await(ctx, wsStream(), 0, "user.message (or session.message_appended) event", announces(id))
		if why != "" {
			suite.Check(reqWSMessage, fmt.Errorf("message %s appended by a user_message frame: %s", id, why))
			return
		}
		if !slices.Contains(eventIDs(sessionEvents(ctx, sess)), ev.Str("event_id")) {
			suite.Check(reqWSMessage, fmt.Errorf("%s announced message %s, but GET /v1/sessions/%s/events does not list it", ev, id, sess))
		}
	})

	It("cancels a Task with a cancel_task frame as a REST cancel would: a running task ends CANCELED, a finished one is refused and unchanged", suite.Req(reqWSCancel), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})

		// A finished task: the frame answers what REST answers.
		done := xSubmit(ctx, sess, nil)
		xTerminal(ctx, done)
		rest := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(done) + "/cancel", Body: map[string]any{"reason": "conform ws"}}, reqWSCancel)
		// What the task is after the REST cancel (Core judges that one).
		before := xRead(ctx, "reading the Task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(done), nil)
		f, why := l.command(ctx, map[string]any{"type": "cancel_task", "task_id": done, "reason": "conform ws"})
		if why != "" {
			suite.Check(reqWSCancel, fmt.Errorf("%s", why))
		} else {
			suite.Check(reqWSCancel, sameAnswer(frameResponse(l, "cancel_task", f), rest, "a cancel_task frame for task "+done+", which is "+xStr(before, "status")))
		}
		if after := xRead(ctx, "reading the Task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(done), nil); xStr(after, "status") != xStr(before, "status") {
			suite.Check(reqWSCancel, fmt.Errorf("task %s was %v; after a cancel_task frame it is %v, want it unchanged", done, before["status"], after["status"]))
		}

		// A running task: CANCELED, with task.canceled on the stream.
		xHook("no task can be kept running to cancel (the cancel of a finished task was checked)")
		long := xSubmit(ctx, sess, nil, xStep("work", "ms", 600000))
		cancelAtEnd(ctx, long)
		if m, ok := xAwaitStatus(ctx, long, check.Working); !ok {
			suite.Unverified(fmt.Sprintf("task %s with a 600 s work step is %v, not WORKING", long, m["status"]), "run the work step as docs/scenarios.md says")
		}
		after := l.Len()
		f, why = l.command(ctx, map[string]any{"type": "cancel_task", "task_id": long, "reason": "conform ws"})
		if why != "" {
			suite.Must(reqWSCancel, fmt.Errorf("%s", why))
		}
		// The answer is the Task as POST /v1/tasks/{id}/cancel answers it;
		// cancellation is cooperative (as Core reads it: suites/core
		// cancel.go), so the task may still read WORKING in it and end
		// CANCELED a moment later. Ten minutes of work leave nothing but
		// the cancel to end it within --task-timeout.
		task, err := resultOf(f, "cancel_task of a WORKING task", http.StatusOK)
		if suite.Check(reqWSCancel, err) && xID(task) != long {
			suite.Check(reqWSCancel, fmt.Errorf("cancel_task of WORKING task %s: the result is task %v, want that Task (as POST /v1/tasks/{id}/cancel answers)", long, task["id"]))
		}
		if m, _ := xAwait(ctx, long, check.Terminal); xStr(m, "status") != check.Canceled {
			suite.Check(reqWSCancel, fmt.Errorf("task %s, canceled by a cancel_task frame answered %v, reads status %v after up to --task-timeout (%s), want CANCELED: its work cannot have finished",
				long, task["status"], m["status"], suite.Env().Config.Timeouts.Task))
		}
		if _, why := l.await(ctx, wsStream(), after, "task.canceled event", eventOf(long, "task.canceled")); why != "" {
			suite.Check(reqWSCancel, fmt.Errorf("task %s, canceled by a cancel_task frame: %s", long, why))
		}
	})

	It("truncates a Session with a truncate_session frame as the REST truncate does: the first N turns kept, session.truncated emitted", suite.Req(reqWSTruncate), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		sent := xAppend(ctx, sess, 4, "ws turn")
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		after := l.Len()
		f, why := l.command(ctx, map[string]any{"type": "truncate_session", "session_id": sess, "keep_first": 2, "reason": "conform ws walk-back"})
		if why != "" {
			suite.Must(reqWSTruncate, fmt.Errorf("%s", why))
		}
		suite.Check(reqWSTruncate, judgeTruncate(frameResponse(l, "truncate_session", f), sess, 2, 2))
		if ms, ok := messagesOf(ctx, reqWSTruncate, sess); ok && !slices.Equal(sorted(xIDs(ms)), sorted(sent[:2])) {
			suite.Check(reqWSTruncate, fmt.Errorf("after a truncate_session frame with keep_first 2, GET /v1/sessions/%s/messages lists %v, want the first two messages %v", sess, xIDs(ms), sent[:2]))
		}
		if _, why := l.await(ctx, wsStream(), after, "session.truncated event", eventOf("", "session.truncated")); why != "" {
			suite.Check(reqWSTruncate, fmt.Errorf("session %s, truncated by a truncate_session frame: %s", sess, why))
		}
	})

	It("acts once on a command repeated with the same idempotency_key, on any connection or over REST, and refuses the key with another body (409 idempotency_key_reused)", suite.Req(reqWSIdem), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		key := suite.Key("conform-ws-idem")
		text := "conform ws idempotent " + key
		cmd := func() map[string]any {
			return map[string]any{"type": "user_message", "session_id": sess, "message": xText(text), "idempotency_key": key}
		}
		first, why := l.command(ctx, cmd())
		if why != "" {
			suite.Check(reqWSIdem, fmt.Errorf("%s", why))
			return
		}
		if first.Type == "error" && strings.Contains(fmt.Sprint(first.Member("error")["param"]), "idempotency_key") {
			suite.Check(reqWSIdem, fmt.Errorf("a user_message frame with idempotency_key %q is refused: %s", key, bounded(first.Raw)))
			return
		}
		a, err := resultOf(first, "user_message", http.StatusCreated)
		if err != nil {
			suite.Unverified(fmt.Sprintf("a user_message frame with an idempotency_key: %v", err), "make user_message frames work (EXT-WS-004); this spec retries one after that")
		}
		id := xID(a)
		if ms, ok := messagesOf(ctx, reqWSIdem, sess); ok && !slices.Contains(xIDs(ms), id) {
			suite.Unverified(fmt.Sprintf("the user_message frame's message %q is not listed by GET /v1/sessions/%s/messages, so whether a repeat acts again cannot be told", id, sess),
				"make user_message frames append their message (EXT-WS-004); this spec repeats one after that")
		}
		same := func(what string, f ws.Frame, why string) {
			GinkgoHelper()
			if why != "" {
				suite.Check(reqWSIdem, fmt.Errorf("%s: %s", what, why))
				return
			}
			if f.Type != "result" || f.Status() != first.Status() || xID(f.Member("result")) != id {
				suite.Check(reqWSIdem, fmt.Errorf("%s with the same idempotency_key %q and body: answered %s %s, want a result with the first answer's status %d and message %q",
					what, key, f, bounded(f.Raw), first.Status(), id))
			}
		}
		f, why := l.command(ctx, cmd())
		same("the user_message repeated on the same connection", f, why)
		other := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByAuthFrame})
		f, why = other.command(ctx, cmd())
		same("the user_message repeated on another connection", f, why)
		// Keys are shared with REST: the same write retried over REST.
		rest := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages", Body: map[string]any{"message": xText(text)}, IdempotencyKey: key}, reqWSIdem)
		if m, err := rest.Object(); rest.Status/100 != 2 || err != nil || xID(m) != id {
			suite.Check(reqWSIdem, fmt.Errorf("the user_message retried over REST (POST /v1/sessions/%s/messages) with Idempotency-Key %q and the same message: %s answered message %q%s, want the frame's message %q (a command's key is its REST operation's, docs/websocket.md section 5)",
				sess, key, rest, xID(m), xHint(rest), id))
		}
		// The same key with another body.
		diff := cmd()
		diff["message"] = xText(text + " (changed)")
		f, why = l.command(ctx, diff)
		if why != "" {
			suite.Check(reqWSIdem, fmt.Errorf("a user_message with idempotency_key %q and another message: %s", key, why))
		} else if f.Type != "error" || f.Status() != http.StatusConflict || f.ErrorCode() != "idempotency_key_reused" {
			suite.Check(reqWSIdem, fmt.Errorf("a user_message with idempotency_key %q and another message: answered %s %s, want an error frame 409 idempotency_key_reused", key, f, bounded(f.Raw)))
		}
		// The connection stays open after a command error.
		if _, why := l.command(ctx, map[string]any{"type": "user_message", "session_id": sess, "message": xText("conform ws after the conflict " + key)}); why != "" {
			suite.Check(reqWSIdem, fmt.Errorf("after the 409 error frame the connection must stay open: a further user_message %s", why))
		}
		if ms, ok := messagesOf(ctx, reqWSIdem, sess); ok {
			var n, changed int
			for _, t := range texts(ms) {
				n += b2i(t == text)
				changed += b2i(t == text+" (changed)")
			}
			if n != 1 || changed != 0 {
				suite.Check(reqWSIdem, fmt.Errorf("GET /v1/sessions/%s/messages holds %d messages with the text sent under idempotency_key %q (want 1: the repeats act once) and %d with the changed text (want 0: a reused key changes nothing)", sess, n, key, changed))
			}
		}
	})
})

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sameAnswer wants a command's answer to be its REST operation's: the same
// status and, for an error, the same error code.
func sameAnswer(frame, rest *client.Response, what string) error {
	if frame.Status != rest.Status {
		return fmt.Errorf("%s: answered status %d, but the same operation over REST answered %s%s (a command is its REST operation)", what, frame.Status, rest, xHint(rest))
	}
	if rest.Status >= 400 {
		fe, ferr := check.Envelope(frame)
		re, rerr := check.Envelope(rest)
		if ferr != nil {
			return fmt.Errorf("%s: %w", what, ferr)
		}
		if rerr == nil && fe.Code != re.Code {
			return fmt.Errorf("%s: answered error %d %s, but REST answered %s with error %s", what, frame.Status, fe.Code, rest, re.Code)
		}
	}
	return nil
}
