//go:build race

package refharness

// raceBuild: this test binary runs under the race detector, where every
// probe costs about ten times as much.
const raceBuild = true
