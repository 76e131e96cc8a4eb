package cudacpu

import (
	"testing"

	"github.com/kgen-dev/kgen/verify/parity"
)

// TestGoldenTotalsCUDAOnCPU runs the CUDA ports of the golden kernels that
// only the goldens hold: sq_error (a user's total_sum beside a col_sum,
// testdata/golden/colwise) and layer_norm_saved with its backward (save:,
// a param's gradient; testdata/golden/backward), every launch, judged by
// parity: widths 7 (scalar), 64 and 1024 (vectors), 300 (above the total
// launch's 256 ways); rows 0, 11 and 77.
func TestGoldenTotalsCUDAOnCPU(t *testing.T) {
	tc := findToolchain(t)
	for _, c := range []struct{ dir, name string }{
		{"colwise", "sq_error"}, {"backward", "layer_norm_saved"}, {"backward", "layer_norm_saved_backward"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, src := goldenKernel(t, c.dir, c.name)
			b := buildRows(t, tc, k, src)
			b.rowParity(t, k, parity.Options{Seed: 17, Cols: []int{7, 64, 300, 1024}, Rows: []int{0, 11, 77}})
		})
	}
}
