package check

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

const badReq = `{"error":{"code":"invalid_request","message":"field persona_id: value is a number, want string","type":"request_error","param":"persona_id"}}`

func TestHostileAnswered(t *testing.T) {
	if err := HostileAnswered(resp(400, badReq), nil, true); err != nil {
		t.Errorf("a 400: %v", err)
	}
	if err := HostileAnswered(resp(500, `{"error":{"code":"internal_error","message":"boom","type":"server_error"}}`), nil, true); err == nil || !strings.Contains(err.Error(), "internal_error") {
		t.Errorf("a 500 passed or its code is not named: %v", err)
	}
	hang := &client.TransportError{Method: "POST", URL: "u", Err: context.DeadlineExceeded}
	if err := HostileAnswered(nil, hang, true); err == nil || !strings.Contains(err.Error(), "hang") {
		t.Errorf("a hang: %v", err)
	}
	drop := &client.TransportError{Method: "POST", URL: "u", Err: errors.New("EOF")}
	if err := HostileAnswered(nil, drop, false); err == nil || !strings.Contains(err.Error(), "crash") {
		t.Errorf("a drop that took the target down: %v", err)
	}
}

func TestHostileRefused(t *testing.T) {
	ok := []struct {
		r             *client.Response
		strict, sized bool
	}{
		{resp(400, badReq), true, false},
		{resp(404, `{"error":{"code":"resource_not_found","message":"m","type":"not_found_error"}}`), false, false},
		{resp(413, `{"error":{"code":"payload_too_large","message":"m","type":"request_error"}}`), true, true},
		{resp(500, `{}`), true, false}, // HostileAnswered's to judge
	}
	for _, c := range ok {
		if err := HostileRefused(c.r, c.strict, c.sized); err != nil {
			t.Errorf("%d: %v", c.r.Status, err)
		}
	}
	bad := []struct {
		r             *client.Response
		strict, sized bool
	}{
		{resp(201, `{"id":"x"}`), false, false},
		{resp(422, `{"error":{"code":"invalid_request","message":"m","type":"request_error"}}`), true, false},
		{resp(400, `{"error":{"code":"conflict","message":"m","type":"conflict_error"}}`), true, false},
		{resp(413, `{"error":{"code":"payload_too_large","message":"m","type":"request_error"}}`), true, false},
	}
	for _, c := range bad {
		if err := HostileRefused(c.r, c.strict, c.sized); err == nil {
			t.Errorf("%d %s passed (strict %v)", c.r.Status, c.r.Body, c.strict)
		}
	}
}

func TestHostileNoEcho(t *testing.T) {
	canary := "sk_conform_canary_0123"
	echo := resp(400, `{"error":{"code":"invalid_request","message":"m","type":"request_error","details":{"request":"{\"metadata\":{\"api_key\":\"sk_conform_canary_0123\"}}"}}}`)
	if err := HostileNoEcho(echo, canary, nil); err == nil || strings.Contains(err.Error(), canary) {
		t.Errorf("an echoed canary: %v (the message must not repeat it)", err)
	}
	hdr := resp(400, badReq)
	hdr.Header = http.Header{"X-Debug": {"key=secret-key-1"}}
	if err := HostileNoEcho(hdr, canary, func(s string) bool { return strings.Contains(s, "secret-key-1") }); err == nil || !strings.Contains(err.Error(), "X-Debug") {
		t.Errorf("the run's key in a header: %v", err)
	}
	if err := HostileNoEcho(resp(400, badReq), canary, nil); err != nil {
		t.Errorf("a clean error: %v", err)
	}
	if err := HostileNoEcho(resp(201, `{"metadata":{"api_key":"sk_conform_canary_0123"}}`), canary, nil); err != nil {
		t.Errorf("a success is not an error answer: %v", err)
	}
}

func TestHostileOpen(t *testing.T) {
	base := resp(201, `{"id":"a"}`)
	if err := HostileOpen(resp(201, `{"id":"b"}`), base, "conform_x"); err != nil {
		t.Error(err)
	}
	err := HostileOpen(resp(400, `{"error":{"code":"invalid_request","message":"unknown field","type":"request_error","param":"conform_x"}}`), base, "conform_x")
	if err == nil || !strings.Contains(err.Error(), `naming "conform_x"`) {
		t.Errorf("a refused unknown member: %v", err)
	}
	if err := HostileOpen(resp(400, badReq), resp(409, `{}`), "conform_x"); err != nil {
		t.Errorf("a base that was refused too: %v", err)
	}
}

func TestSnapshotAndStateUnchanged(t *testing.T) {
	list := func(ids ...string) *client.Response {
		var items []string
		for _, id := range ids {
			items = append(items, `{"id":"`+id+`"}`)
		}
		return resp(200, `{"object":"list","data":[`+strings.Join(items, ",")+`],"page":{"has_more":false,"next_cursor":null}}`)
	}
	a, err := Snapshot(list("m2", "m1"), true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Snapshot(list("m1", "m2"), true)
	if err := StateUnchanged("GET /x", a, b); err != nil {
		t.Errorf("the same ids in another order: %v", err)
	}
	c, _ := Snapshot(list("m1", "m2", "m3"), true)
	if err := StateUnchanged("GET /x", a, c); err == nil || !strings.Contains(err.Error(), "new items m3") {
		t.Errorf("a new item: %v", err)
	}
	o1, _ := Snapshot(resp(200, `{"id":"s","summary":"a"}`), false)
	o2, _ := Snapshot(resp(200, `{"summary":"b","id":"s"}`), false)
	if err := StateUnchanged("GET /s", o1, o2); err == nil {
		t.Error("a changed object passed")
	}
	if _, err := Snapshot(resp(404, `{}`), true); err == nil {
		t.Error("a 404 read as state")
	}
}
