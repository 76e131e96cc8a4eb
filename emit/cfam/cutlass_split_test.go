package cfam_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// TestCUDASplit: a split matmul's CUDA source (ir.SplitCUDA) has workspace
// GEMMs (an identity EVT into an f32 D, no epilogue functor) in every
// dtype × problem class part, the phase-2 kernel reading the workspaces —
// the row passes with warp shuffles, or the gated epilogue over both — and
// host entry points that run one GEMM per B into its own workspace, then
// phase 2, between a pool allocation and its release on the caller's
// stream. Metal keeps its own forms: the gated kernel has no phases there.
func TestCUDASplit(t *testing.T) {
	ks := map[string]*ir.Kernel{}
	for _, k := range builtins(t) {
		ks[k.Name] = k
	}
	common := []string{
		"Sm90EVT<Sm90Compute<cutlass::epilogue::thread::Identity, float, float, cutlass::FloatRoundStyle::round_to_nearest>, Sm90AccFetch>",
		"void, cutlass::layout::RowMajor, 4, float, cutlass::layout::RowMajor, 4, EpiSchedule, EVT>",
		"void, cutlass::layout::ColumnMajor, 4, float, cutlass::layout::ColumnMajor, 4, EpiSchedule, EVT>",
		"#include <cutlass/epilogue/thread/activation.h>",
		"cudaMallocFromPoolAsync(", "cudaFreeAsync(kgen_space, kgen_s)", "cudaMemPoolAttrReleaseThreshold",
		"if (kgen_args.m == 0u || kgen_args.n == 0u) return 0;",
		"if (kgen_elems > 4294967295ull)",
	}
	for _, c := range []struct {
		kernel string
		want   []string
	}{
		{"matmul_rms_norm", []string{
			"__global__ void __launch_bounds__(256) matmul_rms_norm_rows(",
			"kgen_matmul_rms_norm_pass1(kgen_ws0[kgen_i * args.n + kgen_j], kgen_t0);",
			"const C kgen_r0 = kgen_team_sum(kgen_a0, kgen_part, kgen_slot, 256, 0, kgen_simd, kgen_tid % 32) / float(args.n);",
			"for (unsigned int kgen_i = blockIdx.x; kgen_i < args.m; kgen_i += gridDim.x) {",
			"for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += 256) {",
			"kgen_rc = kgen_matmul_rms_norm_gemm_bf16(kgen_stream, kgen_ptrs[0], kgen_ptrs[1], kgen_ws0, kgen_args, kgen_err, kgen_errlen);",
			"matmul_rms_norm_rows<__nv_bfloat16><<<(kgen_args.m < 1048576u ? kgen_args.m : 1048576u), 256, 0, kgen_s>>>(kgen_ws0, static_cast<const __nv_bfloat16*>(kgen_ptrs[2]), static_cast<__nv_bfloat16*>(kgen_ptrs[3]), kgen_args);",
			"int kgen_rc = kgen_workspace(reinterpret_cast<void**>(&kgen_space), 1 * kgen_elems * sizeof(float)",
		}},
		{"matmul_softmax", []string{
			"const C kgen_r0 = kgen_team_max(kgen_a0, kgen_part, kgen_slot, 256, 0, kgen_simd, kgen_tid % 32);",
			"float kgen_a0 = __int_as_float(0xff800000); // row_max(acc)",
		}},
		{"matmul_silu_mul", []string{
			"__global__ void __launch_bounds__(256) matmul_silu_mul_epilogue(",
			"kgen_matmul_silu_mul_epilogue(kgen_ws0[kgen_e], kgen_ws1[kgen_e], kgen_c_y);",
			"kgen_rc = kgen_matmul_silu_mul_gemm_f16(kgen_stream, kgen_ptrs[0], kgen_ptrs[1], kgen_ws0, kgen_args, kgen_err, kgen_errlen);",
			"if (kgen_rc == 0) kgen_rc = kgen_matmul_silu_mul_gemm_f16(kgen_stream, kgen_ptrs[0], kgen_ptrs[2], kgen_ws1, kgen_args, kgen_err, kgen_errlen);",
			"float* kgen_ws1 = kgen_space + 1 * kgen_elems;",
			"int kgen_rc = kgen_workspace(reinterpret_cast<void**>(&kgen_space), 2 * kgen_elems * sizeof(float)",
			"(unsigned int)((kgen_elems + 255ull) / 256ull), 256, 0, kgen_s>>>(kgen_ws0, kgen_ws1, static_cast<__half*>(kgen_ptrs[3]), kgen_args);",
		}},
	} {
		k := ks[c.kernel]
		if k == nil || k.Matmul().CUDA == nil || k.Matmul().Split.CUDA == nil {
			t.Fatalf("%s has no CUDA split", c.kernel)
		}
		src, err := cfam.Emit(k, cfam.CUDA, cfam.Options{Header: header})
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		for _, w := range append(common, c.want...) {
			if !strings.Contains(s, w) {
				t.Errorf("%s: no %q", c.kernel, w)
			}
		}
		for _, part := range cuda.Parts(k) {
			if part != "entry" && !strings.Contains(s, "extern \"C\" int kgen_"+c.kernel+"_"+part+"(void* kgen_stream, const void* kgen_pa, const void* kgen_pb, float* kgen_d,") {
				t.Errorf("%s: no workspace GEMM part %s", c.kernel, part)
			}
		}
		if strings.Contains(s, "_evt") || strings.Contains(s, "epilogue.thread =") {
			t.Errorf("%s: a split GEMM has an epilogue functor or thread arguments", c.kernel)
		}
	}
	msl, err := cfam.Emit(ks["matmul_silu_mul"], cfam.Metal, cfam.Options{Header: header})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(msl), "kernel void matmul_silu_mul_epilogue") || strings.Contains(string(msl), "float* kgen_ws") {
		t.Error("the gated kernel's Metal source has split phases; its split is CUDA's only")
	}
}
