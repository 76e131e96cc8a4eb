package parity_test

import (
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// splitShapes are wider than the row-owning strip (928 columns with one B):
// parity runs the split form there (the accumulators into the workspace,
// then the row passes over it), as the launcher does. m = 9 keeps every
// adversarial row (NaN, ±Inf, zeros, huge) and a partial group of 8 rows.
var splitShapes = []parity.MatmulShape{{9, 1000, 33}, {3, 2048 + 7, 20}, {0, 1000, 4}}

// rowMatmuls are the built-in matmuls with row reductions, by name.
func rowMatmuls(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var out []*ir.Kernel
	for _, k := range matmuls(kernels) {
		if k.Matmul().Rows != nil {
			out = append(out, k)
		}
	}
	if len(out) != 4 {
		t.Fatalf("want the 4 row-reducing built-ins (rms_norm, rms_norm_baked, layer_norm, softmax), got %d", len(out))
	}
	return out, src
}

// TestBuiltinMatmulsSplit runs every row-reducing built-in × dtype above
// its strip, where the launcher takes the two-launch split, against the
// same bounded float64 reference as the row-owning kernel (the row passes
// and their summation order are the same), under the real lane map and,
// shuffled, under the scrambled one.
func TestBuiltinMatmulsSplit(t *testing.T) {
	needCompiler(t)
	kernels, src := rowMatmuls(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 8, Matmul: splitShapes}) {
				checkConfined(t, r)
			}
			checkAll(t, k, src[k.Name], parity.Options{Seed: 9, Matmul: splitShapes[:1],
				MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
		})
	}
}

// TestMatmulSplitMutationsFail: parity fails for a split whose first phase
// leaves the workspace unwritten, whose second phase reads row 0's
// accumulators for every row, or whose second phase's butterfly skips a
// level; the row-owning kernel (n ≤ 928) is untouched by the first two.
func TestMatmulSplitMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := rowMatmuls(t)
	var k *ir.Kernel
	for _, kk := range kernels {
		if kk.Name == "matmul_rms_norm" {
			k = kk
		}
	}
	mutations := []struct{ name, from, to string }{
		{"unwritten workspace", "kgen_ws0[kgen_i * args.n + kgen_j] = kgen_cs0[kgen_e];", "(void)kgen_ws0;"},
		{"workspace row 0", "kgen_matmul_rms_norm_pass1(kgen_ws0[kgen_i * args.n + kgen_j]", "kgen_matmul_rms_norm_pass1(kgen_ws0[kgen_j]"},
		{"short butterfly", "kgen_o = 16; kgen_o > 0; kgen_o /= 2)", "kgen_o = 8; kgen_o > 0; kgen_o /= 2)"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			mutantFails(t, k, src[k.Name], m.from, m.to, -1, parity.Options{Seed: 10, Matmul: splitShapes[:1]}, "a split with a "+m.name)
		})
	}
}
