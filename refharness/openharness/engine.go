// Package openharness is the reference OpenHarness v1 Engine: a thin
// adapter that speaks the OpenHarness JSON contract (spec 001) over
// conform's HTTP binding (docs/openharness.md: one JSON request envelope
// per POST, one JSON response envelope back) and answers every request
// from the request alone. It keeps no state: the protocol carries opaque
// identifiers only, and what an Engine does with them is engine-specific.
// Faults break one requirement each, so that the openharness profile can be
// seen to catch them (cmd/conform/faults_openharness_test.go).
package openharness

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	oh "github.com/harn-conform/conform/internal/openharness"
)

// Options configure an Engine. The zero value is a working Engine without
// transport authentication.
type Options struct {
	// APIKey, when set, is the transport credential every request must
	// carry as "Authorization: Bearer KEY" (§7 prefers transport-layer
	// authentication to secrets in the body).
	APIKey string
	// Faults break one requirement each (AllFaults).
	Faults map[Fault]bool
	// Now is the clock behind engine_latency_ms (nil: time.Now).
	Now func() time.Time
}

// Engine is the reference OpenHarness Engine.
type Engine struct {
	opts Options
}

var _ http.Handler = (*Engine)(nil)

// New returns an Engine.
func New(opts Options) *Engine {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Engine{opts: opts}
}

func (e *Engine) fault(f Fault) bool { return e.opts.Faults[f] }

// Capabilities this Engine offers, and the ones of the document's examples
// it knows but cannot honor (it denies them when asked, §5.3).
var (
	offered = map[string]any{
		"openharness.actions.parallel":   true,
		"openharness.attachments.upload": true,
		"openharness.ui.rich_cards":      true,
		"openharness.ui.approval":        true,
	}
	notOffered = map[string]string{
		"openharness.streaming": "this Engine answers with the non-streaming v1 body only (§15)",
	}
)

