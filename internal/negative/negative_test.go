package negative

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
)

func doc(t testing.TB) *openapi.Doc {
	t.Helper()
	d, err := openapi.Default()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func op(t testing.TB, id string) openapi.Operation {
	t.Helper()
	o, ok := doc(t).Operation(id)
	if !ok {
		t.Fatalf("no operation %s", id)
	}
	return o
}

func submitBase(t testing.TB) Base {
	return Base{Op: op(t, "submitSessionTask"), PathIDs: map[string]string{"session_id": "s1"},
		Body: map[string]any{"input": message("hi")}}
}

func find(ms []Mutation, c Class, member string) (Mutation, bool) {
	for _, m := range ms {
		if m.Class == c && m.Member() == member {
			return m, true
		}
	}
	return Mutation{}, false
}

// The document, not the generator, says which requests are invalid.
func TestGenerateAndClassify(t *testing.T) {
	d := doc(t)
	base := submitBase(t)
	ms := Generate(d, base, rngFor(1, "x"))
	seen := map[Class]bool{}
	for _, m := range ms {
		seen[m.Class] = true
	}
	for _, c := range Classes {
		if c == OutOfRange || c == BadFormat || c == EmptyBody {
			continue // submit has no bounded number, no format and takes no empty body… checked below on other operations
		}
		if !seen[c] {
			t.Errorf("no %s mutation for submitSessionTask", c)
		}
	}
	for _, tc := range []struct {
		class  Class
		member string
		want   Expect
	}{
		{MissingRequired, "input", Refuse},
		{WrongType, "persona_id", Refuse},
		{WrongType, "input", Refuse},
		{OutOfEnum, "input.role", Tolerate}, // input may be any JSON object too
		{EmptyString, "input.parts[0].text", Tolerate},
		{UnknownMember, "conform_unknown_member", Accept},
		{OversizedString, "persona_id", Tolerate},
	} {
		m, ok := find(ms, tc.class, tc.member)
		if !ok {
			t.Errorf("no %s mutation of %s", tc.class, tc.member)
			continue
		}
		if got, _ := Classify(d, Apply(base, []Mutation{m})); got != tc.want {
			t.Errorf("%s: classified %s, want %s", m, got, tc.want)
		}
	}
	trunc := Base{Op: op(t, "truncateSession"), PathIDs: map[string]string{"session_id": "s1"}, Body: map[string]any{"keep_first": json.Number("3")}}
	tms := Generate(d, trunc, rngFor(1, "y"))
	m, ok := find(tms, OutOfRange, "keep_first")
	if !ok {
		t.Fatal("no out-of-range keep_first")
	}
	if got, _ := Classify(d, Apply(trunc, []Mutation{m})); got != Refuse || m.Value != json.Number("-1") {
		t.Errorf("%s: %s, want refuse with -1", m, got)
	}
	if _, ok := find(tms, EmptyBody, ""); !ok {
		t.Error("no empty body for truncate, whose body is required")
	}
}

// A plan is the seed's, bounded by its quota, and never sends a write the
// document allows without an anchor that makes it invalid.
func TestPlan(t *testing.T) {
	d := doc(t)
	base := submitBase(t)
	a, b, c := Plan(d, base, 7, 30), Plan(d, base, 7, 30), Plan(d, base, 8, 30)
	if len(a) != 30 {
		t.Fatalf("%d requests, want the quota 30", len(a))
	}
	key := func(ps []Planned) []string {
		var out []string
		for _, p := range ps {
			out = append(out, probeText(p.Built)+string(p.Built.Body))
		}
		return out
	}
	if !slices.Equal(key(a), key(b)) {
		t.Error("the same seed planned different requests")
	}
	if slices.Equal(key(a), key(c)) {
		t.Error("another seed planned the same requests")
	}
	classes := map[Class]bool{}
	for _, p := range a {
		classes[p.Built.Muts[0].Class] = true
		inPath := p.Built.Muts[0].In == InPath
		if p.Expect != Refuse && !inPath {
			t.Errorf("%s: a write planned as %s", probeText(p.Built), p.Expect)
		}
		if p.Anchored {
			last := p.Built.Muts[len(p.Built.Muts)-1]
			if e, _ := Classify(d, Apply(base, []Mutation{last})); e != Refuse {
				t.Errorf("anchor %s does not make a request invalid alone", last)
			}
		}
	}
	for _, c := range []Class{WrongType, MissingRequired, MalformedJSON, HostilePathID, NotAnObject} {
		if !classes[c] {
			t.Errorf("a plan of 30 has no %s request", c)
		}
	}
}

// A reproduction's body, as the shell expands it, is the body sent.
func TestShellBodySendsTheSameBytes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	d := doc(t)
	base := submitBase(t)
	ms := Generate(d, base, rngFor(3, "z"))
	for _, c := range []Class{OversizedString, OversizedArray, DeepNesting, InvalidUTF8, MalformedJSON, DuplicateKey} {
		for _, m := range ms {
			if m.Class != c {
				continue
			}
			if m.Size > 0 {
				m.Size = 300
			}
			b := Apply(base, []Mutation{m})
			word := ShellBody(base, b)
			out, err := exec.Command(bash, "-c", "printf %s "+word).Output()
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			if string(out) != string(b.Body) {
				t.Errorf("%s: the shell word %s gives\n%q\nwant\n%q", m, word, out, b.Body)
			}
			break
		}
	}
}

