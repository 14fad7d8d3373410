package openapi

import (
	"net/http"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

func TestValidateTraffic(t *testing.T) {
	d := mustDoc(t)
	auth := http.Header{"Authorization": {"Bearer [REDACTED]"}, "Harn-Agents-Protocol-Version": {"agents-protocol-2026-04-25"}}
	for _, tc := range []struct {
		name string
		tr   client.Traffic
		want []string // Kind + " " + Req of each violation
	}{
		{"clean", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/tasks/t", RequestHeader: auth, Status: 200, ResponseHeader: jsonCT, ResponseBody: js(task())}, nil},
		{"suite bug: no version", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/tasks/t", RequestHeader: http.Header{"Authorization": {"Bearer [REDACTED]"}},
			Status: 426, ResponseHeader: jsonCT, ResponseBody: js(errorEnv("unsupported_protocol_version", "request_error"))}, []string{"request "}},
		{"probe: request not judged, answer is", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/tasks/t", Probe: "version header left out",
			Status: 426, ResponseHeader: jsonCT, ResponseBody: []byte(`{"message":"upgrade"}`)}, []string{"response CORE-ERR-002"}},
		{"probe to an unknown route", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/no-such-thing", RequestHeader: auth, Probe: "unknown route",
			Status: 404, ResponseHeader: jsonCT, ResponseBody: js(errorEnv("resource_not_found", "not_found_error"))}, nil},
		{"unknown route without probe", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/no-such-thing", RequestHeader: auth,
			Status: 404, ResponseHeader: jsonCT, ResponseBody: js(errorEnv("resource_not_found", "not_found_error"))}, []string{"unmatched "}},
		{"truncated body not judged", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/tasks", RequestHeader: auth, Status: 200,
			ResponseHeader: jsonCT, ResponseBody: []byte(`{"object":"list","data":[`), Truncated: true}, nil},
		{"truncated body, status still judged", client.Traffic{Kind: "http", Method: "POST", Path: "/v1/tasks/t/cancel", RequestHeader: auth, Status: 201,
			ResponseHeader: jsonCT, ResponseBody: []byte(`{"id":`), Truncated: true}, []string{"response CORE-CANCEL-001"}},
		{"stream head", client.Traffic{Kind: "sse", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"text/event-stream"}}}, nil},
		{"stream refused with an envelope", client.Traffic{Kind: "sse", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 404,
			ResponseHeader: jsonCT, ResponseBody: []byte(`{"error":{"code":"resource_not_found","message":"m"}}`)}, []string{"response CORE-ERR-002"}},
		{"websocket refused, body unread", client.Traffic{Kind: "websocket", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 401,
			ResponseHeader: jsonCT}, nil},
		{"websocket refused, body read", client.Traffic{Kind: "websocket", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 401,
			ResponseHeader: jsonCT, ResponseBody: []byte(`{"message":"no"}`)}, []string{"response CORE-ERR-002"}},
		{"websocket event frame", client.Traffic{Kind: client.KindWSFrame, Method: "GET", Path: "/v1/tasks/t/stream", Component: "Event", Label: "frame 2",
			ResponseBody: js(event())}, nil},
		{"websocket event frame, broken Event", client.Traffic{Kind: client.KindWSFrame, Method: "GET", Path: "/v1/tasks/t/stream", Component: "Event", Label: "frame 2",
			ResponseBody: js(with(event(), "payload", "x"))}, []string{"response CORE-EVT-001"}},
		{"websocket refused in plain text", client.Traffic{Kind: "websocket", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 401,
			ResponseHeader: http.Header{"Content-Type": {"text/plain"}}}, []string{"response CORE-ERR-002"}},
		{"stream served as text", client.Traffic{Kind: "sse", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"text/plain"}}, ResponseBody: []byte("data: x\n\n")}, []string{"response CORE-SSE-001"}},
		{"truncated JSON with a wrong content type", client.Traffic{Kind: "http", Method: "GET", Path: "/v1/tasks", RequestHeader: auth, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"text/html"}}, ResponseBody: []byte(`{`), Truncated: true}, []string{"response CORE-PAGE-001"}},
		{"websocket upgraded", client.Traffic{Kind: "websocket", Method: "GET", Path: "/v1/tasks/t/stream", RequestHeader: auth, Status: 101}, nil},
	} {
		vs := d.ValidateTraffic(tc.tr)
		var got []string
		for _, v := range vs {
			got = append(got, v.Kind+" "+v.Req)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %q\n%s", tc.name, got, tc.want, errs(vs))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %q, want %q\n%s", tc.name, got, tc.want, errs(vs))
				break
			}
		}
	}
}