// ServeHTTP answers one request envelope.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := e.opts.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		e.fail(w, nil, http.StatusMethodNotAllowed, "method_not_allowed", "send one request envelope with POST", false)
		return
	}
	if e.opts.APIKey != "" && !e.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="openharness"`)
		e.fail(w, nil, http.StatusUnauthorized, "unauthorized", "transport authentication is missing or was refused", false)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			e.fail(w, nil, http.StatusUnsupportedMediaType, "unsupported_media_type", "send the request envelope as application/json", false)
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, oh.MaxMessageBytes+1))
	if err != nil {
		e.fail(w, nil, http.StatusBadRequest, "invalid_request", "the request body could not be read", true)
		return
	}
	if len(body) > oh.MaxMessageBytes {
		e.fail(w, nil, http.StatusRequestEntityTooLarge, "payload_too_large",
			fmt.Sprintf("a request envelope is at most %d bytes: send attachments by reference", oh.MaxMessageBytes), false)
		return
	}
	req, err := oh.Decode(body)
	if err != nil {
		if e.fault(FaultMalformedSuccess) {
			e.write(w, http.StatusOK, e.envelope(nil, map[string]any{"status": "success", "action_directives": []any{}}))
			return
		}
		e.fail(w, nil, http.StatusBadRequest, "invalid_request", "the body is not a request envelope: "+err.Error(), false)
		return
	}
	if status, code, msg := e.refuse(req); code != "" {
		e.failFor(w, req, status, code, msg)
		return
	}
	e.write(w, http.StatusOK, e.answer(req, start))
}

// authorized compares the bearer credential in constant time.
func (e *Engine) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(e.opts.APIKey)) == 1
}

// Members this Engine reads; the rest it ignores (§4), unless the
// rejects-unknown-fields fault is on.
var (
	knownTop     = []string{"protocol_version", "request_id", "correlation_id", "capabilities", "request", "extensions"}
	knownRequest = []string{"auth", "context", "extensions"}
	knownContext = []string{"session_id", "conversation_id", "user_intent", "task_hint", "continuation",
		"environment_state", "attachments", "shell", "extensions"}
	knownAuth = []string{"tenant_id", "credential_ref", "session_id", "token"}
)

// refuse decides whether the Engine cannot satisfy a request: an HTTP
// status, an error code and a message that never repeats what the request
// carried; code "" means it can.
func (e *Engine) refuse(req map[string]any) (int, string, string) {
	v, ok := req["protocol_version"].(string)
	if !ok {
		return http.StatusBadRequest, "invalid_request", "protocol_version is missing or not a string"
	}
	if oh.Major(v) != "1" && !(e.fault(FaultAcceptsAnyVersion) || e.fault(FaultTwoMajorsUnlisted) && oh.Major(v) == "2") {
		if !oh.IsSemver(v) {
			return http.StatusBadRequest, "invalid_request", "protocol_version is not a semantic version"
		}
		return http.StatusBadRequest, "protocol_version_unsupported", "this Engine implements protocol major version 1 only"
	}
	body, ok := req["request"].(map[string]any)
	if !ok {
		return http.StatusBadRequest, "invalid_request", "request is missing or not an object"
	}
	if where := unknownMember(req); where != "" && e.fault(FaultRejectsUnknownFields) {
		return http.StatusBadRequest, "invalid_request", "unknown member in " + where
	}
	if len(unknownCapabilities(req)) > 0 && e.fault(FaultRejectsUnknownCapabilities) {
		return http.StatusBadRequest, "capability_unknown", "the request asks for a capability this Engine does not know"
	}
	if auth, ok := body["auth"].(map[string]any); ok && e.fault(FaultRequiresBodyToken) {
		if _, ok := auth["token"]; !ok {
			return http.StatusUnauthorized, "credential_required", "request.auth must carry a token"
		}
	}
	ctx := objOf(body, "context")
	if _, ok := ctx["attachments"]; ok && e.fault(FaultRefusesAttachments) {
		return http.StatusBadRequest, "attachments_unsupported", "this Engine takes no attachments"
	}
	return 0, "", ""
}

// unknownMember names the first object of req (the envelope, request,
// request.context, request.auth) that holds a member this Engine does not
// read, or "" when none does.
func unknownMember(req map[string]any) string {
	body := objOf(req, "request")
	for _, c := range []struct {
		m     map[string]any
		known []string
		where string
	}{{req, knownTop, "the envelope"}, {body, knownRequest, "request"}, {objOf(body, "context"), knownContext, "request.context"}, {objOf(body, "auth"), knownAuth, "request.auth"}} {
		for _, k := range slices.Sorted(maps.Keys(c.m)) {
			if !slices.Contains(c.known, k) {
				return c.where
			}
		}
	}
	return ""
}

// unknownCapabilities are the capability keys req asks for that this
// Engine neither offers nor knows to deny.
func unknownCapabilities(req map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(objOf(req, "capabilities"))) {
		_, off := offered[k]
		_, den := notOffered[k]
		if !off && !den {
			out = append(out, k)
		}
	}
	return out
}

// actOnUnknown is the directive the acts-on-unknown faults add: what an
// Engine that reads an unknown member as an instruction might do.
func actOnUnknown(what string) map[string]any {
	return map[string]any{
		"action_type": "simulate_action",
		"priority":    "critical",
		"risk_tier":   "dangerous",
		"payload":     map[string]any{"macro": "enable " + what, "message": "acting on " + what},
	}
}

// answer builds the success response to a request the Engine can satisfy.
func (e *Engine) answer(req map[string]any, start time.Time) map[string]any {
	asked := objOf(req, "capabilities")
	ctx := objOf(objOf(req, "request"), "context")
	denials := []any{}
	for _, k := range slices.Sorted(maps.Keys(asked)) {
		if why, ok := notOffered[k]; ok {
			d := map[string]any{"capability": k, "code": "not_supported", "message": why}
			if e.fault(FaultDenialWithoutCode) {
				delete(d, "code")
			}
			denials = append(denials, d)
		}
	}
	if e.fault(FaultDeniesUnasked) {
		denials = append(denials, map[string]any{"capability": "openharness.voice", "code": "not_supported", "message": "no voice output"})
	}
	if e.fault(FaultOffersAndDenies) {
		// Denies what it also offers (a capability the Shell asked for).
		for _, k := range slices.Sorted(maps.Keys(asked)) {
			if _, ok := offered[k]; ok {
				denials = append(denials, map[string]any{"capability": k, "code": "disabled_by_policy", "message": "disabled"})
				break
			}
		}
	}
	directives := []any{map[string]any{
		"action_type": "render_message",
		"priority":    "normal",
		"risk_tier":   "safe",
		"payload":     map[string]any{"message": intentSummary(ctx)},
	}}
	if atts, ok := ctx["attachments"].([]any); ok {
		d := map[string]any{
			"action_type": "render_message",
			"execution":   "parallel",
			"risk_tier":   "safe",
			"payload":     map[string]any{"message": fmt.Sprintf("received %d attachment reference(s)", len(atts))},
		}
		if e.fault(FaultEmbedsBlob) {
			d["payload"].(map[string]any)["preview"] = "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 200)
		}
		directives = append(directives, d)
	}
	if _, ok := asked["openharness.ui.approval"]; ok {
		directives = append(directives, map[string]any{
			"action_type":            "request_approval",
			"risk_tier":              "caution",
			"requires_user_approval": true,
			"deadline_ms":            30000,
			"payload":                map[string]any{"message": "approve the next step?", "fallback_message": "approval needed"},
		})
	}
	if where := unknownMember(req); where != "" && e.fault(FaultActsOnUnknownFields) {
		directives = append(directives, actOnUnknown("an unknown member of "+where))
	}
	if ks := unknownCapabilities(req); len(ks) > 0 && e.fault(FaultActsOnUnknownCapabilities) {
		directives = append(directives, actOnUnknown("the capability "+ks[0]))
	}
	if e.fault(FaultRiskTierUnknown) {
		directives[0].(map[string]any)["risk_tier"] = "extreme"
	}
	if e.fault(FaultDirectiveNoType) {
		delete(directives[0].(map[string]any), "action_type")
	}
	if e.fault(FaultBadExtensionKey) {
		directives[0].(map[string]any)["extensions"] = map[string]any{"trace": map[string]any{"step": 1}}
	}
	resp := map[string]any{
		"status":            "success",
		"engine_latency_ms": e.opts.Now().Sub(start).Milliseconds(),
		"action_directives": directives,
	}
	if e.fault(FaultLatencyString) {
		resp["engine_latency_ms"] = fmt.Sprint(resp["engine_latency_ms"]) + "ms"
	}
	env := e.envelope(req, resp)
	env["supported_capabilities"] = offered
	env["capability_denials"] = denials
	if e.fault(FaultAnswersOtherMajor) {
		env["protocol_version"] = "2.0.0"
	}
	return env
}

// intentSummary describes the intent without repeating it: the intent may
// hold personal data, and the reference Engine has nothing to act on.
func intentSummary(ctx map[string]any) string {
	switch v := ctx["user_intent"].(type) {
	case string:
		return fmt.Sprintf("received an intent of %d characters", len([]rune(v)))
	case map[string]any:
		return fmt.Sprintf("received a structured intent with %d member(s)", len(v))
	}
	return "received a request without an intent"
}

// envelope wraps a response body with the envelope members: the version,
// the echoed identifiers and the versions this Engine accepts.
func (e *Engine) envelope(req map[string]any, resp map[string]any) map[string]any {
	env := map[string]any{"protocol_version": oh.Version, "response": resp}
	if !e.fault(FaultTwoMajorsUnlisted) {
		env["supported_protocol_versions"] = []any{oh.Version}
	}
	if e.fault(FaultVersionNotSemver) {
		env["protocol_version"] = "v1"
	}
	if id, ok := req["request_id"]; ok && !e.fault(FaultNoRequestID) {
		if e.fault(FaultRequestIDChanged) {
			id = fmt.Sprintf("engine-%v", id)
		}
		env["request_id"] = id
	}
	if id, ok := req["correlation_id"]; ok && !e.fault(FaultNoCorrelationID) {
		if e.fault(FaultCorrelationIDChanged) {
			id = fmt.Sprintf("engine-%v", id)
		}
		env["correlation_id"] = id
	}
	if e.fault(FaultVendorMember) {
		env["x_engine_build"] = "ref-1"
	}
	return env
}

// fail answers with an error envelope (req may be nil: nothing to echo).
func (e *Engine) fail(w http.ResponseWriter, req map[string]any, status int, code, msg string, retryable bool) {
	errObj := map[string]any{"code": code, "message": msg, "retryable": retryable}
	if e.fault(FaultErrorWithoutCode) {
		delete(errObj, "code")
	}
	resp := map[string]any{"status": "error", "error": errObj}
	// Without a request to answer (a body that is no envelope) the fault
	// drops the error object: a request it can read still gets its code
	// (OH-VER-004 needs one).
	if e.fault(FaultErrorWithoutObject) {
		delete(resp, "error")
	}
	e.write(w, status, e.envelope(req, resp))
}

// failFor is fail for a decoded request, where the echo faults apply.
func (e *Engine) failFor(w http.ResponseWriter, req map[string]any, status int, code, msg string) {
	errObj := map[string]any{"code": code, "message": msg, "retryable": false}
	if code == "protocol_version_unsupported" {
		errObj["details"] = map[string]any{"supported_protocol_versions": []any{oh.Version}}
	}
	body := objOf(req, "request")
	if e.fault(FaultErrorEchoesToken) {
		// The classic leak: a diagnostic that dumps what it was given.
		errObj["details"] = map[string]any{"auth": body["auth"]}
	}
	if e.fault(FaultErrorEchoesPII) {
		if es := objOf(objOf(body, "context"), "environment_state"); es != nil {
			b, _ := json.Marshal(es)
			errObj["message"] = msg + " (state: " + string(b) + ")"
		}
	}
	if e.fault(FaultErrorWithoutCode) {
		delete(errObj, "code")
	}
	e.write(w, status, e.envelope(req, map[string]any{"status": "error", "error": errObj}))
}

func (e *Engine) write(w http.ResponseWriter, status int, env map[string]any) {
	b, err := json.Marshal(env)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	ct := "application/json"
	if e.fault(FaultWrongContentType) {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func objOf(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}
