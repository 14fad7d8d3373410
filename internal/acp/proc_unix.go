//go:build unix

package acp

import (
	"os/exec"
	"syscall"
)

// ownGroup runs the agent in a process group of its own, so that Close ends
// everything it started, not just the agent.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// kill ends the agent's process group.
func (c *Conn) kill() {
	if p := c.cmd.Process; p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = p.Kill()
	}
}
