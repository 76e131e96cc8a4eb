//go:build unix && !linux

package mslcpu

import "syscall"

// procAttr puts the child in a process group of its own (killed whole on a
// timeout).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
