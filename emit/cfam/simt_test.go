package cfam

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/cuda"
)

// TestSIMTLayouts: the f32 SIMT GEMM reads each operand as its layout
// says (A row-major [m, k] or column-major [k, m]; B row-major [k, n] or
// column-major [n, k]): the thread's first offset, the offset between its
// slots and the step per K tile, for all four combinations; the part
// includes no CUTLASS header, its epilogue runs for k = 0 (the K loop is
// the only thing k bounds), and where nvcc exists each compiles for sm_90
// without spills.
func TestSIMTLayouts(t *testing.T) {
	t.Parallel() // nvcc runs: the package's compiles share the cores
	nvcc, _ := cuda.NVCC()
	a := map[bool][]string{
		false: {"kgen_I kgen_oa = (kgen_i0 + kgen_xa) * kgen_K + kgen_ka;", "kgen_sa = kgen_I(kgen_THREADS / kgen_BK) * kgen_K", "kgen_da = kgen_BK;"},
		true:  {"kgen_I kgen_oa = kgen_I(kgen_ka) * kgen_M + kgen_i0 + kgen_xa;", "kgen_sa = kgen_I(kgen_THREADS / kgen_BM) * kgen_M", "kgen_da = kgen_I(kgen_BK) * kgen_M;"},
	}
	b := map[bool][]string{
		false: {"kgen_I kgen_ob = kgen_I(kgen_kb) * kgen_N + kgen_j0 + kgen_xb;", "kgen_sb = kgen_I(kgen_THREADS / kgen_BN) * kgen_N", "kgen_db = kgen_I(kgen_BK) * kgen_N;"},
		true:  {"kgen_I kgen_ob = (kgen_j0 + kgen_xb) * kgen_K + kgen_kb;", "kgen_sb = kgen_I(kgen_THREADS / kgen_BK) * kgen_K", "kgen_db = kgen_BK;"},
	}
	layout := map[bool]string{false: "row_major", true: "col_major"}
	for _, ac := range []bool{false, true} {
		for _, bc := range []bool{false, true} {
			src := fmt.Sprintf("kernel: k\nkind: matmul\ndtypes: [f32, bf16]\nmatmul: {a: {name: x, layout: %s}, b: {name: w, layout: %s}}\n"+
				"ports: {metal: generated, cuda: generated}\ninputs:\n  - {name: bias, shape: [n]}\noutputs:\n  - y: acc + bias\n", layout[ac], layout[bc])
			k := build(t, "k", src)
			out, err := Emit(k, CUDA, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := string(out)
			part := s[strings.Index(s, "#if !defined(KGEN_PARTS) || defined(KGEN_PART_f32_simt)"):]
			part = part[:strings.Index(part, "\n#else\n")]
			for _, want := range append(append([]string(nil), a[ac]...), b[bc]...) {
				if !strings.Contains(part, want) {
					t.Errorf("A %s, B %s: the SIMT GEMM lacks %q", layout[ac], layout[bc], want)
				}
			}
			guard := s[:strings.Index(s, "\n#define KGEN_NO_CUTLASS 1")]
			guard = guard[strings.LastIndex(guard, "\n")+1:]
			for _, p := range []string{"f32_simt", "bf16_simt", "entry"} {
				if !strings.Contains(guard, "defined(KGEN_PART_"+p+")") {
					t.Errorf("the %s part includes CUTLASS's headers (%s)", p, guard)
				}
			}
			// bf16 takes the SIMT GEMM for what TMA cannot load: k, n, and m
			// when A's rows are m long.
			entry := s[strings.Index(s, `extern "C" int k_bf16(`):]
			fallback := []string{"kgen_args.k % 8u != 0 ||", "kgen_args.n % 8u != 0 ||", "kgen_args.k == 0 ||",
				"reinterpret_cast<size_t>(kgen_ptrs[0]) % 16 != 0 ||", "return kgen_k_bf16_simt(kgen_stream"}
			if ac {
				fallback = append(fallback, "kgen_args.m % 8u != 0 ||")
			}
			for _, want := range fallback {
				if !strings.Contains(entry[:strings.Index(entry, "kgen_k_bf16_tiny")], want) {
					t.Errorf("A %s, B %s: the bf16 entry's fallback lacks %q", layout[ac], layout[bc], want)
				}
			}
			if !ac && strings.Contains(entry, "kgen_args.m % 8u") {
				t.Errorf("a row-major A falls back on m")
			}
			if nvcc != "" {
				use, err := cuda.Resources(context.Background(), nvcc, "k", out, "-DKGEN_PARTS", "-DKGEN_PART_f32_simt")
				if err != nil {
					t.Fatal(err)
				}
				if len(use) != 2 {
					t.Fatalf("A %s, B %s: ptxas: %+v", layout[ac], layout[bc], use)
				}
				for _, u := range use {
					if u.SpillStores+u.SpillLoads+u.Stack > 0 {
						t.Errorf("A %s, B %s: ptxas: %+v", layout[ac], layout[bc], u)
					}
					t.Logf("A %s, B %s: %s: %d registers", layout[ac], layout[bc], u.Entry, u.Registers)
				}
			}
			for _, want := range []string{"for (unsigned kgen_t = 0; kgen_t < kgen_kt; ++kgen_t)", "kgen_k_epilogue(kgen_f(bias[kgen_j]), kgen_acc[kgen_r][kgen_c], kgen_y);",
				"return kgen_k_f32_simt(kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen);"} {
				if !strings.Contains(s, want) {
					t.Errorf("A %s, B %s: no %q", layout[ac], layout[bc], want)
				}
			}
		}
	}
}
