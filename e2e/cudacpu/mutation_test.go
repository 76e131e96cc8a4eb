package cudacpu

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// TestCUDAOnCPUCatchesMutations: TestCUDAOnCPU's check fails each of
// these bugs, planted in the generated source's text before the build,
// so its passes are not vacuous: the SIMT GEMM losing its last K tile,
// its epilogue's column tail guard off by one (the last column unwritten)
// and its K guard letting a load past K through; the row kernels'
// butterfly losing its first stage (offset 16: each half-warp sums only
// its own lanes), the block's combine losing its last warp's partial, and
// the columns strided past the block (half of each row unread); the gated
// epilogue reading each accumulator from the other's workspace; the
// split's SIMT workspace GEMM (f32, and the 16-bit
// fallback at a k TMA cannot load) storing columns out of place or losing
// its last K tile. (Its grid rounded down is no bug: a grid-stride loop covers
// every element with fewer blocks, and the CPU run agrees.) The K guard's
// mutant reads past w, which the address sanitizer stops.
func TestCUDAOnCPUCatchesMutations(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, c := range []struct {
		name     string
		kernel   string
		old, new string
		fn       func(mslcpu.Launch) string
		shape    [3]int
		dts      []dtype.DType
	}{
		{"SIMT: last K tile dropped", "matmul_bias_gelu", "kgen_t < kgen_kt; ++kgen_t)", "kgen_t + 1 < kgen_kt; ++kgen_t)",
			simtOf, [3]int{33, 40, 64}, []dtype.DType{dtype.F32, dtype.BF16}},
		{"SIMT: column tail guard off by one", "matmul_bias_residual", "if (kgen_j >= kgen_N) break;", "if (kgen_j + 1 >= kgen_N) break;",
			simtOf, [3]int{7, 9, 13}, []dtype.DType{dtype.F32, dtype.BF16}},
		{"SIMT: K guard lets k = K through", "matmul_bias_gelu", "kgen_k + kgen_kk < kgen_K) ? kgen_f(w[", "kgen_k + kgen_kk <= kgen_K) ? kgen_f(w[",
			simtOf, [3]int{33, 40, 13}, []dtype.DType{dtype.F32}},
		{"rows: butterfly from offset 8", "matmul_rms_norm", "for (unsigned int o = 16; o > 0;", "for (unsigned int o = 8; o > 0;",
			entryOf, [3]int{33, 40, 64}, []dtype.DType{dtype.BF16}},
		{"rows: butterfly from offset 8", "matmul_softmax", "for (unsigned int o = 16; o > 0;", "for (unsigned int o = 8; o > 0;",
			entryOf, [3]int{33, 40, 64}, []dtype.DType{dtype.BF16}},
		{"rows: butterfly from offset 8", "matmul_layer_norm", "for (unsigned int o = 16; o > 0;", "for (unsigned int o = 8; o > 0;",
			entryOf, [3]int{33, 40, 64}, []dtype.DType{dtype.BF16}},
		{"rows: the last warp's partial dropped", "matmul_rms_norm", "for (unsigned int i = 1; i < m; ++i)", "for (unsigned int i = 1; i + 1 < m; ++i)",
			entryOf, [3]int{9, 4096, 16}, []dtype.DType{dtype.BF16}},
		{"rows: columns strided past the block", "matmul_softmax", "kgen_j += 256)", "kgen_j += 512)",
			entryOf, [3]int{9, 4096, 16}, []dtype.DType{dtype.BF16}},
		{"split SIMT: workspace columns swapped in pairs", "matmul_softmax", "kgen_D[kgen_at] = kgen_acc[kgen_r][kgen_c];", "kgen_D[kgen_at] = kgen_acc[kgen_r][kgen_c ^ 1];",
			entryOf, [3]int{33, 40, 13}, []dtype.DType{dtype.F32, dtype.BF16}},
		{"split SIMT: last K tile dropped", "matmul_silu_mul", "kgen_t < kgen_kt; ++kgen_t)", "kgen_t + 1 < kgen_kt; ++kgen_t)",
			entryOf, [3]int{33, 40, 20}, []dtype.DType{dtype.F32, dtype.F16}},
		{"gated: workspaces swapped", "matmul_silu_mul", "epilogue(kgen_ws0[kgen_e], kgen_ws1[kgen_e],", "epilogue(kgen_ws1[kgen_e], kgen_ws0[kgen_e],",
			entryOf, [3]int{33, 40, 64}, []dtype.DType{dtype.F16, dtype.BF16}},
	} {
		t.Run(c.name+"/"+c.kernel, func(t *testing.T) {
			t.Parallel() // a build and its runs: one core each
			k, src := kernelOf(t, ks, files, c.kernel)
			if !strings.Contains(string(src), c.old) {
				t.Fatalf("%s: %s: the text to mutate (%q) is not in the generated source", c.name, c.kernel, c.old)
			}
			b := build(t, tc, k, src, func(s string) string { return strings.ReplaceAll(s, c.old, c.new) })
			results, err := check(t, k, b, c.fn, shapesOf([][3]int{c.shape}), true, c.dts...)
			if err != nil {
				// The address sanitizer's report of an access past a tensor
				// catches the bug too; any other failure is the harness's.
				if !strings.Contains(err.Error(), "ERROR: AddressSanitizer") {
					t.Fatalf("%s: %s: %v", c.name, c.kernel, err)
				}
				t.Logf("%s: %s fails as it must, in the run: %s", c.name, c.kernel, buildcache.FirstLines(err.Error(), 3))
				return
			}
			failed := map[string]int{}
			for _, r := range results {
				failed[r.HostName] += r.Failed
			}
			for _, v := range variantsOf(k, c.dts...) {
				if failed[v.HostName] == 0 {
					t.Errorf("%s: %s passed the check", c.name, v.HostName)
				} else {
					t.Logf("%s: %s fails as it must: %d elements", c.name, v.HostName, failed[v.HostName])
				}
			}
		})
	}
}
