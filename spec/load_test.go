package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
)

// TestSpecFileNameCannotCarryCode: a spec's path reaches every generated
// file's header, so a name with a line break (or another rune Comment must
// escape) is refused, quoted, and nothing of that spec is loaded.
func TestSpecFileNameCannotCarryCode(t *testing.T) {
	for _, name := range []string{"a\r#define fmin fmax\r.yaml", "b\u2028c.yaml", "d\x01.yaml"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "specs", name), []byte("kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x\n"), 0o644); err != nil {
			t.Skipf("this file system refuses the name %q: %v", name, err)
		}
		var diags diag.List
		specs := LoadDir(dir, "specs", &diags)
		var out string
		for _, d := range diags.Sorted() {
			out += d.String() + "\n"
		}
		if len(specs) != 0 || !strings.Contains(out, "the spec file's name contains") || strings.ContainsAny(out, "\r\u2028\x01") {
			t.Errorf("%q: loaded %d specs; diagnostics %q", name, len(specs), out)
		}
	}
}

// TestUnreadableSpecFiles: a dangling symlink, a FIFO (whose open would
// block forever) and a file that cannot be read get one relative,
// positioned line that says what to do, never the absolute path.
func TestUnreadableSpecFiles(t *testing.T) {
	dir := t.TempDir()
	specs := filepath.Join(dir, "specs")
	if err := os.MkdirAll(specs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(specs, "dangling.yaml")); err != nil {
		t.Skip(err)
	}
	fifo := mkfifo(filepath.Join(specs, "fifo.yaml"))
	var diags diag.List
	LoadDir(dir, "specs", &diags)
	got := diags.Err().Error()
	want := "specs/dangling.yaml: cannot read spec: it does not exist (or is a symlink to nothing); create it or fix the path"
	if fifo == nil {
		want += "\nspecs/fifo.yaml: cannot read spec: it is not a regular file (a FIFO, socket or device); kgen reads only regular files"
	}
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
