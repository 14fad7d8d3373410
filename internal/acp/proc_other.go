//go:build !unix

package acp

import "os/exec"

func ownGroup(*exec.Cmd) {}

// kill ends the agent (without process groups, only the agent itself).
func (c *Conn) kill() {
	if p := c.cmd.Process; p != nil {
		_ = p.Kill()
	}
}
