package suite

import (
	"context"
	"time"
)

// Poll intervals of Pace.
const (
	FirstPollEvery = 5 * time.Millisecond
	MaxPollEvery   = 50 * time.Millisecond
)

// Pace paces the polls of one wait: quickly at first, since a conformant
// target usually gets there within milliseconds, then half as often again
// each time, up to MaxPollEvery. A wait that runs to its deadline on a
// broken or slow target then costs tens of requests rather than thousands:
// each poll is a request on the target, recorded in the report and checked
// against the OpenAPI document.
type Pace struct{ next time.Duration }

// Wait pauses before the next poll. It returns false if ctx ends first.
func (p *Pace) Wait(ctx context.Context) bool {
	if p.next == 0 {
		p.next = FirstPollEvery
	}
	t := time.NewTimer(p.next)
	defer t.Stop()
	p.next = min(p.next*3/2, MaxPollEvery)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
