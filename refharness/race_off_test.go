//go:build !race

package refharness

// raceBuild: this test binary runs without the race detector.
const raceBuild = false
