package cudacpu

import (
	"os"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/dtype"
)

// TestSIMTGridLoopOnCPU: n = 65535·128 + 257 has more column tiles than
// the SIMT GEMM's grid (65535 in y), so its blocks loop over the rest;
// every element of the row is checked. About 3 minutes on two cores
// (131070 blocks of 256 threads), so opt-in: KGEN_CUDACPU_LONG=1.
func TestSIMTGridLoopOnCPU(t *testing.T) {
	if os.Getenv("KGEN_CUDACPU_LONG") == "" {
		t.Skip("65535 blocks of 256 threads on the CPU take minutes: set KGEN_CUDACPU_LONG=1")
	}
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	k, src := kernelOf(t, ks, files, "matmul_bias_gelu")
	b := build(t, tc, k, src, nil)
	var took time.Duration
	b.timing = &took
	results, err := check(t, k, b, simtOf, shapesOf([][3]int{{1, 65535*128 + 257, 1}}), false, dtype.F32, dtype.BF16)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range results {
		checked += r.Checked
		if r.Failed > 0 {
			t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
		}
	}
	t.Logf("1×%d×1: %d elements checked, runs %v", 65535*128+257, checked, took.Round(time.Millisecond))
}
