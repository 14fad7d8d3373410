package redact

import (
	"net/http"
	"sync"
	"testing"
)

func TestString(t *testing.T) {
	r := New("sk-live/abc\"def", "sk-live/abc", "ab")
	for _, tc := range []struct{ in, want string }{
		{`key=sk-live/abc"def end`, "key=" + Marker + " end"},
		{`{"k":"sk-live/abc\"def"}`, `{"k":"` + Marker + `"}`},
		{"q=sk-live%2Fabc%22def", "q=" + Marker},
		{"sk-live/abc", Marker},
		{"ab is too short to be a secret", "ab is too short to be a secret"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !r.Contains("x sk-live/abc") || r.Contains("nothing") {
		t.Error("Contains disagrees with String")
	}
	var nilR *Redactor
	if nilR.String("s") != "s" || nilR.Contains("s") {
		t.Error("nil Redactor must pass text through")
	}
}

func TestHeader(t *testing.T) {
	r := New("tok-12345")
	h := http.Header{"Authorization": {"Bearer whatever-unknown"}, "X-Echo": {"saw tok-12345"}, "Cookie": {"a=b"}}
	got := r.Header(h)
	if got.Get("Authorization") != "Bearer "+Marker || got.Get("X-Echo") != "saw "+Marker || got.Get("Cookie") != Marker {
		t.Errorf("Header = %v", got)
	}
	if h.Get("Authorization") != "Bearer whatever-unknown" {
		t.Error("Header modified its input")
	}
}

// Secrets learnt during a run (access tokens) are redacted from then on,
// while other goroutines redact.
func TestAdd(t *testing.T) {
	r := New("sk-first")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				r.String("sk-first eyJ.token.late")
			}
		}()
	}
	r.Add("eyJ.token.late", "ab") // too short: ignored
	wg.Wait()
	if got := r.String("a sk-first b eyJ.token.late c \"eyJ.token.late\" ab"); got != "a [REDACTED] b [REDACTED] c \"[REDACTED]\" ab" {
		t.Errorf("String = %q", got)
	}
	if !r.Contains("x eyJ.token.late") {
		t.Error("Contains misses an added secret")
	}
	var zero Redactor
	zero.Add("late-secret")
	if zero.String("late-secret") != Marker {
		t.Error("Add on the zero value does not redact")
	}
}
