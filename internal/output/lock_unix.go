//go:build unix

package output

import (
	"fmt"
	"os"
	"syscall"
)

// Lock takes an advisory flock on the project folder itself, exclusive for
// gen and shared for readers (verify), and returns its release. Two `kgen
// gen` on one tree then run one after the other instead of racing on the
// same temp files and renames (issue 12, class 6: a stray ENOENT). Locking
// the folder, not a lock file, writes nothing outside the out folders; the
// kernel drops the lock when the process dies, so a killed run never
// leaves a stale lock behind.
func Lock(root string, exclusive bool) (unlock func(), err error) {
	f, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("locking the project folder: %v", pathless(err))
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the project folder: %v", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