// fake is a server of one operation, submitSessionTask, with the defects
// named: type500 (a wrong-typed persona_id is a 500), echo (an error
// repeats the body), store (a refused submit still adds a task), strict
// (unknown members refused).
type fake struct {
	d       *openapi.Doc
	defects map[string]bool
	mu      sync.Mutex
	tasks   []string
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1":
		reply(200, map[string]any{})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/s1/tasks":
		data := []any{}
		for _, id := range f.tasks {
			data = append(data, map[string]any{"id": id})
		}
		reply(200, map[string]any{"object": "list", "data": data, "page": map[string]any{"has_more": false, "next_cursor": nil}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/s1/tasks":
		var raw strings.Builder
		buf := make([]byte, 1<<16)
		for {
			n, err := r.Body.Read(buf)
			raw.WriteString(string(buf[:n]))
			if err != nil {
				break
			}
		}
		_, vs := f.d.ValidateRequestBody("POST", "/v1/sessions/s1/tasks", http.Header{"Content-Type": {"application/json"}}, []byte(raw.String()))
		var m map[string]any
		json.Unmarshal([]byte(raw.String()), &m)
		if f.defects["strict"] && m["conform_unknown_member"] != nil {
			vs = append(vs, openapi.Violation{Pointer: "/conform_unknown_member", Message: "unknown"})
		}
		if len(vs) > 0 {
			if f.defects["type500"] && vs[0].Pointer == "/persona_id" && vs[0].Keyword == "type" {
				reply(500, map[string]any{"error": map[string]any{"code": "internal_error", "message": "boom", "type": "server_error"}})
				return
			}
			e := map[string]any{"code": "invalid_request", "message": vs[0].Message, "type": "request_error", "param": strings.TrimPrefix(vs[0].Pointer, "/")}
			if f.defects["echo"] {
				e["details"] = map[string]any{"request": raw.String()}
			}
			if f.defects["store"] {
				f.tasks = append(f.tasks, fmt.Sprintf("task_%d", len(f.tasks)))
			}
			reply(400, map[string]any{"error": e})
			return
		}
		f.tasks = append(f.tasks, fmt.Sprintf("task_%d", len(f.tasks)))
		reply(202, map[string]any{"id": f.tasks[len(f.tasks)-1]})
	default:
		reply(404, map[string]any{"error": map[string]any{"code": "resource_not_found", "message": "no", "type": "not_found_error"}})
	}
}

type clientTransport struct{ c *client.Client }

func (t clientTransport) Do(ctx context.Context, r client.Request) (*client.Response, error) {
	return t.c.Do(ctx, r)
}
func (t clientTransport) Stream(ctx context.Context, r client.Request) (*client.Response, error) {
	return t.c.Do(ctx, r)
}
func (t clientTransport) Alive(ctx context.Context) bool {
	_, err := t.c.Do(ctx, client.Request{Path: "/v1"})
	return err == nil
}
func (t clientTransport) Curl(r client.Request) string { return t.c.Curl(r) }

func runFake(t *testing.T, defects ...string) *Result {
	t.Helper()
	d := doc(t)
	f := &fake{d: d, defects: map[string]bool{}}
	for _, x := range defects {
		f.defects[x] = true
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Options{BaseURL: srv.URL, APIKey: "key-0123456789", Timeout: slowMachine})
	if err != nil {
		t.Fatal(err)
	}
	target := Target{Base: submitBase(t), Watches: []Watch{{Path: "/v1/sessions/s1/tasks", List: true}}}
	p := Pass{Doc: d, T: clientTransport{c}, Seed: 11, Budget: 120, Canary: "sk_canary_0123456789"}
	return p.Run(context.Background(), []Target{target})
}

func findingsOf(res *Result, rule Rule) []Finding {
	var out []Finding
	for _, f := range res.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func TestPassOnACleanServerFindsNothing(t *testing.T) {
	res := runFake(t)
	if len(res.Findings) > 0 {
		t.Fatalf("findings on a clean server: %s", res.Findings[0].Message())
	}
	for _, r := range []Rule{RuleAnswered, RuleRefused, RuleUnchanged, RuleNoEcho, RuleOpen, RuleParam} {
		if res.Judged[r] == 0 {
			t.Errorf("rule %s judged nothing", r)
		}
	}
	if res.Sent > 120 {
		t.Errorf("sent %d, over the budget 120", res.Sent)
	}
}

// Each defect is caught under its rule, shrunk to the one member at fault.
func TestPassCatchesDefects(t *testing.T) {
	for _, tc := range []struct {
		defect string
		rule   Rule
		member string
	}{
		{"type500", RuleAnswered, "persona_id"},
		{"echo", RuleNoEcho, ""},
		{"store", RuleUnchanged, ""},
		{"strict", RuleOpen, "conform_unknown_member"},
	} {
		t.Run(tc.defect, func(t *testing.T) {
			res := runFake(t, tc.defect)
			fs := findingsOf(res, tc.rule)
			if len(fs) == 0 {
				t.Fatalf("no %s finding; findings: %d", tc.rule, len(res.Findings))
			}
			f := fs[0]
			msg := f.Message()
			if !strings.Contains(msg, "curl ") || !strings.Contains(msg, "answer: ") {
				t.Errorf("the finding has no reproduction:\n%s", msg)
			}
			if tc.member != "" {
				if len(f.Muts) != 1 || f.Muts[0].Member() != tc.member {
					t.Errorf("shrunk to %v, want the one member %s:\n%s", f.Muts, tc.member, msg)
				}
			}
			if tc.rule == RuleNoEcho && !strings.Contains(msg, "sk_canary_0123456789") {
				t.Errorf("the echo finding's reproduction lost the canary it is about:\n%s", msg)
			}
			for _, g := range res.Findings {
				if g.Rule != tc.rule && g.Rule != RuleParam {
					t.Errorf("defect %s also found under %s: %s", tc.defect, g.Rule, g.Message())
				}
			}
		})
	}
}

// hangTransport answers every request 400, except that a body whose input
// is there but not an object gets no answer before the timeout: what the
// client reports for a request the target holds. No time passes.
type hangTransport struct{ hung, sent int }

func (h *hangTransport) Do(_ context.Context, r client.Request) (*client.Response, error) {
	h.sent++
	var m map[string]any
	if json.Unmarshal(r.RawBody, &m) == nil {
		if v, ok := m["input"]; ok {
			if _, isObj := v.(map[string]any); !isObj {
				h.hung++
				return nil, &client.TransportError{Method: r.Method, URL: r.Path, Err: context.DeadlineExceeded}
			}
		}
	}
	return &client.Response{Method: r.Method, URL: "http://t" + r.Path, Status: 400, Header: http.Header{},
		Body: []byte(`{"error":{"code":"invalid_request","message":"m","type":"request_error"}}`)}, nil
}
func (h *hangTransport) Stream(ctx context.Context, r client.Request) (*client.Response, error) {
	return h.Do(ctx, r)
}
func (h *hangTransport) Alive(context.Context) bool   { return true }
func (h *hangTransport) Curl(r client.Request) string { return "curl " + r.Path }

// A target that hangs on malformed input has its verdict after two hangs:
// the pass stops there instead of waiting out a timeout per request.
func TestPassStopsOnHangs(t *testing.T) {
	tr := &hangTransport{}
	p := Pass{Doc: doc(t), T: tr, Seed: 5, Budget: 400}
	res := p.Run(context.Background(), []Target{{Base: submitBase(t)}})
	if tr.hung != 2 || res.Stopped == "" {
		t.Fatalf("%d hangs, stopped %q; want to stop after 2", tr.hung, res.Stopped)
	}
	fs := findingsOf(res, RuleAnswered)
	if len(fs) == 0 || len(fs) != len(res.Findings) {
		t.Fatalf("%d hang findings of %d, want only hang findings", len(fs), len(res.Findings))
	}
	for _, f := range fs {
		if !strings.Contains(f.Err.Error(), "a hang") || !strings.Contains(f.Message(), "curl ") {
			t.Errorf("a hang finding without its cause or reproduction:\n%s", f.Message())
		}
	}
	if tr.sent > 400 {
		t.Errorf("%d requests after the target hung", tr.sent)
	}
}

// naive is submitSessionTask written the way a server is when nobody
// thought about malformed input, in one of two common styles: lax decodes
// the body into a struct with encoding/json, answers a decoding error with
// http.Error and 500, and takes whatever decodes (no check of required
// members, enums or sizes); strict decodes with DisallowUnknownFields and
// answers any decoding error with http.Error and 400. Neither was written
// against the pass's rules: they are the defects the pass must find in
// servers it was not tuned to.
type naive struct {
	strict bool
	mu     sync.Mutex
	tasks  []string
}

type naiveSubmit struct {
	Input struct {
		Role  string `json:"role"`
		Parts []struct {
			Type       string `json:"type"`
			Text       string `json:"text"`
			Visibility string `json:"visibility"`
		} `json:"parts"`
	} `json:"input"`
	PersonaID *string        `json:"persona_id"`
	Metadata  map[string]any `json:"metadata"`
}

func (n *naive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1":
		fmt.Fprint(w, `{}`)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/s1/tasks":
		data := []any{}
		for _, id := range n.tasks {
			data = append(data, map[string]any{"id": id})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "page": map[string]any{"has_more": false, "next_cursor": nil}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/s1/tasks":
		var s naiveSubmit
		dec := json.NewDecoder(r.Body)
		if n.strict {
			dec.DisallowUnknownFields()
		}
		if err := dec.Decode(&s); err != nil {
			status := http.StatusInternalServerError
			if n.strict {
				status = http.StatusBadRequest
			}
			http.Error(w, err.Error(), status)
			return
		}
		n.tasks = append(n.tasks, fmt.Sprintf("task_%d", len(n.tasks)))
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q}`, n.tasks[len(n.tasks)-1])
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"resource_not_found","message":"no","type":"not_found_error"}}`)
	}
}

