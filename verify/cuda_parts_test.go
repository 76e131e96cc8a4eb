package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCUDAMatmulParts: with nvcc and CUTLASS headers, `kgen verify`
// compiles of each CUDA matmul the first CUTLASS part, every SIMT GEMM
// part (f32, and the 16-bit fallbacks) and the entry part (the entry
// points; a split's second phase), says so in its summary, and reports a
// part nvcc rejects. A fake nvcc logs the parts it is asked for.
func TestCUDAMatmulParts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	writeFile(t, filepath.Join(dir, "kgen.yaml"), "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  cuda: gen/cuda\n  go: gen/kernels\nverify:\n  parity: off\n")
	head := "kind: matmul\ndtypes: [f32, bf16]\nmatmul: {a: x, b: w}\nports: {metal: generated, cuda: generated, rocm: null}\n"
	writeFile(t, filepath.Join(dir, "specs/mm.yaml"), "kernel: mm\n"+head+"outputs:\n  - y: acc\n")
	writeFile(t, filepath.Join(dir, "specs/mm_norm.yaml"), "kernel: mm_norm\n"+strings.Replace(head, "[f32, bf16]", "[bf16]", 1)+
		"let:\n  - inv: rsqrt(row_mean(acc * acc) + 1e-6)\noutputs:\n  - y: acc * inv\n")
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	cutlass := filepath.Join(dir, "cutlass")
	writeFile(t, filepath.Join(cutlass, "include/cutlass/cutlass.h"), "")
	writeFile(t, filepath.Join(cutlass, "include/cute/tensor.hpp"), "")
	log := filepath.Join(dir, "nvcc.log")
	nvcc := filepath.Join(dir, "nvcc")
	writeFile(t, nvcc, "#!/bin/sh\nfor a; do case $a in -DKGEN_PART_*) echo \"$a\" >> "+log+";; esac; done\n"+
		"case \"$*\" in *KGEN_PART_$KGEN_FAKE_FAIL*) echo 'error: planted' >&2; exit 1;; esac\nexit 0\n")
	if err := os.Chmod(nvcc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KGEN_NVCC", nvcc)
	t.Setenv("KGEN_CUTLASS", cutlass)
	// A fresh cache for each run: the fake's verdict depends on
	// KGEN_FAKE_FAIL, which nvcc's would not.
	t.Setenv("KGEN_CUDA_CACHE", t.TempDir())
	t.Setenv("KGEN_FAKE_FAIL", "none")
	out, code := kgen(dir, "verify")
	if code != 0 || !strings.Contains(out, "cuda compile: 2 kernel(s) ok") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(raw))
	for _, want := range []string{"bf16_tiny", "f32_simt", "bf16_simt", "entry"} {
		if n := strings.Count(" "+strings.Join(got, " ")+" ", " -DKGEN_PART_"+want+" "); n < 1 {
			t.Errorf("no part %s compiled: %v", want, got)
		}
	}
	if len(got) != 4+3 { // mm: tiny, f32_simt, bf16_simt, entry; mm_norm (split): tiny, bf16_simt, entry
		t.Errorf("parts compiled: %v", got)
	}
	t.Setenv("KGEN_CUDA_CACHE", t.TempDir())
	t.Setenv("KGEN_FAKE_FAIL", "bf16_simt")
	if out, code := kgen(dir, "verify"); code == 0 || !strings.Contains(out, "gen/cuda/mm.cu:1:1:") || !strings.Contains(out, "planted") {
		t.Errorf("a rejected SIMT part: exit %d\n%s", code, out)
	}
}
