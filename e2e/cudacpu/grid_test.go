package cudacpu

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/internal/long"
)

// TestSIMTGridLoopOnCPU: n = 65535·128 + 257 has more column tiles than
// the SIMT GEMM's grid (65535 in y), so its blocks loop over the rest;
// every element of the row is checked. 131070 blocks of 256 threads and
// a float64 reference of 16.8 M elements: a long run (KGEN_LONG=1, `make
// test-long`).
func TestSIMTGridLoopOnCPU(t *testing.T) {
	long.Skip(t, "1×8388737×1: 131070 blocks of 256 threads")
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
