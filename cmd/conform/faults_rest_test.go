package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// REST-surface faults of the Core level: each must fail exactly the
// requirements it names. Where a fault breaks one behaviour that several
// requirements observe from different sides (an ignored Idempotency-Key
// breaks every retry check), every one of them is listed.
var restFaults = []faultCase{
	{Fault: refharness.FaultAcceptMissingKey, Fails: []string{"CORE-AUTH-001"}},
	{Fault: refharness.FaultAcceptAnyKey, Fails: []string{"CORE-AUTH-003"}},
	{Fault: refharness.FaultEchoKeyInError, Fails: []string{"CORE-AUTH-004"}},
	{Fault: refharness.FaultForgetIdempotency, Fails: []string{"CORE-IDEM-001", "CORE-IDEM-002", "CORE-IDEM-003", "CORE-IDEM-004", "CORE-IDEM-005"}},
	{Fault: refharness.FaultIdempotencyNoConflict, Fails: []string{"CORE-IDEM-002", "CORE-IDEM-005"}},
	{Fault: refharness.FaultDuplicateOnConcurrentRetry, Fails: []string{"CORE-IDEM-003"}},
	{Fault: refharness.FaultWrongCreateStatus, Fails: []string{"CORE-TASK-001", "CORE-TASK-002", "CORE-READ-010", "CORE-READ-011"}},
	{Fault: refharness.FaultErrorWithoutEnvelope, Fails: []string{"CORE-ERR-002"}},
	{Fault: refharness.FaultWrongErrorType, Fails: []string{"CORE-ERR-003"}},
	{Fault: refharness.FaultNotFoundAs400, Fails: []string{"CORE-ERR-001"}},
	{Fault: refharness.FaultUnknownRouteNot404, Fails: []string{"CORE-ERR-001"}},
	{Fault: refharness.FaultNo413, Fails: []string{"CORE-ERR-006"}},
	// The harness breaks event ranges the same way; the event checks see it.
	{Fault: refharness.FaultLimitIgnored, Fails: []string{"CORE-PAGE-002"}, Tolerated: []string{"CORE-EVT-004"}},
	{Fault: refharness.FaultPaginationRepeats, Fails: []string{"CORE-PAGE-003"}, Tolerated: []string{"CORE-EVT-004"}},
	{Fault: refharness.FaultNonUTCTimestamps, Fails: []string{"CORE-READ-002"}},
	{Fault: refharness.FaultWrongObjectField, Fails: []string{"CORE-READ-003", "CORE-DISC-001", "CORE-CARD-001"}},
	{Fault: refharness.FaultMissingRequiredField, Fails: []string{"CORE-READ-004"}},
	{Fault: refharness.FaultIDsNotStable, Fails: []string{"CORE-ID-001", "CORE-ID-002"}},
	{Fault: refharness.FaultPublicNeedsVersion, Fails: []string{"CORE-VER-004"}},
	{Fault: refharness.FaultAcceptMalformedAuth, Fails: []string{"CORE-AUTH-002"}},
	{Fault: refharness.FaultSessionNoMetadata, Fails: []string{"CORE-READ-001"}},
	{Fault: refharness.FaultSessionNoTranscript, Fails: []string{"CORE-READ-005"}},
	{Fault: refharness.FaultPartNoVisibility, Fails: []string{"CORE-READ-006"}},
	{Fault: refharness.FaultArtifactSHAPrefixed, Fails: []string{"CORE-READ-007"}},
	{Fault: refharness.FaultOutcomeNotListed, Fails: []string{"CORE-READ-008"}},
	{Fault: refharness.FaultMessageNotReadable, Fails: []string{"CORE-READ-011"}},
	{Fault: refharness.FaultEventByIDDiffers, Fails: []string{"CORE-READ-014"}},
	{Fault: refharness.FaultTaskListIgnoresSession, Fails: []string{"CORE-TASK-003"}},
	{Fault: refharness.FaultIdempotencyIgnoresTarget, Fails: []string{"CORE-IDEM-007"}},
	{Fault: refharness.FaultMalformedJSONAs500, Fails: []string{"CORE-ERR-004"}},
	// Breadth (issue 9).
	{Fault: refharness.FaultEventsNotScoped, Fails: []string{"CORE-EVT-005"}},
	{Fault: refharness.FaultEventIDsNotMonotonic, Fails: []string{"CORE-EVT-006"}},
	{Fault: refharness.FaultTerminalAcceptsMessage, Fails: []string{"CORE-LIFE-004"}},
	{Fault: refharness.FaultIdempotencyByteCompare, Fails: []string{"CORE-IDEM-001"}},
}

func TestRESTFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range restFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			assertFaultCaught(t, tc, "core")
		})
	}
}

// Faults that break a SHOULD: the suite must warn about exactly that
// requirement and fail nothing.
var restShouldFaults = []struct {
	Fault refharness.Fault
	Warns string
}{
	{refharness.FaultNoSupportedVersions, "CORE-VER-003"},
	{refharness.FaultNoParamOnBadRequest, "CORE-ERR-005"},
	{refharness.FaultIdempotencyKeyLength, "CORE-IDEM-006"},
}

func TestRESTShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range restShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			url := harness(t, refharness.Options{Faults: refharness.Faults{tc.Fault: true}})
			assertWarnsOnly(t, "fault "+string(tc.Fault), url, "core", tc.Warns)
		})
	}
}

func TestRESTVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, v := range []refharness.Variant{refharness.VariantExtraFields, refharness.VariantReorderedKeys} {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			assertVariantPasses(t, v, "core")
		})
	}
}

// Some Core MUSTs have no fault in the reference Harness. These rows break
// the behaviour from outside instead: a middleware in front of an
// unmodified harness rewrites one thing in requests or answers. Each row
// still has to fail exactly its requirements.
type wrapFault struct {
	Name      string
	Wrap      func(http.Handler) http.Handler
	Fails     []string
	Tolerated []string
}

var restWrapFaults = []wrapFault{
	{Name: "lists-without-page", Wrap: rewriting(func(_ *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && m["object"] == "list" {
			delete(m, "page")
		}
	}), Fails: []string{"CORE-PAGE-001"}, Tolerated: []string{"CORE-EVT-004"}}, // the event-range walk reads lists too
	{Name: "messages-reversed", Wrap: rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/messages") {
			if data, ok := m["data"].([]any); ok {
				slices.Reverse(data)
			}
		}
	}), Fails: []string{"CORE-READ-012"}},
	{Name: "content-not-matching-sha256", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/content") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			body := rec.Body.Bytes()
			if rec.Code == http.StatusOK {
				body = append(body, '!') // the bytes, not an error answer
			}
			w.Write(body)
		})
	}, Fails: []string{"CORE-READ-013"}},
}

func TestRESTWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range restWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertCaught(t, tc.Name, wrappedHarness(t, tc.Wrap), "core", tc.Fails, tc.Tolerated)
		})
	}
}

// wrappedHarness is harness() with a middleware in front of the handler.
func wrappedHarness(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	return wrappedHarnessWith(t, nil, wrap)
}

// wrappedHarnessWith runs setup against the bare handler first.
func wrappedHarnessWith(t *testing.T, setup func(*testing.T, http.Handler), wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(t, h)
	}
	mux := http.NewServeMux()
	mux.Handle("/prefix/", http.StripPrefix("/prefix", wrap(h)))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); h.Close() })
	return srv.URL + "/prefix"
}

// rewriting applies f to every JSON answer (streams and artifact bytes
// pass through untouched).
func rewriting(f func(r *http.Request, v any)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/stream") || strings.HasSuffix(r.URL.Path, "/content") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				f(r, v)
				if b, err := json.Marshal(v); err == nil {
					body = b
				}
			}
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
}

// eachObject calls f on every JSON object in v whose "object" is kind.
func eachObject(v any, kind string, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			eachObject(c, kind, f)
		}
		if x["object"] == kind {
			f(x)
		}
	case []any:
		for _, c := range x {
			eachObject(c, kind, f)
		}
	}
}

