package backward

import (
	"fmt"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// paramCases are forwards whose backward lists float params: their
// gradients (total_sum outputs) against central differences of the
// float64 forward in the param, beside the inputs' gradients.
var paramCases = []struct {
	name, src string
	params    []float64
}{
	{"rms_norm_scale_eps", `kernel: rms_norm_scaled
kind: rowwise
dtypes: [f32]
inputs: [x, {name: w, shape: [cols]}]
params: [{name: eps, type: f32}, {name: scale, type: f32}]
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w * scale
backward: [x, w, scale, eps]`, []float64{0.25, 1.5}},
	{"softmax_temperature", `kernel: softmax_t
kind: rowwise
dtypes: [f32]
inputs: [x]
params: [{name: temp, type: f32}]
let:
  - e: exp((x - detach(row_max(x))) / temp)
outputs:
  - y: e / row_sum(e)
backward: [x, temp]`, []float64{0.7}},
	{"softcap", `kernel: softcap
dtypes: [f32]
inputs: [x]
params: [{name: cap, type: f32}]
outputs:
  - y: cap * tanh(x / cap)
backward: [x, cap]`, []float64{1.5}},
	{"leaky_relu_slope_only", `kernel: leaky_relu
dtypes: [f32]
inputs: [x]
params: [{name: slope, type: f32}, {name: bias, type: f32}]
outputs:
  - y: select(x > 0, x, slope * x) + bias
backward: [slope, bias]`, []float64{0.01, 0.5}},
	{"matmul_epilogue_scale", `kernel: mm_scaled
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w}
inputs: [{name: bias, shape: [n]}]
params: [{name: alpha, type: f32}]
outputs:
  - y: tanh(acc * alpha + bias)
backward: [acc, bias, alpha]`, []float64{0.8}},
}

func TestParamGradientsMatchFiniteDifferences(t *testing.T) {
	for _, c := range paramCases {
		t.Run(c.name, func(t *testing.T) {
			fwd, bwd := build(t, c.src+"\nports: {metal: generated}\n")
			if bwd.Kind != ir.Rowwise || bwd.ColReductions() == nil || !bwd.ColReductions().HasTotal() {
				t.Fatalf("%s: a rowwise kernel with total_sum outputs expected", bwd.Name)
			}
			for _, rows := range []int{1, 5} {
				for _, cols := range []int{1, 7, 33} {
					t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
						newProblem(fwd, bwd, rows, cols, append([]float64(nil), c.params...), uint64(rows*100+cols)).check(t)
					})
				}
			}
		})
	}
}
