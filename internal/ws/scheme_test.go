package ws

import (
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.9.8.7": true, "::1": true,
		"10.0.0.1": false, "harness.example.com": false, "localhost.example.com": false, "": false, "::ffff:8.8.8.8": false} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestPlainRemote(t *testing.T) {
	for _, tc := range []struct {
		url     string
		trusted bool
		want    string // a substring of the reason, "" when a credential may travel
	}{
		{"wss://harness.example.com/v1", false, ""},
		{"https://harness.example.com", false, ""},
		{"ws://127.0.0.1:8080", false, ""},
		{"http://localhost:8080/base", false, ""},
		{"ws://[::1]:80", false, ""},
		{"ws://harness.example.com", false, "not a loopback address"},
		{"http://10.0.0.1", false, "--ws-trusted-dev"},
		{"ws://harness.example.com", true, ""},
		{"ftp://harness.example.com", true, "neither wss:// nor ws://"},
		{"/v1/tasks", false, "not an absolute URL"},
	} {
		got := PlainRemote(tc.url, tc.trusted)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("PlainRemote(%q, %v) = %q, want %q", tc.url, tc.trusted, got, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{"http://h:1/p": "ws://h:1/p", "https://h/p": "wss://h/p"} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
