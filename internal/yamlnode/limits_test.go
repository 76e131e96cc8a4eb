package yamlnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
)

func parseErr(t *testing.T, src string) string {
	t.Helper()
	var diags diag.List
	_, ok := Parse("f.yaml", []byte(src), &diags)
	if ok != (diags.Len() == 0) {
		t.Fatalf("ok=%v with %d diagnostics", ok, diags.Len())
	}
	if err := diags.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// TestNestingLimit: nesting past MaxDepth, in any YAML form, is refused at
// the level that passes the limit, before the YAML library sees it.
func TestNestingLimit(t *testing.T) {
	deep := MaxDepth + 1
	indented := ""
	for i := 0; i < deep; i++ {
		indented += strings.Repeat(" ", i) + "k:\n"
	}
	tests := []struct{ name, src, want string }{
		{"flow lists", "x: " + strings.Repeat("[", 64000) + strings.Repeat("]", 64000) + "\n", "f.yaml:1:35: YAML nested deeper than 32"},
		{"flow maps", "x: " + strings.Repeat("{a: ", 64000) + "1" + strings.Repeat("}", 64000) + "\n", "f.yaml:1:128: YAML nested"},
		{"compact items", "x:\n  " + strings.Repeat("- ", 64000) + "1\n", "f.yaml:2:65: YAML nested"},
		{"indented maps", indented, "f.yaml:33:33: YAML nested"},
		{"flow over lines", "x: [\n" + strings.Repeat("  [\n", 40), "f.yaml:32:3: YAML nested"},
		{"multi-byte before", "é: " + strings.Repeat("[", 40), "f.yaml:1:35: YAML nested"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.src); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want prefix %q", got, tt.want)
			}
		})
	}
}

// TestNestingNotMiscounted: brackets, dashes and indentation that are text
// (plain scalars, quotes, comments, block scalars) are not levels.
func TestNestingNotMiscounted(t *testing.T) {
	many := strings.Repeat("[", 3*MaxDepth)
	var block strings.Builder
	block.WriteString("doc: |\n")
	for i := 1; i <= 2*MaxDepth; i++ {
		block.WriteString(strings.Repeat(" ", i) + "- [ x {\n")
	}
	block.WriteString("y: 1\n")
	for _, src := range []string{
		"doc: see " + many + "\n",
		"doc: '" + many + "'\n",
		"doc: \"" + many + "\\\"" + many + "\"\n",
		"doc: 'it''s " + many + "'\n",
		"doc: x # " + many + "\n",
		"# " + many + "\n",
		block.String(),
		"doc: >-\n  " + many + "\n",
		"a: [b, 'c]', \"d{\", e]\nf: {g: h}\n",
		"a:\n- [1, 2]\n- {b: c}\n" + strings.Repeat("- - x\n", 100),
	} {
		if got := parseErr(t, src); strings.Contains(got, "nested deeper") {
			t.Errorf("%.60q: %s", src, got)
		}
	}
}

// TestSizeLimit: a file over MaxBytes is refused; ReadFile never reads
// more than one byte past the limit.
func TestSizeLimit(t *testing.T) {
	big := "doc: " + strings.Repeat("a", MaxBytes) + "\n"
	if got := parseErr(t, big); !strings.HasPrefix(got, "f.yaml:1:1: the file is larger than 1048576 bytes") {
		t.Fatalf("got %q", got)
	}
	if got := parseErr(t, big[:MaxBytes-1]+"\n"); got != "" {
		t.Fatalf("a file of exactly MaxBytes: %q", got)
	}
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte(big+big), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(p)
	if err != nil || len(data) != MaxBytes+1 {
		t.Fatalf("ReadFile: %d bytes, %v", len(data), err)
	}
}

// TestEndOfValuePosition: an error at the end of a value ("formula ends
// where a value was expected") points just past its last character: the
// closing quote after an escape, not past the line in a block scalar.
func TestEndOfValuePosition(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"y: \"\\x41 +\"\n", "f.yaml:1:11"},
		{"y: 'a''b +'\n", "f.yaml:1:11"},
		{"y: >\n   0*\n", "f.yaml:2:6"},
		{"y: é +\n", "f.yaml:1:7"},
	} {
		doc, n := value(t, tt.src, "y")
		text, _ := Scalar(n)
		if got := doc.MapScalar(n).At(len(text)).String(); got != tt.want {
			t.Errorf("%q: end of value at %s, want %s", tt.src, got, tt.want)
		}
	}
}
