package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
)

// TestNumbersSayWhatIsWrong (issue 12, class 5): YAML numbers kgen cannot
// bake get a positioned message naming the problem, not "must be a number,
// not a number" or "overflows" for 0x10.
func TestNumbersSayWhatIsWrong(t *testing.T) {
	for value, want := range map[string]string{
		".nan":   "specs/k.yaml:5:6: constant c .nan is YAML's NaN: kgen bakes finite decimal numbers only",
		".NaN":   "specs/k.yaml:5:6: constant c .NaN is YAML's NaN",
		".inf":   "specs/k.yaml:5:6: constant c .inf is YAML's infinity",
		"-.Inf":  "specs/k.yaml:5:6: constant c -.Inf is YAML's infinity",
		"0x10":   "specs/k.yaml:5:6: constant c 0x10 is a hexadecimal literal: write it in decimal (16)",
		"0o17":   "specs/k.yaml:5:6: constant c 0o17 is an octal literal: write it in decimal (15)",
		"0b11":   "specs/k.yaml:5:6: constant c 0b11 is a binary literal: write it in decimal (3)",
		"1e400":  "specs/k.yaml:5:6: constant c 1e400 is out of range even for float64",
		"-1e400": "specs/k.yaml:5:6: constant c -1e400 is out of range even for float64",
		"1.5":    "",
		"1e-6":   "",
		"16":     "",
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "specs"), 0o755)
		src := "kernel: k\ndtypes: [f32]\ninputs: [x]\nconstants:\n  c: " + value + "\noutputs:\n  - y: x * c\n"
		if err := os.WriteFile(filepath.Join(dir, "specs", "k.yaml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var diags diag.List
		LoadDir(dir, "specs", &diags)
		var out []string
		for _, d := range diags.Sorted() {
			out = append(out, d.String())
		}
		got := strings.Join(out, "\n")
		if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) || len(out) > 1 {
			t.Errorf("c: %s:\n got %q\nwant %q", value, got, want)
		}
	}
}
