//go:build race

package testmain

// RaceEnabled says whether this binary runs under the race detector, where
// pure-logic tests cost about ten times as much: a test may run a sample of
// a large matrix then, when a build without -race runs the whole
// (.ci/run does).
const RaceEnabled = true
