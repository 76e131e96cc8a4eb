package mslcpu

import "syscall"

// procAttr puts the child in a process group of its own (killed whole on a
// timeout) and has the kernel kill it if kgen dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
