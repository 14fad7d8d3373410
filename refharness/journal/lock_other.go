//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package journal

import "os"

// lock is a no-op where flock(2) is unavailable: there, do not point two
// processes at one journal.
func lock(*os.File) error { return nil }
