package cfam_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// TestCUDANoSpills compiles every built-in's CUDA port for sm_90 where nvcc
// exists (skips otherwise) and asserts that no entry point spills or keeps
// a stack frame: the rowwise entries' register caches and unrolled passes
// must fit __launch_bounds__(256, 4)'s 64 registers, the elementwise ones
// their vectors, a split matmul's phase-2 kernel its row passes. One frame
// is allowed: CUDA's sinf/cosf keep the 7 words of
// their slow argument reduction (|x| > 105615) in a 32-byte local array,
// so a kernel calling them may have that frame and no spills.
func TestCUDANoSpills(t *testing.T) {
	t.Parallel() // nvcc runs: the package's compiles share the cores
	nvcc, err := cuda.NVCC()
	if err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("compiles every CUDA port")
	}
	var n atomic.Int64 // entry points compiled
	t.Run("kernels", func(t *testing.T) {
		for _, k := range builtins(t) {
			if !k.Ports[ir.CUDA] {
				continue
			}
			t.Run(k.Name, func(t *testing.T) {
				t.Parallel() // one nvcc each: the kernels share the cores
				n.Add(int64(noSpills(t, nvcc, k)))
			})
		}
	})
	if n.Load() == 0 {
		t.Error("no CUDA entry point compiled")
	}
}

// knownSpills are the bytes of spill traffic (stores + loads) a kernel is
// known to need, each with its reason; any other spill fails.
var knownSpills = map[string]int{
	// Derived (backward: true): four row reductions with x, y_grad and d
	// kept in registers across the passes; the 16-bit variants spill 16
	// bytes and reload 48 (f32: none). Issue 26's register work.
	"layer_norm_backward": 64,
}

// noSpills is TestCUDANoSpills for one kernel; it returns the number of
// entry points compiled.
func noSpills(t *testing.T, nvcc string, k *ir.Kernel) int {
	src, err := cfam.Emit(k, cfam.CUDA, cfam.Options{Header: header})
	if err != nil {
		t.Fatal(err)
	}
	entries, maxRegs := len(k.Variants), 64
	for _, p := range k.Phases() {
		if !p.IsPhaseOwn() && k.ColReductions() != nil {
			entries += len(p.Variants) // the combine (and a total's fold) after the row passes, on CUDA too
		}
	}
	if mm := k.Matmul(); mm != nil && mm.QuantCUDA != nil {
		// The quantized matmul's tensor-core kernels: the tiled one capped at
		// 128 registers (two blocks of 256 threads per SM), the skinny one
		// holding two steps' packed words per B in flight; three entry points
		// per storage dtype (tiled, skinny, the mid tile), and the dense
		// form's dequantization where it has one.
		entries, maxRegs = 3*len(k.Variants), 255
		if mm.QuantCUDA.Dense != nil {
			entries += len(k.Variants)
		}
	}
	if mm := k.Matmul(); mm != nil && mm.CUDA != nil {
		// CUTLASS GEMMs: warp-specialised, 168 registers by design, built by
		// kgen cuda with CUTLASS's headers. A split's entry part holds its
		// phase-2 kernel, plain CUDA: one instantiation per storage dtype.
		if mm.Split == nil || mm.Split.CUDA == nil {
			return 0
		}
		src = append([]byte("#define KGEN_PARTS\n#define KGEN_PART_entry\n"), src...)
		entries = len(mm.CUDA.Entries())
	}
	use, err := cuda.Resources(context.Background(), nvcc, k.Name, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(use) != entries {
		t.Errorf("%s: ptxas reported %d entry points, want %d", k.Name, len(use), entries)
	}
	frame := 0
	if bytes.Contains(src, []byte("sinf(")) || bytes.Contains(src, []byte("cosf(")) {
		frame = 32
	}
	if t := k.TopKSelection(); t != nil {
		frame += 12 * t.K // the lane's own top-k list, indexed at run time: key, column, value per slot
	}
	spills := knownSpills[k.Name]
	for _, u := range use {
		if u.SpillStores+u.SpillLoads > spills || u.Stack > frame+spills || u.Registers > maxRegs {
			t.Errorf("%s (%s): %d registers, %d-byte stack frame, %d bytes spill stores, %d bytes spill loads; want no spills at <= %d registers",
				u.Entry, k.Kind, u.Registers, u.Stack, u.SpillStores, u.SpillLoads, maxRegs)
		}
		t.Logf("%s: %d registers", u.Entry, u.Registers)
	}
	return len(use)
}

// TestCUDASIMTResources compiles the f32 SIMT GEMM part of every CUDA
// matmul for sm_90 where nvcc exists (skips otherwise; the part is plain
// CUDA, no CUTLASS) and asserts no spills and no stack frame in either
// instantiation: its 64 accumulators, two fragments and the prefetched
// next tile stay in registers, the 32-bit-index kernel within 128 (two
// CTAs of 256 threads per SM), the 64-bit one within 255.
func TestCUDASIMTResources(t *testing.T) {
	t.Parallel() // nvcc runs: the package's compiles share the cores
	nvcc, err := cuda.NVCC()
	if err != nil {
		t.Skip(err)
	}
	n := 0
	for _, k := range builtins(t) {
		mm := k.Matmul()
		if mm == nil || mm.CUDA == nil || len(mm.CUDA.SIMT) == 0 {
			continue
		}
		src, err := cfam.Emit(k, cfam.CUDA, cfam.Options{Header: header})
		if err != nil {
			t.Fatal(err)
		}
		for _, dt := range mm.CUDA.SIMT {
			use, err := cuda.Resources(context.Background(), nvcc, k.Name, src, "-DKGEN_PARTS", "-DKGEN_PART_"+cuda.SIMTPart(dt))
			if err != nil {
				t.Fatal(err)
			}
			if len(use) != 2 {
				t.Fatalf("%s %s: ptxas reported %d entry points, want the SIMT GEMM's two (32- and 64-bit indices)", k.Name, dt, len(use))
			}
			for _, u := range use {
				n++
				limit := 255
				if strings.Contains(u.Entry, "kgen_gemmIjE") { // kgen_gemm<unsigned>
					limit = 128
				}
				if u.SpillStores+u.SpillLoads > 0 || u.Stack > 0 || u.Registers > limit {
					t.Errorf("%s: %d registers, %d-byte stack frame, %d/%d bytes spill stores/loads; want no spills within %d registers",
						u.Entry, u.Registers, u.Stack, u.SpillStores, u.SpillLoads, limit)
				}
				t.Logf("%s: %d registers", u.Entry, u.Registers)
			}
		}
	}
	if n == 0 {
		t.Error("no SIMT GEMM compiled")
	}
}
