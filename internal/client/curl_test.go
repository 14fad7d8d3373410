package client

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/redact"
)

// shellArgs runs a curl line through sh with curl swapped for printf, so the
// test sees the exact arguments curl would get, with $CONFORM_API_KEY set.
func shellArgs(t *testing.T, line string) []string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	rest, ok := strings.CutPrefix(line, "curl ")
	if !ok {
		t.Fatalf("not a curl line: %q", line)
	}
	cmd := exec.Command("sh", "-c", `printf '%s\n' `+rest)
	cmd.Env = append(os.Environ(), KeyVariable+"="+key)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func headerArgs(args []string) []string {
	var hs []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-H" {
			hs = append(hs, args[i+1])
		}
	}
	return hs
}

// The curl line reproduces the headers that were sent: a deliberately
// malformed Authorization stays malformed (it once became the real key),
// the configured key is read from $CONFORM_API_KEY wherever it was sent,
// and other configured secrets are redacted.
func TestCurlReproducesSentHeaders(t *testing.T) {
	const other = "other-secret-4242"
	c, err := New(Options{BaseURL: "http://h.invalid/p", APIKey: key, ProtocolVersion: "v-test", Redactor: redact.New(key, other)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want string // the Authorization header curl gets; "" = none
		text string // must not be in the line itself
	}{
		{"configured key", Request{Path: "/v1/tasks"}, "Authorization: Bearer " + key, key},
		{"no credential", Request{Path: "/v1/tasks", Authorization: "Bearer"}, "Authorization: Bearer", ""},
		{"another scheme", Request{Path: "/v1/tasks", Authorization: "Basic Y29uZm9ybTp4"}, "Authorization: Basic Y29uZm9ybTp4", ""},
		{"unknown scheme", Request{Path: "/v1/tasks", Authorization: "Token sk-conform-not-a-key"}, "Authorization: Token sk-conform-not-a-key", ""},
		{"wrong key", Request{Path: "/v1/tasks", Authorization: "Bearer sk-conform-wrong"}, "Authorization: Bearer sk-conform-wrong", ""},
		{"real key with a suffix", Request{Path: "/v1/tasks", Authorization: "Bearer " + key + "-conform-wrong"}, "Authorization: Bearer " + key + "-conform-wrong", key},
		{"no auth", Request{Path: "/v1/tasks", NoAuth: true}, "", ""},
		{"hostile quotes", Request{Path: "/v1/tasks", Authorization: `Bearer '$(touch /tmp/x)'"` + "`id`"}, `Authorization: Bearer '$(touch /tmp/x)'"` + "`id`", ""},
	} {
		line := c.Curl(tc.req)
		if tc.text != "" && strings.Contains(line, tc.text) {
			t.Errorf("%s: the curl line shows a secret: %s", tc.name, line)
		}
		var auth []string
		for _, h := range headerArgs(shellArgs(t, line)) {
			if strings.HasPrefix(h, "Authorization:") {
				auth = append(auth, h)
			}
		}
		switch {
		case tc.want == "" && len(auth) != 0:
			t.Errorf("%s: curl sends %q, want no Authorization", tc.name, auth)
		case tc.want != "" && (len(auth) != 1 || auth[0] != tc.want):
			t.Errorf("%s: curl sends %q, want %q\n%s", tc.name, auth, tc.want, line)
		}
	}
	// Another secret in a header or the body is redacted, never sent.
	line := c.Curl(Request{Method: http.MethodPost, Path: "/v1/tasks", Header: http.Header{"X-Note": {"has " + other}},
		RawBody: []byte(`{"k":"` + other + `","key":"` + key + `"}`)})
	if strings.Contains(line, other) || strings.Contains(line, key) {
		t.Errorf("curl line leaks a secret: %s", line)
	}
	args := shellArgs(t, line)
	if got := strings.Join(args, "\n"); !strings.Contains(got, "X-Note: has "+redact.Marker) ||
		!strings.Contains(got, `{"k":"`+redact.Marker+`","key":"`+key+`"}`) || !strings.Contains(got, "Accept: application/json") {
		t.Errorf("curl arguments = %q", args)
	}
}

// The recorded transcript's curl line is the same reproduction.
func TestRecordedCurlKeepsMalformedAuthorization(t *testing.T) {
	c, rec := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }), "")
	c.Do(context.Background(), Request{Path: "/v1/tasks", Authorization: "Bearer"})
	ex, _ := rec.Exchanges()
	if len(ex) != 1 {
		t.Fatalf("exchanges = %d", len(ex))
	}
	if strings.Contains(ex[0].Curl, KeyVariable) {
		t.Errorf("curl %q sends the configured key where the request sent none", ex[0].Curl)
	}
	if hs := headerArgs(shellArgs(t, ex[0].Curl)); !strings.Contains(strings.Join(hs, "\n"), "Authorization: Bearer\n") &&
		!strings.HasSuffix(strings.Join(hs, "\n"), "Authorization: Bearer") {
		t.Errorf("curl headers = %q, want Authorization: Bearer as sent", hs)
	}
}
