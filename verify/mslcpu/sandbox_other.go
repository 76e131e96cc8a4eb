//go:build !unix

package mslcpu

import (
	"os"
	"syscall"
)

// The harness needs a POSIX shell and rlimits (the runtime is Linux's);
// these only let the package build elsewhere.
const (
	syscallRlimitCPU = 0
	syscallRlimitAS  = 0
)

func capLimit(_ int, v uint64) uint64 { return v }

func killGroup(p *os.Process) error { return p.Kill() }

func procAttr() *syscall.SysProcAttr { return nil }
