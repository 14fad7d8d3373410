package check

import (
	"strings"
	"testing"
)

func errBody(code string) string {
	return `{"error":{"code":"` + code + `","message":"m","type":"not_found_error"}}`
}

func TestUnoffered(t *testing.T) {
	rnf, route := resp(404, errBody("resource_not_found")), resp(404, errBody("route_not_found"))
	known := []string{"session s1"}
	for _, tc := range []struct {
		name    string
		o       Offer
		why     string // substring of why ("" when offered)
		failure string // substring of the error ("" when none)
	}{
		{"answered", Offer{Answer: resp(200, `{}`)}, "", ""},
		{"answered with an error of its own", Offer{Answer: resp(400, errBody("invalid_request")), Shown: []string{"x"}}, "", ""},
		{"501", Offer{Answer: resp(501, errBody("not_implemented"))}, "does not offer", ""},
		{"405", Offer{Answer: resp(405, "")}, "does not offer", ""},
		{"404 like a made-up route", Offer{Answer: route, Sibling: route, Known: known}, "as a route that cannot exist", ""},
		{"404 resource_not_found like a made-up route (a generic router)", Offer{Answer: rnf, Sibling: rnf, Known: known}, "as a route that cannot exist", ""},
		{"404 without an envelope, like a made-up route", Offer{Answer: resp(404, "nope"), Sibling: resp(404, "not here")}, "as a route that cannot exist", ""},
		// The failures.
		{"404 resource_not_found where a made-up route is route_not_found", Offer{Answer: rnf, Sibling: route, Known: known}, "", "the operation's route exists"},
		{"404 where a made-up route is 405", Offer{Answer: route, Sibling: resp(405, "")}, "", "route exists"},
		{"404 resource_not_found for a known id, no comparison", Offer{Answer: rnf, Known: known}, "", "which the suite has just read"},
		{"404 resource_not_found for a known id, the sibling answered 400", Offer{Answer: rnf, Sibling: resp(400, errBody("invalid_request")), Known: known}, "", "is missing, not the operation"},
		{"shown by another transport", Offer{Answer: route, Sibling: route, Shown: []string{"the WebSocket truncate_session answered 200"}}, "", "but it is offered: the WebSocket"},
		{"501 shown by a list", Offer{Answer: resp(501, ""), Shown: []string{"GET /v1/tools lists t1"}}, "", "lists t1"},
		// Without a comparison and without a known id, a 404 is taken as the target says.
		{"404 route_not_found, no comparison", Offer{Answer: route}, "does not offer", ""},
	} {
		why, err := Unoffered(tc.o)
		switch {
		case tc.failure != "" && (err == nil || !strings.Contains(err.Error(), tc.failure)):
			t.Errorf("%s: Unoffered = %q, %v; want the failure %q", tc.name, why, err, tc.failure)
		case tc.failure == "" && err != nil:
			t.Errorf("%s: Unoffered failed: %v", tc.name, err)
		case tc.why == "" && why != "":
			t.Errorf("%s: Unoffered = %q, want offered", tc.name, why)
		case tc.why != "" && !strings.Contains(why, tc.why):
			t.Errorf("%s: Unoffered = %q, want %q", tc.name, why, tc.why)
		}
		if err != nil && why != "" {
			t.Errorf("%s: both a reason not offered and a failure: %q, %v", tc.name, why, err)
		}
	}
}

func TestSiblingPath(t *testing.T) {
	for _, tc := range []struct{ path, template, want string }{
		{"/v1/sessions/s1/truncate", "/v1/sessions/{session_id}/truncate", "/v1/sessions/s1/X"},
		{"/v1/tools/t1", "/v1/tools/{tool_id}", "/v1/X/t1"},
		{"/v1/tools/a%2Fb", "/v1/tools/{tool_id}", "/v1/X/a%2Fb"},
		{"/health", "/health", "/X"},
		{"/v1/workspaces/w1/files", "/v1/workspaces/{workspace_id}/files", "/v1/workspaces/w1/X"},
		{"/v1/tasks/t1/permission-requests", "/v1/tasks/{task_id}/permission-requests", "/v1/tasks/t1/X"},
		{"/v1/things/t1", "", "/v1/things/X"},
		{"/v1/things/t1", "/v1/{a}/{b}", "/X/things/t1"},
	} {
		if got := SiblingPath(tc.path, tc.template, "X"); got != tc.want {
			t.Errorf("SiblingPath(%s, %s) = %s, want %s", tc.path, tc.template, got, tc.want)
		}
	}
}
