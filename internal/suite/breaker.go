package suite

import (
	"fmt"
	"strings"
	"sync"
)

// A Breaker keeps one silent feature of the target from costing a timeout
// in every spec that waits on it (docs/interpretations.md#fail-fast): once
// Trip waits in a row on the feature timed out, with none answered in
// between, later waits on it are not made, and the spec fails or is
// unverified at once with why (Open), as it would have after waiting. A
// feature is as narrow as the requirements it decides: a breaker is only
// consulted by waits whose requirement depends on what it watches, so a
// silent feature never fails a requirement that does not depend on it.
//
// A Breaker lives for one run (one process runs one suite) and may be used
// from any goroutine.
type Breaker struct {
	// Feature names what is waited for: "a result or error frame
	// answering a WebSocket command".
	Feature string
	// Trip is how many waits in a row must time out before the breaker
	// opens (at least 1).
	Trip int

	mu     sync.Mutex
	streak []string // what the timed-out waits waited on, in order
}

// NewBreaker is a breaker for feature that opens after trip consecutive
// timeouts.
func NewBreaker(feature string, trip int) *Breaker {
	return &Breaker{Feature: feature, Trip: max(trip, 1)}
}

// Open says why waits on the feature are no longer made, or nil while the
// breaker is closed.
func (b *Breaker) Open() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.streak) < max(b.Trip, 1) {
		return nil
	}
	return fmt.Errorf("the last %d waits for %s timed out in a row (%s): the target is taken not to send it", len(b.streak), b.Feature, strings.Join(b.streak, "; "))
}

// Timeout records a wait on the feature that timed out; where says what
// it waited on.
func (b *Breaker) Timeout(where string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.streak) < max(b.Trip, 1) {
		b.streak = append(b.streak, where)
	}
}

// Answered records a wait on the feature that was answered: the count of
// timeouts in a row starts over (an open breaker stays open: nothing waits
// on it any more).
func (b *Breaker) Answered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.streak) < max(b.Trip, 1) {
		b.streak = nil
	}
}
