package kgenrt_test

import (
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestROCmEnqueueThroughTheGeneratedLauncher: bias_grad's generated
// Enqueue with ROCm tensors (WrapROCm over made-up addresses, never
// touched) reaches the ROCm port through the port table, which launches
// the kernel's two phases on the caller's HIP stream with the ROCm
// launch of the descriptor, its workspace allocated and freed on that
// stream (kgenrt.FakeROCm stands in for HIP's runtime).
func TestROCmEnqueueThroughTheGeneratedLauncher(t *testing.T) {
	log, restore := kgenrt.FakeROCm(kernels.BiasGrad.Describe())
	defer restore()
	dy, err := kgenrt.WrapROCm(1<<24, kgenrt.F32, 100, 64)
	if err != nil {
		t.Fatal(err)
	}
	db, err := kgenrt.WrapROCm(2<<24, kgenrt.F32, 64)
	if err != nil {
		t.Fatal(err)
	}
	if !dy.OnROCm() || dy.OnCUDA() {
		t.Fatalf("OnROCm %v, OnCUDA %v", dy.OnROCm(), dy.OnCUDA())
	}
	if err := kernels.BiasGrad.Enqueue(7, dy, db); err != nil {
		t.Fatal(err)
	}
	// 100 rows: 13 chunks of 8, f32 partials [13, 64] (3328 bytes); the
	// row pass a team of 4 lanes (16 f32 each) per chunk, 64 teams per
	// block of 256 threads: 1 block; the fold 2 blocks of 32 columns.
	want := []string{"allocAsync@7 3328", "launch@7 bias_grad_f32 1x256", "launch@7 bias_grad_cols_f32 2x256", "freeAsync@7"}
	if !slices.Equal(*log, want) {
		t.Errorf("calls %q, want %q", *log, want)
	}
}
