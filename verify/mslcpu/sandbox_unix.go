//go:build unix

package mslcpu

import (
	"os"
	"syscall"
)

const (
	syscallRlimitCPU = syscall.RLIMIT_CPU
	syscallRlimitAS  = syscall.RLIMIT_AS
)

// capLimit returns v, or our own hard limit of resource when that is lower.
func capLimit(resource int, v uint64) uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(resource, &r) == nil && uint64(r.Max) < v {
		return uint64(r.Max)
	}
	return v
}

// killGroup kills the child's process group: the shell's exec keeps the
// group, and a compiler driver's linker is in it too.
func killGroup(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		return p.Kill()
	}
	return nil
}