// SHOULD-level behaviour broken from outside: each must earn a warning for
// exactly its requirement and fail nothing.
var restWrapShouldFaults = []struct {
	Name  string
	Wrap  func(http.Handler) http.Handler
	Warns string
}{
	{"unknown-session-state", rewriting(func(_ *http.Request, v any) {
		eachObject(v, "session", func(m map[string]any) {
			if m["state"] != "CLOSED" { // a closed session stays closed (CORE-SESSION-001)
				m["state"] = "HIBERNATING"
			}
		})
	}), "CORE-READ-009"},
	{"bare-a2a-card", rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/agent-card" {
			if a, ok := m["a2a_card"].(map[string]any); ok {
				delete(a, "defaultInputModes")
			}
		}
	}), "CORE-CARD-002"},
	// docs/interpretations.md#a2a-card: the A2A card declares how to authenticate.
	{"a2a-card-without-security", rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/agent-card" {
			if a, ok := m["a2a_card"].(map[string]any); ok {
				delete(a, "securitySchemes")
				delete(a, "security")
			}
		}
	}), "CORE-CARD-002"},
	{"card-claims-websocket", rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/agent-card" {
			caps, _ := m["capabilities"].([]any)
			m["capabilities"] = append(caps, "websocket")
		}
	}), "CORE-CARD-003"},
}

func TestRESTWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range restWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertWarnsOnly(t, tc.Name, wrappedHarness(t, tc.Wrap), "core", tc.Warns)
		})
	}
}

// Legal but unusual REST behaviour the reference Harness has no variant
// for, put in front of it by a middleware: the suite must pass all of it.
var restWrapVariants = []struct {
	Name  string
	Setup func(t *testing.T, h http.Handler) // runs against the bare harness first
	Wrap  func(http.Handler) http.Handler
}{
	// Out-of-range limits clamped instead of refused.
	{Name: "clamped-limit", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if v := q.Get("limit"); v != "" {
				switch n, err := strconv.Atoi(v); {
				case err == nil && n < 1:
					q.Set("limit", "1")
				case err == nil && n > 200:
					q.Set("limit", "200")
				}
				r.URL.RawQuery = q.Encode()
			}
			next.ServeHTTP(w, r)
		})
	}},
	// An idempotent replay answered 200 rather than the first 201/202.
	{Name: "replay-answers-200", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			code := rec.Code
			if rec.Header().Get("Idempotent-Replayed") == "true" && (code == http.StatusCreated || code == http.StatusAccepted) {
				code = http.StatusOK
			}
			w.WriteHeader(code)
			w.Write(rec.Body.Bytes())
		})
	}},
	// error.param as a JSON Pointer.
	{Name: "param-json-pointer", Wrap: rewriting(func(_ *http.Request, v any) {
		if m, ok := v.(map[string]any); ok {
			if e, ok := m["error"].(map[string]any); ok {
				if p, ok := e["param"].(string); ok && p != "" {
					e["param"] = "/" + strings.NewReplacer(".", "/", "[", "/", "]", "").Replace(p)
				}
			}
		}
	})},
	// UTC spelled +00:00 and with lower-case t and z.
	{Name: "utc-spellings", Wrap: rewriting(func(_ *http.Request, v any) { respellUTC(v) })},
	// Clients may not create workspaces; one exists already.
	// The lifecycle and stream specs create their workspace without the
	// fallback to a listed one that the REST specs' newSession has.
	{Name: "no-workspace-create", Setup: func(t *testing.T, h http.Handler) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/workspaces", strings.NewReader(`{"name":"preset","root":"conform://preset"}`))
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("preset workspace: %d %s", rec.Code, rec.Body)
		}
	}, Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/workspaces" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"error":{"code":"permission_denied","type":"permission_error","message":"workspaces are provisioned by the operator"}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}},
}

// respellUTC rewrites every "…Z" timestamp to "…+00:00", alternating the
// case of the T and Z letters RFC 3339 lets a server choose.
func respellUTC(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && strings.HasSuffix(k, "_at") && strings.HasSuffix(s, "Z") {
				if len(k)%2 == 0 {
					x[k] = strings.TrimSuffix(s, "Z") + "+00:00"
				} else {
					x[k] = strings.ToLower(s)
				}
				continue
			}
			respellUTC(c)
		}
	case []any:
		for _, c := range x {
			respellUTC(c)
		}
	}
}

func TestRESTWrappedVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, tc := range restWrapVariants {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertClean(t, tc.Name, wrappedHarnessWith(t, tc.Setup, tc.Wrap), "core")
		})
	}
}
