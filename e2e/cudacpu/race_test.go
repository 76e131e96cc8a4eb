package cudacpu

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// TestCUDAOnCPURaces runs the SIMT GEMM and a rows kernel under the
// thread sanitizer: every CUDA thread is a host thread and the barriers
// are std::barrier, so a missing __syncthreads (a tile overwritten while
// another thread reads it) is a data race it reports; a run with a race
// fails. The planted one — the barrier after the SIMT GEMM's compute step
// dropped — must be reported.
func TestCUDAOnCPURaces(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	shapes := shapesOf([][3]int{{33, 40, 64}, {130, 129, 17}})
	for _, c := range []struct {
		kernel string
		fn     func(mslcpu.Launch) string
		dt     dtype.DType
	}{
		{"matmul_bias_gelu", simtOf, dtype.F32},
		{"matmul_bias_gelu", simtOf, dtype.BF16},
		{"matmul_rms_norm", entryOf, dtype.BF16},
		{"matmul_layer_norm", entryOf, dtype.BF16}, // two team reductions per row: their slots alternate
	} {
		k, src := kernelOf(t, ks, files, c.kernel)
		b := buildWith(t, tc, k, src, nil, "thread")
		results, err := check(t, k, b, c.fn, shapes, false, c.dt)
		if err != nil {
			t.Fatalf("%s %v: %v", c.kernel, c.dt, err)
		}
		for _, r := range results {
			if r.Failed > 0 {
				t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
			}
		}
	}
	k, src := kernelOf(t, ks, files, "matmul_bias_gelu")
	const old = "            }\n            __syncthreads();\n            if (kgen_next) {"
	if strings.Count(string(src), old) != 3 {
		t.Fatalf("the SIMT GEMM's barrier after its compute step is not in the source as expected (%d found)", strings.Count(string(src), old))
	}
	b := buildWith(t, tc, k, src, func(s string) string {
		return strings.ReplaceAll(s, old, "            }\n            if (kgen_next) {")
	}, "thread")
	_, err := check(t, k, b, simtOf, shapesOf([][3]int{{33, 40, 64}}), true, dtype.F32)
	if err == nil || !strings.Contains(err.Error(), "ThreadSanitizer: data race") {
		t.Fatalf("the SIMT GEMM without its barrier after the compute step: no race reported (err = %v)", err)
	}
	t.Logf("the SIMT GEMM without its barrier after the compute step: %s", buildcache.FirstLines(err.Error(), 2))
	slotRace(t, tc, ks, files)
}

// slotRace plants the race the team reductions' two slots prevent
// (ir.TeamSlots): with one slot, a warp's store of the next reduction's
// partial overwrites one another warp is still reading, since no second
// barrier separates them.
func slotRace(t *testing.T, tc toolchain, ks map[string]*ir.Kernel, files map[string][]byte) {
	k, src := kernelOf(t, ks, files, "matmul_layer_norm")
	const old = "slot = (slot + 1) % 2;"
	if !strings.Contains(string(src), old) {
		t.Fatalf("matmul_layer_norm: the team reduction's turn of slots (%q) is not in the source", old)
	}
	b := buildWith(t, tc, k, src, func(s string) string { return strings.ReplaceAll(s, old, "slot = 0;") }, "thread")
	_, err := check(t, k, b, entryOf, shapesOf([][3]int{{33, 40, 64}}), false, dtype.BF16)
	if err == nil || !strings.Contains(err.Error(), "ThreadSanitizer: data race") {
		t.Fatalf("matmul_layer_norm with one slot for every team reduction: no race reported (err = %v)", err)
	}
	t.Logf("matmul_layer_norm with one slot for every team reduction: %s", buildcache.FirstLines(err.Error(), 2))
}
