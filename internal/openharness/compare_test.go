package openharness

import (
	"strings"
	"testing"
)

func TestCheckSameAnswer(t *testing.T) {
	const plain = `{"protocol_version":"1.0.0","request_id":"r1","correlation_id":"c1","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[],
		"response":{"status":"success","engine_latency_ms":0,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:01"}}]}}`
	const again = `{"protocol_version":"1.0.0","request_id":"r3","correlation_id":"c3","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[],
		"response":{"status":"success","engine_latency_ms":2,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:03"}}]}}`
	for _, tc := range []struct {
		name, probe string
		ignored     []string
		want        string // "" for no finding
	}{
		{"the same answer, other ids, latency and time", `{"protocol_version":"1.0.0","request_id":"r2","correlation_id":"c2","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[],
			"response":{"status":"success","engine_latency_ms":1,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:02"}}]}}`, nil, ""},
		{"a denial of the ignored key", `{"protocol_version":"1.0.0","request_id":"r2","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[{"capability":"com.x.unknown","code":"not_supported"}],
			"response":{"status":"success","engine_latency_ms":1,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:02"}}]}}`, []string{"com.x.unknown"}, ""},
		{"an added dangerous directive", `{"protocol_version":"1.0.0","request_id":"r2","correlation_id":"c2","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[],
			"response":{"status":"success","engine_latency_ms":1,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:02"}},{"action_type":"simulate_action","risk_tier":"dangerous"}]}}`, nil, "/response/action_directives/1 is"},
		{"a changed risk tier", `{"protocol_version":"1.0.0","request_id":"r2","correlation_id":"c2","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[],
			"response":{"status":"success","engine_latency_ms":1,"action_directives":[{"action_type":"render_message","risk_tier":"dangerous","payload":{"message":"hi","at":"10:00:02"}}]}}`, nil, "/response/action_directives/0/risk_tier is \"dangerous\", want \"safe\""},
		{"a refusal", `{"protocol_version":"1.0.0","request_id":"r2","response":{"status":"error","error":{"code":"invalid_request"}}}`, nil, "/response/status is \"error\", want \"success\""},
		{"a denial of a key that is not ignored", `{"protocol_version":"1.0.0","request_id":"r2","supported_capabilities":{"openharness.ui.approval":true},"capability_denials":[{"capability":"openharness.ui.approval"}],
			"response":{"status":"success","engine_latency_ms":1,"action_directives":[{"action_type":"render_message","risk_tier":"safe","payload":{"message":"hi","at":"10:00:02"}}]}}`, []string{"com.x.unknown"}, "/capability_denials"},
	} {
		err := CheckSameAnswer(Answers{Plain: mustDecode(t, plain), Again: mustDecode(t, again), Probe: mustDecode(t, tc.probe), Ignored: tc.ignored}, "unknown members")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no finding", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a finding naming %q", tc.name, err, tc.want)
		}
	}
}
