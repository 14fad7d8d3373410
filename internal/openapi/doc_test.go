package openapi

import (
	"net/http"
	"slices"
	"sort"
	"testing"
)

func mustDoc(t testing.TB) *Doc {
	t.Helper()
	d, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return d
}

func TestDefaultLoadsOnce(t *testing.T) {
	a, b := mustDoc(t), mustDoc(t)
	if a != b {
		t.Error("Default returned two documents")
	}
	if n := len(a.Operations()); n < 70 {
		t.Errorf("Operations() has %d operations, want the document's 72 plus the addition", n)
	}
}

func TestMatch(t *testing.T) {
	d := mustDoc(t)
	for _, tc := range []struct {
		method, path string
		want         string // operationId, "" for no match
		template     string
	}{
		{"GET", "/v1", "getProtocolDiscovery", "/v1"},
		{"GET", "/v1/agent-card", "getAgentCard", "/v1/agent-card"},
		{"get", "/v1/tasks/task_1", "getTask", "/v1/tasks/{task_id}"},
		{"GET", "/v1/tasks/task_1/events", "listTaskEvents", "/v1/tasks/{task_id}/events"},
		{"GET", "/v1/tasks/task_1/events?after_event_id=e1", "listTaskEvents", "/v1/tasks/{task_id}/events"},
		{"POST", "/v1/sessions/s1/tasks", "submitSessionTask", "/v1/sessions/{session_id}/tasks"},
		{"POST", "/v1/tasks", "submitTask", "/v1/tasks"},
		// A literal segment beats a parameter.
		{"GET", "/v1/events/stream", "streamEvents", "/v1/events/stream"},
		{"GET", "/v1/events/evt_1", "getEvent", "/v1/events/{event_id}"},
		{"GET", "/v1/sessions/s1/events/stream", "streamSessionEvents", "/v1/sessions/{session_id}/events/stream"},
		// An escaped slash stays inside its segment.
		{"GET", "/v1/tasks/a%2Fb", "getTask", "/v1/tasks/{task_id}"},
		{"GET", "/v1/tasks/a%2Fb/events", "listTaskEvents", "/v1/tasks/{task_id}/events"},
		// The key directory addition (A1) and the receipt read next to it.
		{"GET", "/v1/receipt-keys", "getReceiptKeyDirectory", "/v1/receipt-keys"},
		{"GET", "/v1/receipts/keys", "getReceipt", "/v1/receipts/{receipt_id}"},
		{"DELETE", "/v1/memories/m1", "deleteMemory", "/v1/memories/{memory_id}"},
		// No match.
		{"DELETE", "/v1/tasks/t1", "", ""},
		{"GET", "/v1/tasks/", "", ""},
		{"GET", "/v1/tasks//events", "", ""},
		{"GET", "/v1/nothing", "", ""},
		{"GET", "/api/v1/tasks", "", ""}, // the base prefix must already be stripped
		{"GET", "v1/tasks", "", ""},
		{"GET", "", "", ""},
		{"HEAD", "/v1/tasks", "", ""},
	} {
		op, ok := d.Match(tc.method, tc.path)
		if ok != (tc.want != "") || op.ID != tc.want || op.Template != tc.template {
			t.Errorf("Match(%s, %q) = %q %q %v, want %q %q", tc.method, tc.path, op.ID, op.Template, ok, tc.want, tc.template)
		}
	}
}

func TestOperationFacts(t *testing.T) {
	d := mustDoc(t)
	for _, tc := range []struct {
		id   string
		want Operation
	}{
		{"getProtocolDiscovery", Operation{Method: "GET", Template: "/v1", Public: true, Success: []int{200}}},
		{"getAgentCard", Operation{Method: "GET", Template: "/v1/agent-card", Public: true, Success: []int{200}}},
		{"submitSessionTask", Operation{Method: "POST", Template: "/v1/sessions/{session_id}/tasks", Idempotent: true, Versioned: true,
			Success: []int{202}, HasBody: true, BodyRequired: true, PathParams: []string{"session_id"}}},
		{"cancelTask", Operation{Method: "POST", Template: "/v1/tasks/{task_id}/cancel", Idempotent: true, Versioned: true,
			Success: []int{200}, HasBody: true, PathParams: []string{"task_id"}}},
		{"deleteMemory", Operation{Method: "DELETE", Template: "/v1/memories/{memory_id}", Idempotent: true, Versioned: true,
			Success: []int{204}, PathParams: []string{"memory_id"}}},
		{"streamTaskEvents", Operation{Method: "GET", Template: "/v1/tasks/{task_id}/stream", Versioned: true,
			Success: []int{200}, Stream: true, WebSocket: true, PathParams: []string{"task_id"}}},
		{"listTasks", Operation{Method: "GET", Template: "/v1/tasks", Versioned: true, Success: []int{200},
			QueryParams: []string{"cursor", "limit", "session_id", "workspace_id"}}},
		{"getHealth", Operation{Method: "GET", Template: "/health", Public: true, Success: []int{200}, LocalServer: true}},
		{"getReceiptKeyDirectory", Operation{Method: "GET", Template: "/v1/receipt-keys", Versioned: true, Success: []int{200}, Extension: true}},
	} {
		got, ok := d.Operation(tc.id)
		tc.want.ID = tc.id
		if !ok || !equalOp(got, tc.want) {
			t.Errorf("Operation(%s) =\n %+v\nwant\n %+v", tc.id, got, tc.want)
		}
	}
}

