package main

import "fmt"

// releaseVersion is conform's version, in the source so that every build
// names it, whatever stamped the binary (go build, go run, -buildvcs=false,
// a module download). A release commit sets it to the version it releases,
// the one CHANGELOG.md's newest dated heading names; the commit after it
// sets it to that version with "+dev", which every build between two
// releases says (semver build metadata: the release it started from, plus
// changes). docs/releasing.md is the procedure; TestDistVersion keeps this
// constant, CHANGELOG.md and the docs' pinned commits in agreement.
const releaseVersion = "0.3.0+dev"

// text is `conform version`'s line: the version, then the commit when it
// is known, the protocol version and the Go release.
func (v versionInfo) text() string {
	if v.Commit == "" || v.Commit == "unknown" {
		return fmt.Sprintf("conform %s (protocol %s, %s)", v.Version, v.ProtocolVersion, v.Go)
	}
	return fmt.Sprintf("conform %s (commit %s, protocol %s, %s)", v.Version, v.Commit, v.ProtocolVersion, v.Go)
}
