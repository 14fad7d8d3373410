package openharness

import (
	"strings"
	"testing"
)

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return m
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in, err string // err: a substring of the error; "" = decodes
	}{
		{`{"a":1}`, ""},
		{" \n{\"a\": 12345678901234567890}\n ", ""},
		{``, "empty body"},
		{`{"a":`, "not JSON"},
		{`[]`, "JSON array, want an object"},
		{`"x"`, "JSON string"},
		{`null`, "JSON null"},
		{`{} {}`, "more data follows"},
		{`{}x`, "more data follows"},
	} {
		_, err := Decode([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Decode(%q) = %v, want it to decode", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Decode(%q) = %v, want an error containing %q", tc.in, err, tc.err)
		}
	}
	if _, err := Decode(make([]byte, MaxMessageBytes+1)); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Errorf("Decode of an oversize message = %v, want the bound named", err)
	}
	// Numbers stay exact: an id that is a large integer is echoed as sent.
	m := mustDecode(t, `{"request_id": 12345678901234567890}`)
	if miss, err := CheckEcho("request_id", m, m); miss || err != nil {
		t.Errorf("CheckEcho of a large number with itself = %v, %v", miss, err)
	}
}

func TestSemver(t *testing.T) {
	for s, want := range map[string]string{"1.0.0": "1", "1.0.0-draft": "1", "2.3.4+build.7": "2", "1.0": "", "v1.0.0": "", "01.0.0": "", "": ""} {
		if got := Major(s); got != want {
			t.Errorf("Major(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestCheckEcho(t *testing.T) {
	req := mustDecode(t, `{"request_id":"r1","correlation_id":"c1"}`)
	for _, tc := range []struct {
		resp, field string
		missing     bool
		err         bool
	}{
		{`{"request_id":"r1"}`, "request_id", false, false},
		{`{}`, "request_id", true, false},
		{`{"request_id":"r2"}`, "request_id", false, true},
		{`{"request_id":1}`, "request_id", false, true},
		{`{"correlation_id":"c1"}`, "correlation_id", false, false},
		{`{"correlation_id":"C1"}`, "correlation_id", false, true},
	} {
		miss, err := CheckEcho(tc.field, req, mustDecode(t, tc.resp))
		if miss != tc.missing || (err != nil) != tc.err {
			t.Errorf("CheckEcho(%s, %s) = %v, %v; want missing %v, error %v", tc.field, tc.resp, miss, err, tc.missing, tc.err)
		}
	}
	// A response to a request without ids may carry its own: the document
	// says nothing about it.
	if miss, err := CheckEcho("request_id", mustDecode(t, `{}`), mustDecode(t, `{"request_id":"engine-1"}`)); miss || err != nil {
		t.Errorf("CheckEcho without a request id = %v, %v; want nothing to report", miss, err)
	}
}

func TestCheckDenials(t *testing.T) {
	req := mustDecode(t, `{"capabilities":{"openharness.streaming":true,"x.y":false}}`)
	for _, tc := range []struct {
		resp                    string
		asked, codes, conflicts bool // true: the check finds something
	}{
		{`{"capability_denials":[{"capability":"openharness.streaming","code":"not_supported"}]}`, false, false, false},
		{`{"capability_denials":[{"capability":"x.y","code":"disabled_by_policy"}]}`, false, false, false},
		{`{"capability_denials":[{"capability":"openharness.voice","code":"not_supported"}]}`, true, false, false},
		{`{"capability_denials":[{"capability":"openharness.streaming"}]}`, false, true, false},
		{`{"supported_capabilities":{"openharness.streaming":true},"capability_denials":[{"capability":"openharness.streaming","code":"c"}]}`, false, false, true},
		{`{}`, false, false, false},
	} {
		doc := mustDecode(t, tc.resp)
		if got := CheckDenialsAsked(req, doc) != nil; got != tc.asked {
			t.Errorf("CheckDenialsAsked(%s) found %v, want %v", tc.resp, got, tc.asked)
		}
		if got := CheckDenialCodes(doc) != nil; got != tc.codes {
			t.Errorf("CheckDenialCodes(%s) found %v, want %v", tc.resp, got, tc.codes)
		}
		if got := CheckDenialConflicts(doc) != nil; got != tc.conflicts {
			t.Errorf("CheckDenialConflicts(%s) found %v, want %v", tc.resp, got, tc.conflicts)
		}
	}
}

func TestCheckNoBlobs(t *testing.T) {
	small := `data:image/png;base64,` + strings.Repeat("A", DataURIBlob-1)
	large := `data:image/png;base64,` + strings.Repeat("A", DataURIBlob)
	text := strings.Repeat("plain words ", PlainBlob/12+1)
	b64 := strings.Repeat("QUJD", PlainBlob/4)
	for _, tc := range []struct {
		v    any
		blob bool
	}{
		{map[string]any{"a": small}, false},
		{map[string]any{"a": large}, true},
		{[]any{map[string]any{"x": b64}}, true},
		{map[string]any{"a": b64[:PlainBlob-1]}, false},
		{map[string]any{"a": text}, false},
		{map[string]any{"uri": "https://example.com/a.png"}, false},
	} {
		err := CheckNoBlobs(tc.v)
		if (err != nil) != tc.blob {
			t.Errorf("CheckNoBlobs = %v, want a blob found: %v", err, tc.blob)
		}
		if err != nil && strings.Contains(err.Error(), "AAAA") {
			t.Errorf("the finding repeats the blob: %.100s", err)
		}
	}
}

func TestExtensionKeys(t *testing.T) {
	for k, ok := range map[string]bool{"com.example": true, "com.example.kiosk": true, "https://example.org/x": true, "urn:example:x": true,
		"example": false, "trace": false, ".com": false, "": false} {
		if ExtensionKeyOK(k) != ok {
			t.Errorf("ExtensionKeyOK(%q) = %v, want %v", k, !ok, ok)
		}
	}
	// Keys of payloads and details are type-specific data, not extensions.
	doc := mustDecode(t, `{"response":{"action_directives":[{"action_type":"x","payload":{"extensions":{"bare":1}}}]}}`)
	if err := CheckExtensionKeys(doc); err != nil {
		t.Errorf("CheckExtensionKeys looked into a payload: %v", err)
	}
}

func TestCheckNotEchoed(t *testing.T) {
	planted := map[string]string{"request.auth.token": "tok-123", "email": "a@example.com"}
	if err := CheckNotEchoed(`{"message":"bad request"}`, "the error", planted); err != nil {
		t.Errorf("clean text: %v", err)
	}
	err := CheckNotEchoed(`{"message":"bad token tok-123 for a@example.com"}`, "the error", planted)
	if err == nil || strings.Contains(err.Error(), "tok-123") || strings.Contains(err.Error(), "a@example.com") {
		t.Errorf("CheckNotEchoed = %v; want a finding that names where, never the value", err)
	}
	if !strings.Contains(err.Error(), "email, request.auth.token") {
		t.Errorf("CheckNotEchoed = %v; want both places named, sorted", err)
	}
}

func TestCheckFailureAndErrors(t *testing.T) {
	for _, tc := range []struct {
		doc                    string
		failure, present, code bool // true: the check finds something
	}{
		{`{"response":{"status":"error","error":{"code":"invalid_request"}}}`, false, false, false},
		{`{"response":{"status":"success"}}`, true, false, false},
		{`{"response":{"status":"error"}}`, false, true, false},
		{`{"response":{"status":"error","error":{"code":""}}}`, false, false, true},
		{`{"response":{"status":"error","error":"boom"}}`, false, false, true},
		{`{"response":{}}`, true, false, false},
	} {
		d := mustDecode(t, tc.doc)
		if got := CheckFailureStatus(d, "x") != nil; got != tc.failure {
			t.Errorf("CheckFailureStatus(%s) found %v, want %v", tc.doc, got, tc.failure)
		}
		if got := CheckErrorPresent(d) != nil; got != tc.present {
			t.Errorf("CheckErrorPresent(%s) found %v, want %v", tc.doc, got, tc.present)
		}
		if got := CheckErrorCode(d) != nil; got != tc.code {
			t.Errorf("CheckErrorCode(%s) found %v, want %v", tc.doc, got, tc.code)
		}
	}
}
