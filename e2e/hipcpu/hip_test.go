package hipcpu

import (
	"context"
	"os"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestHIPOnCPU runs every elementwise and rowwise built-in's HIP source on
// the CPU with 64-lane wavefronts (gfx942's), judged by parity against
// the float64 reference (shapes: check). The kernels whose reads and writes are indexed by
// data (gathers, positioned writes, top-k) or that share memory across a
// block run under AddressSanitizer and UBSan; the others, whose every
// access is the same grid-strided walk, are built plain: sanitized builds
// cost twice the time of the whole package on a cold two-core machine
// (make test), and KGEN_LONG=1 sanitizes every kernel.
//
// Built-ins without a ROCm port (rocm: null) run with KGEN_LONG=1 only;
// bias_grad stands for the column reductions in TestHIPOnCPUWave32 and
// TestHIPOnCPUOrders.
func TestHIPOnCPU(t *testing.T) {
	long := os.Getenv("KGEN_LONG") != ""
	for _, k := range builtins(t) {
		if !k.Ports[ir.ROCm] && !long {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			san := ""
			if sanitized(k) {
				san = "address,undefined"
			}
			b := build(t, k, source(t, k), 64, san)
			check(t, k, b, parity.Options{})
		})
	}
}

// sanitized reports whether TestHIPOnCPU builds k with the sanitizers:
// always under KGEN_LONG=1; otherwise a kernel with data-dependent
// indexing, a top-k, column reductions, or a team over several wavefronts.
func sanitized(k *ir.Kernel) bool {
	if os.Getenv("KGEN_LONG") != "" {
		return true
	}
	for _, b := range k.Bindings {
		if b.Indexed || b.IsScatter() || b.IsTopKOutput() || b.IsColOutput() {
			return true
		}
	}
	return map[string]bool{"rms_norm": true, "softmax": true, "layer_norm": true, "cross_entropy": true}[k.Name]
}

// check runs parity on k through b at small shapes and fails on any
// variant out of bounds.
func check(t *testing.T, k *ir.Kernel, b *cpuBuild, opts parity.Options) {
	t.Helper()
	opts.Seed, opts.Backend, opts.Run = 29, ir.ROCm, b.runner()
	if opts.Cols == nil {
		// 1 column: teams of one lane, many rows per wavefront; 2048: the
		// 16-byte vector path, teams of several wavefronts; 4099: the
		// scalar path, 256-lane teams. KGEN_LONG=1 adds 7, 64 and empty
		// launches (rows 0), which make test's parity of the MSL checks.
		opts.Cols, opts.Rows = []int{1, 2048, 4099}, []int{11}
		if os.Getenv("KGEN_LONG") != "" {
			opts.Cols, opts.Rows = []int{1, 7, 64, 2048, 4099}, []int{0, 11}
		}
		if k.ColReductions() != nil {
			opts.Rows = append(opts.Rows, 77)
		}
	}
	results, err := parity.Check(context.Background(), k, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("wave %d: %s; first: %s", b.wave, r, r.First)
			continue
		}
		t.Logf("wave %d: %s", b.wave, r)
	}
}

// TestHIPOnCPUWave32 runs a sum, a max-and-sum, a mean and variance, a
// top-k and a column reduction with 32-lane wavefronts (gfx1100's): the
// same source serves both wave sizes.
func TestHIPOnCPUWave32(t *testing.T) {
	want := map[string]bool{"rms_norm": true, "softmax": true, "layer_norm": true, "topk_softmax": true, "bias_grad": true, "silu": true}
	for _, k := range builtins(t) {
		if !want[k.Name] {
			continue
		}
		delete(want, k.Name)
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			b := build(t, k, source(t, k), 32, "address,undefined")
			check(t, k, b, parity.Options{})
		})
	}
	if len(want) > 0 {
		t.Errorf("no built-ins %v", want)
	}
}

// TestHIPOnCPUOrders runs the kernels that share memory across a block
// (team reductions over several wavefronts, the top-k's partials, the
// column combine) with each block's threads scheduled forward, in reverse
// and shuffled: the outputs must be the same bytes, or a read of shared
// memory is not ordered after its write by a barrier.
func TestHIPOnCPUOrders(t *testing.T) {
	want := map[string]bool{"rms_norm": true, "softmax": true, "topk_softmax": true, "bias_grad": true}
	for _, k := range builtins(t) {
		if !want[k.Name] {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			b := build(t, k, source(t, k), 64, "address,undefined")
			check(t, k, b, parity.Options{Cols: []int{7, 2048, 4099}, Rows: []int{11},
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}})
		})
	}
}

// TestPortedKernelsRunHere: every built-in with rocm: generated is among
// the kernels these tests run (matmuls: TestHIPGemmOnCPU), from its
// generated file.
func TestPortedKernelsRunHere(t *testing.T) {
	ported := 0
	for _, k := range append(builtins(t), matmulBuiltins(t)...) {
		if k.Ports[ir.ROCm] {
			ported++
			if generated[k.Name] == nil {
				t.Errorf("%s: rocm: generated, but no .hip file", k.Name)
			}
		}
	}
	if ported == 0 || ported != len(generated) {
		t.Errorf("%d kernels with a ROCm port, %d .hip files", ported, len(generated))
	}
	t.Logf("%d of %d built-ins have a ROCm port", ported, len(builtins(t))+len(matmulBuiltins(t)))
}
