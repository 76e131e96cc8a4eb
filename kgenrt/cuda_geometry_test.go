package kgenrt_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
)

// TestCUDAPrepareMatchesTheLaunch holds the CUDA port's allocation-free
// launch preparation to the launch description's own evaluation
// (launch.Launch.Sizes and GridSize, over maps) for every built-in kernel
// with a CUDA port, every variant and random sizes: the same derived
// fields in the args the kernel receives, the same blocks.
func TestCUDAPrepareMatchesTheLaunch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, d := range kernels.Kernels() {
		l := d.Launch[kgenrt.CUDA]
		if l.Grid[0] == nil {
			continue
		}
		for vi := range d.Variants {
			v := &d.Variants[vi]
			for trial := 0; trial < 50; trial++ {
				args := make([]byte, d.ArgsSize())
				given := map[string]int{launch.ElemBytes: v.DType.Size()}
				for _, f := range d.ArgsBinding().Fields {
					x := rng.IntN(1 << 20)
					if trial%5 == 0 {
						x = rng.IntN(40)
					}
					if !f.Size {
						x = int(rng.Uint32())
					}
					if slices.Contains(d.Batch, f.Name) {
						// Batch sizes stay small: a real launch's rows of
						// every batch element fit the kernels' 32-bit row
						// index (Check's element limit), as here.
						x = 1 + rng.IntN(16)
					}
					binary.LittleEndian.PutUint32(args[f.Offset:], uint32(x))
					if f.Size {
						given[f.Name] = x
					}
				}
				c := &kgenrt.Call{Kernel: d, Variant: v, Args: args}
				ptrs := make([]kgenrt.DevicePtr, len(d.Tensors()))
				blocks, got, err := kgenrt.PrepareCUDA(c, ptrs)
				if err != nil {
					t.Fatalf("%s: %v", v.HostName, err)
				}
				sizes, err := l.Sizes(given)
				if err != nil {
					t.Fatal(err)
				}
				grid, err := l.GridSize(sizes)
				if err != nil {
					t.Fatal(err)
				}
				want := append([]byte(nil), args...)
				for _, dv := range l.Derived {
					for _, f := range d.ArgsBinding().Fields {
						if f.Name == dv.Field {
							binary.LittleEndian.PutUint32(want[f.Offset:], uint32(sizes[dv.Field]))
						}
					}
				}
				if wb := kgenrt.CeilDiv(grid[0], l.Threadgroup[0]); int(blocks) != wb || string(got) != string(want) {
					t.Fatalf("%s sizes %v: %d blocks, args % x; want %d, % x", v.HostName, given, blocks, got, wb, want)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no kernel has a CUDA launch: checked nothing")
	}
	t.Logf("%d launches checked", checked)
}
