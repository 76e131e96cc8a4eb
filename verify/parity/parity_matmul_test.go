package parity_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// matmuls filters the matmul kernels.
func matmuls(ks []*ir.Kernel) []*ir.Kernel {
	var out []*ir.Kernel
	for _, k := range ks {
		if k.Kind == ir.KindMatmul {
			out = append(out, k)
		}
	}
	return out
}

// TestBuiltinMatmuls runs every built-in matmul × dtype at every shape of
// DefaultMatmulShapes against the float64 reference with the γ_K bound,
// under the lane map real hardware uses.
func TestBuiltinMatmuls(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range matmuls(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			checkAll(t, k, src[k.Name], parity.Options{Seed: 1})
		})
	}
}

// TestBuiltinMatmulsScrambled runs every built-in matmul × dtype under a
// scrambled simdgroup_matrix lane map and shuffled lane order, at a few
// shapes: Apple does not specify the map, so the results must not depend
// on it.
func TestBuiltinMatmulsScrambled(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	shapes := []parity.MatmulShape{{7, 8, 33}, {33, 40, 17}}
	for _, k := range matmuls(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			checkAll(t, k, src[k.Name], parity.Options{Seed: 2, Matmul: shapes,
				MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
		})
	}
}

func checkAll(t *testing.T, k *ir.Kernel, src []byte, opts parity.Options) {
	t.Helper()
	results, err := parity.Check(context.Background(), k, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("%s", r)
			for _, f := range r.Failures {
				t.Errorf("  %s", f)
			}
			continue
		}
		t.Logf("%s", r)
	}
}
