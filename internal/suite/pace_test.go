package suite

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Polls start at FirstPollEvery and slow down to MaxPollEvery: a 10 s wait
// polls about 200 times, not 2,000.
func TestPaceSlowsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pace
		start := time.Now()
		n := 0
		for time.Since(start) < 10*time.Second {
			if !p.Wait(t.Context()) {
				t.Fatal("Wait returned false with a live context")
			}
			n++
		}
		if n > int(10*time.Second/MaxPollEvery)+20 || n < 150 {
			t.Errorf("%d polls in 10 s", n)
		}
		var q Pace
		before := time.Now()
		q.Wait(t.Context())
		if d := time.Since(before); d != FirstPollEvery {
			t.Errorf("first wait %s, want %s", d, FirstPollEvery)
		}
	})
}

func TestPaceEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var p Pace
		if p.Wait(ctx) {
			t.Error("Wait returned true after the context ended")
		}
	})
}
