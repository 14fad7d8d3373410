package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Privacy and redaction (EXT-PRIV-001..004; docs/interpretations.md#privacy-audiences,
// #privacy-secrets, #hidden-reasoning, #redaction-trace). The suite plants
// canaries — run-unique strings — in content of each class and looks for
// them everywhere it reads: receipt_only content in no read, list, event
// or stream; internal content only in parts that stay marked internal,
// never in an event (events mark no class); secrets, the run's own
// credentials and hidden reasoning in no public part and no event. What
// the OpenAPI cannot make an agent do (say something internal, think,
// redact) is driven by the scenario contract's emit visibility, reason
// and redact steps (docs/scenarios.md#steps); without the hook those
// checks are unverified.

const (
	reqPrivClasses   = "EXT-PRIV-001" // parts and artifacts keep their class
	reqPrivSecrets   = "EXT-PRIV-002" // no secret in public parts or events
	reqPrivReasoning = "EXT-PRIV-003" // no hidden reasoning in public parts or events
	reqPrivRedaction = "EXT-PRIV-004" // redaction leaves a trace
)

var visibilities = []string{"public", "internal", "receipt_only"}

// privCanary is a run-unique marker (not a secret: it is redacted from the
// run's output anyway, so a report never repeats planted content).
func privCanary(what string) string {
	c := "conform-" + what + "-" + strings.ReplaceAll(suite.Key("c"), "-", "")
	suite.Env().Redactor.Add(c)
	return c
}

// classedMessage is a user message with a public part and an internal and
// a receipt_only part holding their canaries.
func classedMessage(internal, receiptOnly string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{
		map[string]any{"type": "text", "text": "conform privacy probe", "visibility": "public"},
		map[string]any{"type": "text", "text": "internal note " + internal, "visibility": "internal"},
		map[string]any{"type": "json", "value": map[string]any{"note": receiptOnly}, "visibility": "receipt_only"},
	}}
}

// exposures lists the JSON paths in doc where canary occurs in a string
// outside what allow admits; allow gets the visibility of the nearest
// enclosing Part (an object with a type and a visibility; "" when there is
// none): a class is stated by a part, not by any object that happens to
// have a visibility member (an event payload marks nothing).
func exposures(doc any, canary string, allow func(vis string) bool) []string {
	var out []string
	var walk func(v any, path, vis string)
	walk = func(v any, path, vis string) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["visibility"].(string); ok && x["type"] != nil {
				vis = s
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], path+"."+k, vis)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", path, i), vis)
			}
		case string:
			if !allow(vis) && check.SecretSpelled(x, canary) != "" {
				where := path
				if vis != "" {
					where += " (in an object marked " + vis + ")"
				}
				out = append(out, where)
			}
		}
	}
	walk(doc, "", "")
	return out
}

func nowhere(string) bool { return false }

// nonPublic admits content inside an object marked internal or receipt_only.
func nonPublic(vis string) bool { return vis == "internal" || vis == "receipt_only" }

// privDocs is what a spec read: each document with where it came from.
type privDocs []struct {
	where string
	doc   any
}

func (d *privDocs) add(where string, doc any) {
	*d = append(*d, struct {
		where string
		doc   any
	}{where, doc})
}

