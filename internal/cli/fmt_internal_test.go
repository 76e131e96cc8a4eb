package cli

import (
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// A spec fmt -w cannot replace is named as the user wrote it, with its
// folder; the temporary file's absolute path never reaches the message.
func TestRewriteErrNamesTheSpec(t *testing.T) {
	err := rewriteErr("specs/a.yaml", &fs.PathError{Op: "open", Path: "/home/u/proj/specs/.a.yaml1234567", Err: syscall.EACCES})
	got := err.Error()
	if strings.Contains(got, "/home/u") || !strings.HasPrefix(got, "specs/a.yaml: cannot rewrite") || !strings.Contains(got, "in specs,") {
		t.Errorf("rewriteErr = %q; want the spec and its folder as written, no temp path", got)
	}
}
