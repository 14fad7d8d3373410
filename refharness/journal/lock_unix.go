//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on the open journal file, so a second
// process (or a second Open in this one) cannot interleave records with ours.
// The kernel drops it when the process dies, even by SIGKILL.
func lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("journal: %s is in use by another process", f.Name())
	}
	if err != nil {
		return fmt.Errorf("journal: lock %s: %w", f.Name(), err)
	}
	return nil
}
