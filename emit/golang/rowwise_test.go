package golang_test

import (
	"os"
	"strings"
	"testing"
)

// rowSpecs are rowwise kernels covering the shapes of the schedule: one
// pass, two passes with a per-row let, two outputs, a bool let, constants
// used in per-row and per-element code, and segments.
var rowSpecs = map[string]string{
	"rms": `kernel: rms
kind: rowwise
dtypes: [f32, f16, bf16]
compute: f32
inputs: [x, {name: w, shape: row}]
params:
  - {name: eps, type: f32}
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w
`,
	"smax": `kernel: smax
kind: rowwise
dtypes: [f16, bf16]
inputs: [x]
constants:
  k: 2.0
let:
  - big: x > 0
  - e: exp(x - row_max(x))
  - s: row_sum(e) * k
outputs:
  - y: select(big, e / s, 0)
  - z: e
`,
	// No reduction: the reference declares no accumulator team width.
	"nored": `kernel: nored
kind: rowwise
dtypes: [f32, f16]
inputs: [x, {name: b, shape: row}]
let:
  - h: x + b
outputs:
  - y: tanh(h)
`,
	"dual": `kernel: dual
kind: rowwise
dtypes: [f32, bf16]
compute: f32
segments: [q, k]
inputs: [x, {name: w, shape: row}]
constants:
  eps: 1e-6
outputs:
  - y: x * rsqrt(row_mean(x * x) + eps) * w
`,
}

func TestRowwiseGeneratesACompilingPackage(t *testing.T) {
	_, files := generated(t, writeProject(t, rowSpecs))
	typeCheck(t, files)
	if dir := os.Getenv("KGEN_DUMP_GO"); dir != "" {
		for name, data := range files {
			os.WriteFile(dir+"/"+name, data, 0o644)
		}
	}
	src := string(files["rms_kernel.go"])
	for _, want := range []string{"rmsKernel.CheckSizes(sizes[:], ts...)", "rows_per_group := 256 / launch.LanesFor(cols, 256, 4)",
		`DType: kgenrt.T, Shape: []string{"cols"}`, "256 * ceildiv(rows, rows_per_group)"} {
		if !strings.Contains(src, want) {
			t.Errorf("rms_kernel.go lacks %q", want)
		}
	}
}