func equalOp(a, b Operation) bool {
	return a.ID == b.ID && a.Method == b.Method && a.Template == b.Template && a.Public == b.Public &&
		a.Idempotent == b.Idempotent && a.Versioned == b.Versioned && slices.Equal(a.Success, b.Success) &&
		a.HasBody == b.HasBody && a.BodyRequired == b.BodyRequired && a.Stream == b.Stream && a.WebSocket == b.WebSocket &&
		slices.Equal(a.PathParams, b.PathParams) && slices.Equal(a.QueryParams, b.QueryParams) &&
		a.LocalServer == b.LocalServer && a.Extension == b.Extension
}

func TestOperationsAreSortedAndProbeable(t *testing.T) {
	ops := mustDoc(t).Operations()
	if !sort.SliceIsSorted(ops, func(i, j int) bool {
		if ops[i].Template != ops[j].Template {
			return ops[i].Template < ops[j].Template
		}
		return ops[i].Method < ops[j].Method
	}) {
		t.Error("Operations() is not sorted by template, then method")
	}
	public := 0
	for _, o := range ops {
		if o.ID == "" || len(o.Success) == 0 {
			t.Errorf("%s %s: no operationId or no success status", o.Method, o.Template)
		}
		// Every non-public operation takes the version header, so one auth
		// probe and one version probe per operation are meaningful.
		if !o.Public && !o.Versioned {
			t.Errorf("%s is not public but does not require the version header", o.ID)
		}
		if o.Public {
			public++
			if !o.LocalServer && o.ID != "getProtocolDiscovery" && o.ID != "getAgentCard" {
				t.Errorf("%s is public; the narrative names only discovery and the agent card", o.ID)
			}
		}
	}
	if public != 5 {
		t.Errorf("%d public operations, want 5 (discovery, agent card, health, version, openapi.json)", public)
	}
	// Operations returns copies.
	ops[0].Success[0] = 999
	if mustDoc(t).Operations()[0].Success[0] == 999 {
		t.Error("Operations() shares its slices with the document")
	}
}

// Schemas compile on first use (lazySchema); this compiles every one the
// operations use, so a patch or a vendored-document change that breaks
// one fails here, not in some run that happens to reach it.
func TestEverySchemaCompiles(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	try := func(what string, l *lazySchema) {
		if l == nil {
			return
		}
		n++
		if _, err := d.compiled(l); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	for _, o := range d.ops {
		for _, p := range o.params {
			try(o.ID+" parameter "+p.name, p.schema)
		}
		for mt, m := range o.body {
			try(o.ID+" request "+mt, m.schema)
		}
		for key, r := range o.responses {
			for mt, m := range r.content {
				try(o.ID+" "+key+" "+mt, m.schema)
			}
		}
	}
	if n < 100 {
		t.Errorf("compiled %d schemas; the document has far more", n)
	}
}

// A schema that does not compile is the document's defect, reported as
// such, never a verdict on the target.
func TestUncompilableSchemaIsADocumentDefect(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var get *op
	for _, o := range d.ops {
		if o.ID == "getTask" {
			get = o
		}
	}
	if get == nil || get.responses["200"] == nil || get.responses["200"].content["application/json"] == nil {
		t.Fatal("getTask has no 200 application/json response")
	}
	get.responses["200"].content["application/json"].schema = &lazySchema{url: docURL + "#/no/such/schema"}
	vs := d.ValidateResponse("GET", "/v1/tasks/task_1", 200, http.Header{"Content-Type": {"application/json"}}, []byte(`{}`))
	if len(vs) != 1 || vs[0].Kind != KindDocument || vs[0].Req != "" {
		t.Errorf("got %v; want one document defect and no verdict on the target", vs)
	}
}
