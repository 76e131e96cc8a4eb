package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/cli"
)

// Issue 27: kgen never replaces or deletes a user's file.

// runKgen runs kgen in-process and returns its combined output and exit
// code.
func runKgen(args ...string) (string, int) {
	var out bytes.Buffer
	code := cli.Main(args, &out, &out)
	return out.String(), code
}

const messySpec = "outputs:\n  - y: x * 2\ndtypes: [f32]\nkernel: messy\ninputs: [x]\n"

// TestFmtWritesThroughSymlink: `kgen fmt -w` on a spec that is a symlink
// formats the link's target and leaves the link a link (it used to rename
// a regular file over it, cutting it off from the file it pointed to);
// the target's mode is kept.
func TestFmtWritesThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "shared", "messy.yaml")
	link := filepath.Join(dir, "specs", "messy.yaml")
	for _, d := range []string{filepath.Dir(target), filepath.Dir(link)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(target, []byte(messySpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared/messy.yaml", link); err != nil {
		t.Fatal(err)
	}
	if out, code := runKgen("fmt", "-w", link); code != 0 {
		t.Fatalf("kgen fmt -w: exit %d\n%s", code, out)
	}
	st, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink %s was replaced by a %v", link, st.Mode())
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "kernel: messy\n") {
		t.Errorf("the link's target was not formatted:\n%s", data)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode: %v, %v; want 0600", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(link))
	if len(entries) != 1 {
		t.Errorf("fmt left files beside the link: %v", entries)
	}
}

// TestFmtKeepsMode: -w keeps a regular spec's permission bits (an
// executable bit or a group-writable file stays so).
func TestFmtKeepsMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "messy.yaml")
	if err := os.WriteFile(p, []byte(messySpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o670); err != nil {
		t.Fatal(err)
	}
	if out, code := runKgen("fmt", "-w", p); code != 0 {
		t.Fatalf("kgen fmt -w: exit %d\n%s", code, out)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o670 {
		t.Errorf("mode after fmt -w: %v, %v; want 0670", st.Mode(), err)
	}
}
