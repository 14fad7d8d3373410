package suite

import (
	"strings"
	"testing"
)

func TestBreaker(t *testing.T) {
	b := NewBreaker("a pong", 2)
	if err := b.Open(); err != nil {
		t.Fatalf("a new breaker is open: %v", err)
	}
	b.Timeout("ping 1")
	if err := b.Open(); err != nil {
		t.Fatalf("open after one timeout of two: %v", err)
	}
	b.Answered()
	b.Timeout("ping 2")
	if err := b.Open(); err != nil {
		t.Fatalf("an answer between two timeouts did not start the count over: %v", err)
	}
	b.Timeout("ping 3")
	err := b.Open()
	if err == nil || !strings.Contains(err.Error(), "the last 2 waits for a pong timed out in a row (ping 2; ping 3)") {
		t.Fatalf("after two timeouts in a row: %v", err)
	}
	b.Answered()
	b.Timeout("ping 4")
	if err := b.Open(); err == nil || strings.Contains(err.Error(), "ping 4") {
		t.Fatalf("an open breaker changed: %v", err)
	}
	if NewBreaker("x", 0).Trip != 1 {
		t.Error("a trip below 1 is not raised to 1")
	}
}
