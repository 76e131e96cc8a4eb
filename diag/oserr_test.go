package diag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOSReason: the reason never repeats the absolute path and says what
// to do.
func TestOSReason(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, missing := os.ReadFile(filepath.Join(dir, "missing.yaml"))
	_, folder := os.ReadFile(dir)
	_, notDir := os.ReadFile(filepath.Join(file, "x"))
	for _, tt := range []struct {
		err  error
		want string
	}{
		{missing, "it does not exist"},
		{folder, "it is a folder; name a file"},
		{notDir, "a part of the path is a file"},
		{&os.PathError{Op: "open", Path: dir, Err: os.ErrPermission}, "permission denied; make it readable"},
	} {
		got := OSReason(tt.err)
		if !strings.HasPrefix(got, tt.want) || strings.Contains(got, dir) {
			t.Errorf("OSReason(%v) = %q, want %q… without the path", tt.err, got, tt.want)
		}
	}
}
