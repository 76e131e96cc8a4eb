package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCRLFCheckout: a checkout that turned kgen's LF into CRLF (git's
// core.autocrlf) leaves kgen's files kgen's (issue 27: every generated file
// used to count as hand-edited, so gen refused them and verify failed). The
// same text with CRLF is Unchanged; a CRLF file from other inputs is Stale
// (Owned, so gen may overwrite it); a CRLF file edited after the checkout
// is still HandEdited.
func TestCRLFCheckout(t *testing.T) {
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	want := string(Stamp([]byte(header + "\nkernel void k() {}\n")))
	older := string(Stamp([]byte(header + "\nkernel void k() { old(); }\n")))
	for _, tt := range []struct {
		name, disk string
		want       State
	}{
		{"same text", crlf(want), Unchanged},
		{"older inputs", crlf(older), Stale},
		{"edited", crlf(strings.Replace(want, "{}", "{ mine(); }", 1)), HandEdited},
		{"mixed endings", strings.Replace(crlf(want), "\r\n", "\n", 1), Unchanged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "gen"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "gen", "k.metal"), []byte(tt.disk), 0o644); err != nil {
				t.Fatal(err)
			}
			changes, err := Diff(root, []string{"gen"}, []File{{Path: "gen/k.metal", Data: []byte(want)}})
			if err != nil {
				t.Fatal(err)
			}
			got := Unchanged
			if len(changes) > 0 {
				got = changes[0].State
			}
			if got != tt.want {
				t.Errorf("state %v; want %v", got, tt.want)
			}
		})
	}
	if !Owned([]byte(crlf(older))) {
		t.Error("a CRLF checkout of kgen's file is not Owned")
	}
}
