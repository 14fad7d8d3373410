// Package replay holds the Replay conformance level's specs (issue 12;
// docs/replay.md, "Suite"). source.go runs the sources the specs replay
// (a plain text task of the target's own agent, or a scenario of replay
// steps) and follows replays of them to their end; api.go, events.go,
// modes.go, ranges.go and refresh.go judge the replay API, replayed-event
// metadata and markers (REST, SSE, WebSocket), the modes and overrides,
// failures, event range reads and no silent refresh. The determinism
// fixture runs live on the target (fixturerun.go; RPLY-DET-001,
// RPLY-DET-002 in determinism.go: the receipt's canonical projection
// against the fixture, a second replay and the reference Harness), with
// the replay receipt's deltas (receipts.go, RPLY-DELTA-001..005) and the
// live tapes compared by the fidelity oracle (tapes.go, RPLY-MODE-002,
// RPLY-MODE-003). A target that does not claim replay is never asked to
// replay: every spec is then unverified, never passed.
package replay