// judge lists where canary shows outside allow, in every document.
func (d privDocs) judge(canary, what string, allow func(string) bool) error {
	var errs []string
	for _, x := range d {
		if paths := exposures(x.doc, canary, allow); len(paths) > 0 {
			errs = append(errs, fmt.Sprintf("%s at %s", x.where, strings.Join(paths, ", ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s shows in: %s", what, strings.Join(errs, "; "))
	}
	return nil
}

// readObject GETs path and adds the answer to docs (a failed read is the
// requirement's that owns it, xPrereq).
func readObject(ctx context.Context, docs *privDocs, what, owner, path string) map[string]any {
	GinkgoHelper()
	m := xRead(ctx, what, owner, path, nil)
	docs.add("GET "+path, m)
	return m
}

// readList reads every page of a resource list (cursor) or an event list
// (after_event_id) into docs, and returns its items.
func readList(ctx context.Context, docs *privDocs, what, owner, path string, q url.Values, events bool) []map[string]any {
	GinkgoHelper()
	query := url.Values{"limit": {"200"}}
	for k, v := range q {
		query[k] = v
	}
	var items []map[string]any
	seen := map[string]bool{}
	for range 50 {
		resp := suite.Do(ctx, client.Request{Path: path, Query: query}, suite.SpecReqs()...)
		p, err := check.ListPage(resp)
		if resp.Status != http.StatusOK || err != nil {
			xPrereq(what, resp, owner)
		}
		for _, it := range p.Items {
			docs.add(fmt.Sprintf("GET %s (%v %v)", path, it["object"], it["id"]), it)
		}
		items = append(items, p.Items...)
		if !p.HasMore || p.NextCursor == "" || seen[p.NextCursor] {
			break
		}
		seen[p.NextCursor] = true
		if events {
			query.Set("after_event_id", p.NextCursor)
		} else {
			query.Set("cursor", p.NextCursor)
		}
	}
	return items
}

// privStream opens sess's event stream before anything happens in it, so
// that every event is seen as delivered.
func privStream(ctx context.Context, sess string) *client.Stream {
	GinkgoHelper()
	st, err := suite.Client().Stream(ctx, client.Request{Path: "/v1/sessions/" + client.Seg(sess) + "/events/stream"})
	suite.Transport(err, suite.SpecReqs()...)
	return st
}

// drainStream reads up to want frames (as many events as the session's
// list held) within --stream-timeout into docs. A stream that does not
// open or delivers fewer frames is Core's to judge (CORE-SSE-*): what
// arrived is judged here.
func drainStream(ctx context.Context, st *client.Stream, docs *privDocs, want int) {
	if st.Response.Status != http.StatusOK {
		return
	}
	wctx, done := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
	defer done()
	for i := range want {
		f, err := st.NextEvent(wctx)
		if err != nil {
			// Core judges the stream itself (CORE-SSE-*); here the report
			// says how much of it the privacy checks saw.
			suite.Note(fmt.Sprintf("%s: the stream ended after %d of the %d events the session lists (%v); the privacy checks read those %d frames", st.Response, i, want, err, i))
			return
		}
		var doc any
		if json.Unmarshal([]byte(f.Data), &doc) != nil {
			doc = f.Data
		}
		docs.add(fmt.Sprintf("SSE frame %q (%s) of %s", f.ID, f.Event, st.Response), doc)
	}
}

// sessionRecord reads everything sess holds — its messages, its tasks
// (each read by id), their outcomes, its event list and what its stream
// delivered — split into content (messages, tasks, outcomes) and events.
func sessionRecord(ctx context.Context, sess string, st *client.Stream) (content, events privDocs, messages []map[string]any) {
	GinkgoHelper()
	messages = readList(ctx, &content, "listing the session's messages (GET /v1/sessions/{id}/messages)", "CORE-READ-011",
		"/v1/sessions/"+client.Seg(sess)+"/messages", nil, false)
	for _, m := range messages {
		readObject(ctx, &content, "reading a message (GET /v1/messages/{id})", "CORE-READ-006", "/v1/messages/"+client.Seg(xID(m)))
	}
	tasks := readList(ctx, &content, "listing the session's tasks (GET /v1/sessions/{id}/tasks)", "CORE-READ-004",
		"/v1/sessions/"+client.Seg(sess)+"/tasks", nil, false)
	for _, t := range tasks {
		tm := readObject(ctx, &content, "reading a task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(xID(t)))
		if o := xStr(tm, "outcome_id"); o != "" {
			readObject(ctx, &content, "reading an outcome (GET /v1/outcomes/{id})", "CORE-OUT-001", "/v1/outcomes/"+client.Seg(o))
		}
		readList(ctx, &events, "reading a task's events (GET /v1/tasks/{id}/events)", "CORE-EVT-001", "/v1/tasks/"+client.Seg(xID(t))+"/events", nil, true)
	}
	evs := readList(ctx, &events, "reading the session's events (GET /v1/sessions/{id}/events)", "CORE-EVT-001",
		"/v1/sessions/"+client.Seg(sess)+"/events", nil, true)
	drainStream(ctx, st, &events, len(evs))
	return content, events, messages
}

// withoutTaskMetadata leaves out the tasks' metadata: it holds the
// scenario the suite itself sent (its canaries included), the caller's
// own data echoed back, not content the target published.
func withoutTaskMetadata(d privDocs) privDocs {
	var out privDocs
	for _, x := range d {
		if m, ok := x.doc.(map[string]any); ok && m["object"] == "task" {
			cp := map[string]any{}
			for k, v := range m {
				if k != "metadata" {
					cp[k] = v
				}
			}
			out.add(x.where, cp)
			continue
		}
		out = append(out, x)
	}
	return out
}

// classOf is the visibility of part i of message m ("" when absent).
func classOf(m map[string]any, i int) string {
	parts, _ := m["parts"].([]any)
	if i >= len(parts) {
		return ""
	}
	p, _ := parts[i].(map[string]any)
	s, _ := p["visibility"].(string)
	return s
}

var _ = Describe("Privacy and redaction", func() {
	It("keeps internal and receipt_only content in its class: never read back as public, receipt_only content in no read, internal content in no event",
		suite.Req(reqPrivClasses), func(ctx SpecContext) {
			ws := xWorkspace(ctx)
			sess := xID(xSession(ctx, ws, ""))
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			st := privStream(sctx, sess)
			defer st.Close()
			internal, receiptOnly := privCanary("internal"), privCanary("receipt-only")

			// The client's own content of each class: a message, two
			// artifacts, and a task whose input holds all three classes
			// (the target's agent must not repeat what is not public).
			msg := xSetup(ctx, "appending a Message (POST /v1/sessions/{id}/messages)", "CORE-READ-011", client.Request{Method: http.MethodPost,
				Path: "/v1/sessions/" + client.Seg(sess) + "/messages", Body: map[string]any{"message": classedMessage(internal, receiptOnly)}})
			arts := map[string]string{}
			for _, vis := range []string{"internal", "receipt_only"} {
				a := xSetup(ctx, "registering an Artifact (POST /v1/artifacts)", reqArtifact, client.Request{Method: http.MethodPost, Path: "/v1/artifacts",
					Body: map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": vis, "session_id": sess}})
				arts[xID(a)] = vis
			}
			plain := xSubmit(ctx, sess, map[string]any{"input": classedMessage(internal, receiptOnly)})
			xTerminal(ctx, plain)
			// The agent's own content of each class (the emit step's visibility).
			hooked := suite.Env().Discovery.Scenarios() != ""
			agentTask := ""
			if hooked {
				agentTask = xSubmit(ctx, sess, nil, xStep("emit", "count", 1, "text", "agent internal "+internal, "visibility", "internal"),
					xStep("emit", "count", 1, "text", "agent receipt "+receiptOnly, "visibility", "receipt_only"))
				xTerminal(ctx, agentTask)
			}

			content, events, messages := sessionRecord(ctx, sess, st)
			content = withoutTaskMetadata(content)

			// Never read back as public: the client's message, by id and listed.
			read := readObject(ctx, &content, "reading a message (GET /v1/messages/{id})", "CORE-READ-006", "/v1/messages/"+client.Seg(xID(msg)))
			for i, want := range []string{"internal", "receipt_only"} {
				if got := classOf(read, i+1); got == "public" {
					suite.Check(reqPrivClasses, fmt.Errorf("message %s part %d, created %s, reads back as public", xID(msg), i+1, want))
				}
			}
			for id, vis := range arts {
				a := readObject(ctx, &content, "reading an artifact (GET /v1/artifacts/{id})", "CORE-READ-007", "/v1/artifacts/"+client.Seg(id))
				if a["visibility"] == "public" {
					suite.Check(reqPrivClasses, fmt.Errorf("artifact %s, registered %s, reads back as public", id, vis))
				}
			}
			listed := readList(ctx, &content, "listing the session's artifacts (GET /v1/artifacts?session_id=)", "CORE-READ-007", "/v1/artifacts", url.Values{"session_id": {sess}}, false)
			for _, a := range listed {
				if vis, ok := arts[xID(a)]; ok && a["visibility"] == "public" {
					suite.Check(reqPrivClasses, fmt.Errorf("GET /v1/artifacts lists artifact %s, registered %s, as public", xID(a), vis))
				}
			}
			// Every part states a class (a value the enum may gain later is CORE-READ-009's).
			for _, m := range messages {
				parts, _ := m["parts"].([]any)
				for i := range parts {
					if classOf(m, i) == "" {
						suite.Check(reqPrivClasses, fmt.Errorf("message %s part %d states no visibility: its class cannot be told", xID(m), i))
					}
				}
			}
			// Where the content may go.
			suite.Check(reqPrivClasses, content.judge(receiptOnly, "receipt_only content (the suite's canary)", nowhere))
			suite.Check(reqPrivClasses, events.judge(receiptOnly, "receipt_only content (the suite's canary)", nowhere))
			suite.Check(reqPrivClasses, content.judge(internal, "internal content outside a part marked internal", nonPublic))
			suite.Check(reqPrivClasses, events.judge(internal, "internal content in an event (events mark no class; only a part carried with its visibility may hold it)", nonPublic))
			if !hooked {
				suite.NothingToCheck(reqPrivClasses, "the target does not advertise the conform.scenarios contract, so its agent could not be made to say something internal or receipt_only: only the client's own content was checked",
					suite.RemedyScenarios)
			} else if !slices.ContainsFunc(messages, func(m map[string]any) bool { return xStr(m, "task_id") == agentTask }) {
				suite.NothingToCheck(reqPrivClasses, fmt.Sprintf("task %s, told to emit an internal and a receipt_only message, appended no message to its session", agentTask),
					"run the emit step's visibility as docs/scenarios.md says: the message's part carries the class")
			}
		})

	It("keeps secrets, the run's credentials and a canary handed to the agent out of public message parts and events", suite.Req(reqPrivSecrets), func(ctx SpecContext) {
		ws := xWorkspace(ctx)
		sess := xID(xSession(ctx, ws, ""))
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st := privStream(sctx, sess)
		defer st.Close()
		cfg := suite.Env().Config
		secrets := map[string]string{"the run's API key": cfg.APIKey}
		for name, v := range map[string]string{"the second actor's API key": cfg.SecondAPIKey, "the read-only actor's API key": cfg.ReadOnlyAPIKey, "the OAuth client secret": cfg.OAuth.Secret} {
			if v != "" {
				secrets[name] = v
			}
		}
		// An access token at work in the session, where the run can get one.
		if o := suite.Env().OAuth(ctx); o.Client != nil {
			if tok, err := o.Client.Token(ctx, nil); err == nil && tok.AccessToken != "" {
				suite.Env().Redactor.Add(tok.AccessToken)
				secrets["the run's OAuth access token"] = tok.AccessToken
				resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages", Authorization: tok.Bearer(),
					Body: map[string]any{"message": xText("written with an access token")}}, reqPrivSecrets)
				if resp.Status/100 != 2 {
					suite.Note(fmt.Sprintf("EXT-PRIV-002: appending a message with the run's access token answered %d; the token's absence is still checked", resp.Status))
				}
			}
		}
		xTerminal(ctx, xSubmit(ctx, sess, nil)) // the target's own agent at work
		canary := ""
		if suite.Env().Discovery.Scenarios() != "" {
			canary = privCanary("sk-secret")
			xTerminal(ctx, xSubmit(ctx, sess, nil, xStep("use_secret", "secret", canary)))
		}
		content, events, messages := sessionRecord(ctx, sess, st)
		all := append(append(privDocs{}, content...), events...)
		for _, name := range slices.Sorted(maps.Keys(secrets)) {
			suite.Check(reqPrivSecrets, all.judge(secrets[name], name, nowhere))
		}
		if canary != "" {
			suite.Check(reqPrivSecrets, events.judge(canary, "the secret handed to the agent (use_secret)", nowhere))
			suite.Check(reqPrivSecrets, withoutTaskMetadata(content).judge(canary, "the secret handed to the agent (use_secret)", nonPublic))
		}
		// Credential-named members and credential-shaped strings.
		var errs []string
		for _, e := range events {
			if found := findSecrets(e.doc); len(found) > 0 {
				errs = append(errs, fmt.Sprintf("%s: %s", e.where, strings.Join(found, ", ")))
			}
		}
		for _, m := range messages {
			parts, _ := m["parts"].([]any)
			for i, p := range parts {
				if pm, _ := p.(map[string]any); pm["visibility"] == "public" {
					if found := findSecrets(pm); len(found) > 0 {
						errs = append(errs, fmt.Sprintf("message %s public part %d: %s", xID(m), i, strings.Join(found, ", ")))
					}
				}
			}
		}
		if len(errs) > 0 {
			suite.Check(reqPrivSecrets, fmt.Errorf("secret material in events or public parts: %s", strings.Join(errs, "; ")))
		}
		if canary == "" {
			suite.NothingToCheck(reqPrivSecrets, "the target does not advertise the conform.scenarios contract, so no secret could be handed to its agent: only the run's own credentials were looked for",
				suite.RemedyScenarios)
		}
	})

	It("keeps the agent's hidden reasoning out of public message parts and events", suite.Req(reqPrivReasoning), func(ctx SpecContext) {
		xHook("the agent cannot be made to reason in a way the suite can recognise")
		ws := xWorkspace(ctx)
		sess := xID(xSession(ctx, ws, ""))
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st := privStream(sctx, sess)
		defer st.Close()
		thought := privCanary("hidden-reasoning")
		id := xSubmit(ctx, sess, nil, xStep("reason", "text", "considering "+thought, "summary", "weighed two approaches"),
			xStep("emit", "count", 1, "text", "done thinking"))
		t := xTerminal(ctx, id)
		if t["status"] != check.Completed {
			suite.NothingToCheck(reqPrivReasoning, fmt.Sprintf("task %s, told to reason and then speak, ended %v: the reasoning may not have happened", id, t["status"]),
				"run the reason step as docs/scenarios.md says, then go on with the next step")
		}
		content, events, _ := sessionRecord(ctx, sess, st)
		suite.Check(reqPrivReasoning, events.judge(thought, "the agent's hidden reasoning", nowhere))
		suite.Check(reqPrivReasoning, withoutTaskMetadata(content).judge(thought, "the agent's hidden reasoning outside a non-public part", nonPublic))
	})

	It("keeps a redacted artifact readable by id with its envelope, withdraws its bytes and records an artifact.redacted event", suite.Req(reqPrivRedaction), func(ctx SpecContext) {
		xHook("no artifact can be made to be redacted")
		ws := xWorkspace(ctx)
		sess := xID(xSession(ctx, ws, ""))
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st := privStream(sctx, sess)
		defer st.Close()
		secretBytes := privCanary("redacted-bytes")
		id := xSubmit(ctx, sess, nil, xStep("artifact", "kind", "log", "mime_type", "text/plain", "name", "conform-redact.log", "content", secretBytes),
			xStep("redact", "name", "conform-redact.log", "reason", "conform privacy check"))
		xTerminal(ctx, id)
		_, events, _ := sessionRecord(ctx, sess, st)
		art := ""
		for _, e := range events {
			if m, _ := e.doc.(map[string]any); m["event"] == "artifact.created" && m["task_id"] == id {
				r, _ := m["resource"].(map[string]any)
				art = xStr(r, "id")
			}
		}
		if art == "" {
			suite.Unverified(fmt.Sprintf("task %s, told to make an artifact and redact it, emitted no artifact.created naming its artifact", id),
				"run the artifact step as docs/scenarios.md says (artifact.created, resource the artifact, task_id the task)")
		}
		// The trace: readable by id with its envelope, and listed.
		got := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(art)}, reqPrivRedaction)
		if suite.Check(reqPrivRedaction, check.Status(got, http.StatusOK)) {
			a, err := got.Object()
			if suite.Check(reqPrivRedaction, err) {
				var errs []string
				for f, want := range map[string]any{"id": art, "object": "artifact", "kind": "log", "mime_type": "text/plain"} {
					if a[f] != want {
						errs = append(errs, fmt.Sprintf("%s = %s, want %v", f, jsonText(a[f]), want))
					}
				}
				if vis, _ := a["visibility"].(string); !slices.Contains(visibilities, vis) {
					errs = append(errs, fmt.Sprintf("visibility = %s, want one of %v", jsonText(a["visibility"]), visibilities))
				}
				if len(errs) > 0 {
					suite.Check(reqPrivRedaction, fmt.Errorf("%s: the redacted artifact lost its envelope: %s", got, strings.Join(errs, "; ")))
				}
			}
		}
		if !slices.Contains(xIDs(xArtifactsOf(ctx, id)), art) {
			suite.Check(reqPrivRedaction, fmt.Errorf("GET /v1/artifacts?task_id=%s no longer lists artifact %s after its redaction: redaction must leave a trace, not delete", id, art))
		}
		// The event.
		found := false
		for _, e := range events {
			m, _ := e.doc.(map[string]any)
			r, _ := m["resource"].(map[string]any)
			if m["event"] == "artifact.redacted" && (xStr(r, "id") == art || xStr(payload(m), "artifact_id") == art) {
				found = true
			}
		}
		if !found {
			suite.Check(reqPrivRedaction, fmt.Errorf("no artifact.redacted event of session %s names artifact %s (events %v)", sess, art, privKinds(events)))
		}
		// The redaction happened: the bytes are withdrawn from the
		// content route and from every event.
		body := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(art) + "/content"}, reqPrivRedaction)
		if body.Status == http.StatusOK && strings.Contains(string(body.Body), secretBytes) {
			suite.Check(reqPrivRedaction, fmt.Errorf("%s: the redacted artifact still serves the content it was made with", body))
		}
		suite.Check(reqPrivRedaction, events.judge(secretBytes, "the redacted artifact's content", nowhere))
	})
})

// privKinds lists the event kinds of docs.
func privKinds(d privDocs) []string {
	var out []string
	for _, x := range d {
		if m, ok := x.doc.(map[string]any); ok {
			if k, _ := m["event"].(string); k != "" && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}
