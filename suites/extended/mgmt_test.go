package extended

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

// The pure judgements of the memory, quota and connector specs.

func TestDeletedMemory(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		ok     bool
	}{
		{404, `{"error":{"code":"resource_not_found","message":"x","type":"not_found_error"}}`, true},
		{410, ``, true},
		{200, `{"id":"m","deleted":true}`, true},
		{200, `{"id":"m","deleted_at":"2026-04-25T19:00:00Z"}`, true},
		{200, `{"id":"m","deleted_at":null}`, false},
		{200, `{"id":"m","object":"memory"}`, false},
		{400, `{}`, false},
	} {
		err := deletedMemory(&client.Response{Status: tc.status, Body: []byte(tc.body), Method: http.MethodGet, URL: "/v1/memories/m"})
		if (err == nil) != tc.ok {
			t.Errorf("%d %s: %v, want ok=%v", tc.status, tc.body, err, tc.ok)
		}
	}
}

func TestQuotaFields(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":"q","object":"quota","scope":"workspace","limits":{"tasks":1},"usage":{}}`: "",
		`{"id":"q","object":"quota","scope":"session","limits":{"tasks":1},"usage":{}}`:   "scope",
		`{"id":"q","object":"quota","scope":"tenant","limits":{},"usage":{}}`:             "numeric limit",
		`{"id":"q","object":"quota","scope":"tenant","limits":{"tasks":"1"},"usage":{}}`:  "numeric limit",
		`{"id":"q","object":"quota","scope":"tenant","limits":{"tasks":1}}`:               "usage",
	} {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		err := quotaFields(m)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", body, err, want)
		}
	}
}

func TestStableKeys(t *testing.T) {
	ev := func(delivery, key string) map[string]any {
		return map[string]any{"event": "connector.delivery_received", "payload": map[string]any{"delivery_id": delivery, "dedupe_key": key}}
	}
	for name, tc := range map[string]struct {
		evs  []map[string]any
		want string
	}{
		"stable":       {[]map[string]any{ev("d1", "k1"), ev("d1", "k1"), ev("d2", "k2")}, ""},
		"changes":      {[]map[string]any{ev("d1", "k1"), ev("d1", "k1b")}, "one stable"},
		"empty":        {[]map[string]any{ev("d1", ""), ev("d1", "")}, "one stable"},
		"shared":       {[]map[string]any{ev("d1", "k"), ev("d2", "k")}, "share the dedupe key"},
		"not reported": {nil, "no connector event names"},
	} {
		err := stableKeys(tc.evs, "d1", "d2")
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
