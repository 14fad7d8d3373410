//go:build unix

package target

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup runs the command in a process group of its own, so that a
// timeout or an interruption kills everything it started, not just sh.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
