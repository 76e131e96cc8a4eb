package golang_test

import (
	"strings"
	"testing"
)

// TestKernelDocNamesShapes: the kernel type's doc says each tensor's shape
// and, for a rowwise kernel, that the formulas run per row — a [cols]
// weight and a row reduction read right.
func TestKernelDocNamesShapes(t *testing.T) {
	cfg := writeProject(t, map[string]string{
		"norm": "kernel: norm\nkind: rowwise\ndtypes: [f32]\ninputs: [x, {name: w, shape: row}]\n" +
			"let:\n  - inv: rsqrt(row_mean(x * x) + 1e-6)\noutputs:\n  - y: x * inv * w\n",
		"twice": "kernel: twice\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: 2 * x\n",
	})
	_, files := generated(t, cfg)
	for file, want := range map[string][]string{
		"norm_kernel.go":  {"// Shapes: x [rows, cols], w [cols], y [rows, cols].\n", "// Per row of cols elements, in "},
		"twice_kernel.go": {"// Shapes: x [n], y [n].\n", "// Per element, in "},
	} {
		for _, w := range want {
			if !strings.Contains(string(files[file]), w) {
				t.Errorf("%s lacks %q:\n%s", file, w, files[file])
			}
		}
	}
}
