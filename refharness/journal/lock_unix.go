//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockWait bounds how long lock waits for a lock held elsewhere. A process
// that forks a child (exec.Cmd) while this one closes and reopens its
// journal shares the old open file, and with it the lock, until the
// child's exec closes it: a moment, longer on a loaded machine. A journal
// really in use by another process is still refused once the wait is over.
const lockWait = 2 * time.Second

// lock takes an exclusive advisory lock on the open journal file, so a second
// process (or a second Open in this one) cannot interleave records with ours.
// The kernel drops it when the process dies, even by SIGKILL.
func lock(f *os.File) error {
	deadline := time.Now().Add(lockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("journal: lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("journal: %s is in use by another process", f.Name())
		}
		time.Sleep(pause)
	}
}
