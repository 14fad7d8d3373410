// Package core holds the Core conformance level's specs. They live in
// ordinary .go files so that the conform binary registers them by import;
// suite_test.go lets `go test ./suites/core` and the ginkgo CLI run the same
// specs.
package core
