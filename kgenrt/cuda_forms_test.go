package kgenrt_test

import (
	"encoding/binary"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestCUDAFormByM: the CUDA port of a quantized matmul launches the skinny
// kernel (its first CUDAForms phase) for m <= 16, the tiled kernel on its
// 64×64 tile (the second) for m <= 64 (ir.DenseAbove: the kernel has a
// dense form) and its own entry point above (in the library the host
// function of the dense form; here, on a fake fatbin, with the tiled
// kernel's 128×128 grid), each with its own grid (ceildiv(n, 16) blocks;
// one per tile), for every call of the kernel — here LaunchCUDA, which Run
// and Enqueue share.
func TestCUDAFormByM(t *testing.T) {
	d := kernels.QmatmulMlx4.Describe()
	if len(d.CUDAForms) != 2 || d.CUDAForms[0].AtMost != 16 || d.CUDAForms[1].AtMost != 64 {
		t.Fatalf("qmatmul_mlx4's CUDA forms are %+v, want the skinny phase for m <= 16, the mid tile for m <= 64", d.CUDAForms)
	}
	launches, restore := kgenrt.FakeCUDAForms(d)
	defer restore()
	port, err := kgenrt.CUDAPortOf(d)
	if err != nil {
		t.Fatal(err)
	}
	n, k := 300, 256
	for _, c := range []struct {
		m      int
		fn     uintptr
		blocks uint32
	}{{1, 102, 19}, {16, 102, 19}, {17, 202, 5}, {64, 202, 5}, {65, 2, 3}, {300, 2, 9}} {
		v := &d.Variants[1] // bf16
		x, _ := kgenrt.New(kgenrt.BF16, c.m, k)
		w, _ := kgenrt.New(kgenrt.U32, n, k/8)
		s, _ := kgenrt.New(kgenrt.BF16, n, k/64)
		b, _ := kgenrt.New(kgenrt.BF16, n, k/64)
		y, _ := kgenrt.New(kgenrt.BF16, c.m, n)
		args := make([]byte, d.ArgsSize())
		for i, v := range []int{c.m, n, k} {
			binary.LittleEndian.PutUint32(args[4*i:], uint32(v))
		}
		call := &kgenrt.Call{Kernel: d, Variant: v, Tensors: []*kgenrt.Tensor{x, w, s, b, y}, Args: args, Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{128, 1, 1}}
		ptrs := []kgenrt.DevicePtr{0x1000, 0x100000, 0x200000, 0x300000, 0x400000}
		*launches = nil
		if err := port.(kgenrt.CUDALauncher).LaunchCUDA(0, call, ptrs); err != nil {
			t.Fatalf("m = %d: %v", c.m, err)
		}
		if len(*launches) != 1 || (*launches)[0].Fn != c.fn || (*launches)[0].Blocks != c.blocks || (*launches)[0].Threads != 256 {
			t.Errorf("m = %d: launched %+v, want entry %d with %d blocks of 256", c.m, *launches, c.fn, c.blocks)
		}
	}
}