// Against servers it was not tuned to, the pass fails the right rules,
// each finding shrunk to one mutation, within its budget.
func TestPassOnNaiveServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		strict bool
		want   []Rule
		not    []Rule
	}{
		// A type error is a 500; a missing member, an enum from the
		// future, an empty string are taken.
		{"lax", false, []Rule{RuleAnswered, RuleRefused}, []Rule{RuleOpen}},
		// Every refusal is a 400 without the error envelope, and an
		// unknown member is refused.
		{"strict", true, []Rule{RuleRefused, RuleOpen}, []Rule{RuleAnswered}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&naive{strict: tc.strict})
			t.Cleanup(srv.Close)
			c, err := client.New(client.Options{BaseURL: srv.URL, APIKey: "key-0123456789", Timeout: slowMachine})
			if err != nil {
				t.Fatal(err)
			}
			target := Target{Base: submitBase(t), Watches: []Watch{{Path: "/v1/sessions/s1/tasks", List: true}}}
			p := Pass{Doc: doc(t), T: clientTransport{c}, Seed: 23, Budget: 120, Canary: "sk_canary_0123456789"}
			res := p.Run(context.Background(), []Target{target})
			for _, r := range tc.want {
				fs := findingsOf(res, r)
				if len(fs) == 0 {
					t.Errorf("no %s finding", r)
					continue
				}
				for _, f := range fs {
					if n := len(f.Muts); n == 0 || n > 2 || n == 2 && !f.Anchored {
						t.Errorf("a %s finding not shrunk to one mutation:\n%s", r, f.Message())
					}
					if !strings.Contains(f.Message(), "curl ") || !strings.Contains(f.Message(), "answer: ") {
						t.Errorf("a %s finding without its reproduction:\n%s", r, f.Message())
					}
				}
			}
			for _, r := range tc.not {
				for _, f := range findingsOf(res, r) {
					t.Errorf("a %s finding the server does not deserve:\n%s", r, f.Message())
				}
			}
			if res.Sent > 120 || res.Stopped != "" {
				t.Errorf("sent %d (budget 120), stopped %q", res.Sent, res.Stopped)
			}
		})
	}
}

// slowMachine is the fake servers' clients' timeout: no answer of theirs
// is a hang, however loaded the machine (the race detector and a shared
// machine made a 10,000-item body take more than the default 10 s); the
// test's own timeout is the backstop.
const slowMachine = 10 * time.Minute

// A missing member may be named by the object that lacks it, in any
// spelling, but not by a token that merely shares a name.
func TestNamesPath(t *testing.T) {
	ptr := []string{"message", "parts", "0"}
	for _, tc := range []struct {
		param string
		want  bool
	}{
		{"message.parts[0]", true},
		{"/message/parts/0", true},
		{"body.message.parts.0", true},
		{"parts[0]", false},
		{"message.parts[1]", false},
		{"message", false},
		{"", false},
	} {
		if got := namesPath(tc.param, ptr); got != tc.want {
			t.Errorf("namesPath(%q) = %v, want %v", tc.param, got, tc.want)
		}
	}
}
