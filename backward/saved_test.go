package backward

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// savedCases save a forward's per-row lets (save:): the backward reads
// them instead of recomputing their reductions, and its gradients must
// still match central differences of the float64 forward.
var savedCases = []struct {
	name, src string
	params    []float64
	// gone are row reductions the backward must no longer compute.
	gone int
}{
	{"rms_norm_inv", `kernel: rms_norm
kind: rowwise
dtypes: [f32]
inputs: [x, {name: w, shape: [cols]}]
params: [{name: eps, type: f32}]
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w
backward: true
save: [inv]`, []float64{0.25}, 1},
	{"layer_norm_mean_inv", `kernel: layer_norm
kind: rowwise
dtypes: [f32]
inputs: [x, {name: w, shape: [cols]}, {name: b, shape: [cols]}]
params: [{name: eps, type: f32}]
let:
  - mean: row_mean(x)
  - d: x - mean
  - inv: rsqrt(row_mean(d * d) + eps)
outputs:
  - y: d * inv * w + b
backward: true
save: [mean, inv]`, []float64{0.25}, 2},
}

func TestSavedValuesMatchFiniteDifferences(t *testing.T) {
	for _, c := range savedCases {
		t.Run(c.name, func(t *testing.T) {
			fwd, bwd := build(t, c.src+"\nports: {metal: generated}\n")
			if got, want := len(bwd.Rows().Reductions), reductionsWithout(t, c.src); got != want-c.gone {
				t.Errorf("%s: %d row reductions, want %d (%d without save, %d saved away)", bwd.Name, got, want-c.gone, want, c.gone)
			}
			t.Logf("%s: %d passes: %v", bwd.Name, bwd.Rows().Passes, bwd.Describe())
			for _, cols := range []int{1, 7, 33} {
				t.Run(fmt.Sprint(cols), func(t *testing.T) {
					newProblem(fwd, bwd, 5, cols, slices.Clone(c.params), uint64(cols)).check(t)
				})
			}
		})
	}
}

// reductionsWithout is the row reductions of the backward derived from
// src without its save: line.
func reductionsWithout(t *testing.T, src string) int {
	t.Helper()
	i := len(src)
	for i > 0 && src[i-1] != '\n' {
		i--
	}
	_, bwd := build(t, src[:i]+"\nports: {metal: generated}\n")
	var _ *ir.Kernel = bwd
	return len(bwd.Rows().Reductions)
}
