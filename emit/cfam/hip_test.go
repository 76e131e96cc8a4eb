package cfam_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/templates"
)

// warp32 is CUDA's 32-lane warp arithmetic (tid % 32, tid / 32).
var warp32 = regexp.MustCompile(`[%/] 32([^u0-9]|$)`)

// TestHIPBuiltins: every elementwise and rowwise built-in renders in the
// HIP dialect with one entry point per variant, no CUDA left in it (no
// CUDA headers, warp intrinsics, __syncthreads or inline PTX), a rowwise
// kernel's butterfly from KGEN_WAVE / 2 and scratch sized by wavefronts;
// so does every matmul the IR planned a HIP GEMM for (rocm: generated),
// and a matmul without one is refused.
func TestHIPBuiltins(t *testing.T) {
	n := 0
	for _, k := range builtins(t) {
		src, err := cfam.Emit(k, cfam.HIP, cfam.Options{Header: header})
		if mm := k.Matmul(); mm != nil && mm.ROCm == nil {
			if err == nil {
				t.Errorf("%s: a matmul without the IR's ROCm plan was emitted for HIP", k.Name)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		s := string(src)
		for _, v := range k.Variants {
			if !strings.Contains(s, `extern "C" __global__ void __launch_bounds__(`) || !strings.Contains(s, ") "+v.HostName+"(") {
				t.Errorf("%s: no HIP entry point %s", k.Name, v.HostName)
			}
		}
		for _, cuda := range []string{"cuda_", "__shfl", "__syncthreads", "asm", "__nv_", "threadIdx", "blockIdx"} {
			if strings.Contains(s, cuda) {
				t.Errorf("%s: the HIP source has %q", k.Name, cuda)
			}
		}
		if m := warp32.FindString(s); m != "" { // a lane or warp from a 32-lane warp (ggml's 32-value blocks are 32u)
			t.Errorf("%s: the HIP source has %q", k.Name, m)
		}
		if k.Matmul() != nil && k.Rows() != nil { // a row's 16 threads: a butterfly within any wavefront
			if !strings.Contains(s, "kgen_o = TX / 2; kgen_o > 0; kgen_o /= 2) ") || !strings.Contains(s, "kgen_shfl_xor(") {
				t.Errorf("%s: the row-owning GEMM has no butterfly over a row's threads", k.Name)
			}
		} else if k.Rows() != nil && len(k.Rows().Reductions) > 0 {
			for _, want := range []string{"o = KGEN_WAVE / 2;", "width / KGEN_WAVE;", "kgen_part[2 * kgen_waves(kThreads)]", "kgen_tid / KGEN_WAVE"} {
				if !strings.Contains(s, want) {
					t.Errorf("%s: the HIP source lacks %q", k.Name, want)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("%d built-ins emitted for HIP; want every elementwise and rowwise one and the ported matmuls", n)
	}
}

// TestHIPPreludeCoversTable: every function of the table, in both math
// modes, has a HIP spelling with a prelude block (there are no device
// libraries to fall back on).
func TestHIPPreludeCoversTable(t *testing.T) {
	prelude, err := templates.FS.ReadFile("hip/prelude.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range funcs.Table {
		if f.Reduction {
			continue
		}
		for _, math := range []string{"precise", "fast"} {
			sp := cfam.HIP.Spell(&f, math)
			if sp.Name == funcs.Conditional {
				continue
			}
			if sp.Prelude == "" || !strings.Contains(string(prelude), `{{define "`+sp.Prelude+`" -}}`) {
				t.Errorf("%s (%s): HIP spells %q with no block %q in templates/hip/prelude.tmpl", f.Name, math, sp.Name, sp.Prelude)
			}
		}
	}
}
