package parity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestPackedRowsMutationsFail: parity fails for dequantize_mlx4 kernels
// that read the packed input wrong (ir/quant_rows.go): codes out of order,
// a group boundary off by one, the next group's scale, the bias alone
// (scale·q dropped).
// Each rewrite must apply, or the test would pass by mutating nothing.
func TestPackedRowsMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range kernels {
		if kk.Name == "dequantize_mlx4" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no dequantize_mlx4 built-in")
	}
	mutations := []struct{ name, from, to string }{
		{"codes' order swapped in pairs", "const uint bit = j * bits", "const uint bit = (j ^ 1u) * bits"},
		{"group boundary off by one", "(uint)kgen_take0_1 / 64u]", "((uint)kgen_take0_1 + 1u) / 64u]"},
		{"scale of the next group", "float(w_scales[(uint)kgen_take0_0 * (args.cols / 64u) + (uint)kgen_take0_1 / 64u])",
			"float(w_scales[(uint)kgen_take0_0 * (args.cols / 64u) + (uint)kgen_take0_1 / 64u + 1u])"},
		{"scale·q dropped", "metal::fma(float(w_scales", "(float(w_scales"}, // a comma expression: the bias alone
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			mutantFails(t, k, src[k.Name], m.from, m.to, -1, parity.Options{Seed: 5, Cols: []int{192}, Rows: []int{11}}, "a kernel with its "+m.name)
		})
	}
}

// TestPackedInputForms: packed rowwise inputs in every format, read bare
// and by subscript (another row's element, a gather), under a row
// reduction, mixed with a plain input; parity over adversarial groups.
func TestPackedInputForms(t *testing.T) {
	needCompiler(t)
	kernels, src := tempProject(t, map[string]string{
		"specs/qrows.yaml": `kernel: qrows
kind: rowwise
dtypes: [f16, bf16]
compute: f32
inputs:
  - x
  - {name: a, quant: {format: affine, bits: 3, group: 32, scales: sa, biases: ba}}
  - {name: b, quant: q4_0}
  - {name: c, quant: q8_0}
outputs:
  - y: x * a + b - c
  - z: a[rows - 1 - row, col] + c[row, cols - 1 - col]
ports: {metal: generated, cuda: null, rocm: null}
`,
		"specs/qnorm.yaml": `kernel: qnorm
kind: rowwise
dtypes: [f16]
compute: f32
inputs:
  - {name: w, quant: q8_0}
outputs:
  - y: w / row_max(abs(w))
ports: {metal: generated, cuda: null, rocm: null}
`,
	})
	for _, k := range kernels {
		opts := parity.Options{Seed: 9, Cols: []int{32, 96, 1024}, Rows: []int{0, 1, 11}}
		t.Run(k.Name, func(t *testing.T) { checkAll(t, k, src[k.Name], opts) })
	}
}

// tempProject writes specs (path → text, under specs/) into a fresh
// project beside a kgen.yaml and returns its kernels and Metal sources.
func tempProject(t *testing.T, specs map[string]string) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\ngo:\n  package: kernels\n"}
	for name, text := range specs {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return projectKernels(t, filepath.Join(dir, "kgen.yaml"))
}
