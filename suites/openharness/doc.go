// Package openharness holds the specs of the openharness profile: an
// OpenHarness v1 Engine (spec 001) checked over conform's HTTP binding
// (docs/openharness.md), one request envelope per POST to --target. The
// checks themselves are plain functions of internal/openharness; the specs
// send the requests, record the transcript and name the requirement of
// each check (internal/requirements/openharness.yaml). profile.go
// registers the profile: its preflight and its built-in reference Engine
// (refharness/openharness).
package openharness
