package openapi

import (
	"net/http"
	"testing"
)

func TestRequestShapes(t *testing.T) {
	d := mustDoc(t)
	s, ok := d.RequestSchema("appendSessionMessage")
	if !ok {
		t.Fatal("appendSessionMessage has no request schema")
	}
	r := d.Deref(s)
	if req, _ := r["required"].([]any); len(req) != 1 || req[0] != "message" {
		t.Errorf("AppendMessageRequest.required = %v, want [message]", r["required"])
	}
	if _, ok := d.RequestSchema("getTask"); ok {
		t.Error("getTask has a request schema")
	}
	var limit *Param
	for _, p := range d.Params("listTasks") {
		if p.Name == "limit" {
			limit = &p
		}
	}
	if limit == nil || limit.In != "query" || d.Deref(limit.Schema)["maximum"] == nil {
		t.Errorf("listTasks limit = %+v, want a query parameter with a maximum", limit)
	}
	if d.Deref(map[string]any{"$ref": "#/components/schemas/NoSuchThing"}) != nil {
		t.Error("a broken $ref resolved")
	}
}

func TestValidateRequestBody(t *testing.T) {
	d := mustDoc(t)
	js := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		op, ptr, keyword         string
	}{
		{"valid", "POST", "/v1/sessions/s/messages", `{"message":{"role":"user","parts":[]}}`, js, "appendSessionMessage", "", ""},
		{"enum", "POST", "/v1/sessions/s/messages", `{"message":{"role":"narrator","parts":[]}}`, js, "appendSessionMessage", "/message/role", "enum"},
		{"a part's type of the wrong JSON type", "POST", "/v1/sessions/s/messages", `{"message":{"role":"user","parts":[{"type":7,"text":"x","visibility":"public"}]}}`, js, "appendSessionMessage", "/message/parts/0/type", "type"},
		{"a part without its type", "POST", "/v1/sessions/s/messages", `{"message":{"role":"user","parts":[{"text":"x","visibility":"public"}]}}`, js, "appendSessionMessage", "/message/parts/0/type", "required"},
		{"missing", "POST", "/v1/sessions/s/messages", `{}`, js, "appendSessionMessage", "/message", "required"},
		{"content type", "POST", "/v1/sessions/s/messages", `{}`, http.Header{"Content-Type": {"text/plain"}}, "appendSessionMessage", "", "contentType"},
		{"no body where one is required", "POST", "/v1/sessions/s/messages", ``, js, "appendSessionMessage", "", ""},
		{"no body where none is required", "POST", "/v1/tasks/t/cancel", ``, js, "cancelTask", "", ""},
		{"no such route", "POST", "/v1/nothing", `{}`, js, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, vs := d.ValidateRequestBody(tc.method, tc.path, tc.header, []byte(tc.body))
			if op != tc.op {
				t.Fatalf("operation %q, want %q", op, tc.op)
			}
			wantNone := tc.name == "valid" || tc.op == "" || tc.name == "no body where none is required"
			if wantNone {
				if len(vs) > 0 {
					t.Fatalf("violations of a valid body: %v", vs)
				}
				return
			}
			if len(vs) == 0 {
				t.Fatal("no violation")
			}
			if vs[0].Pointer != tc.ptr || vs[0].Keyword != tc.keyword {
				t.Errorf("first violation at %q (%s), want %q (%s): %v", vs[0].Pointer, vs[0].Keyword, tc.ptr, tc.keyword, vs[0])
			}
			if tc.keyword == "enum" && len(vs[0].Want) != 5 {
				t.Errorf("enum want = %v, want the five roles", vs[0].Want)
			}
		})
	}
}
