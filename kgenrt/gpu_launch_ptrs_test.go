package kgenrt

import (
	"slices"
	"strings"
	"testing"
)

// TestLaunchDevicePtrs: LaunchCUDA and LaunchROCm bind the caller's raw
// device pointers in place of a call's tensors and launch on the caller's
// stream (a column reduction: both phases, the workspace in stream order),
// with no copy and no wait; the pointers are checked as the host path
// checks tensors (count, null, alignment, an output overlapping an input
// it is not identical to) before anything is launched.
func TestLaunchDevicePtrs(t *testing.T) {
	for _, b := range []Backend{CUDA, ROCm} {
		t.Run(b.String(), func(t *testing.T) {
			k, fns := colsumKernel()
			g := newFakeGPU(b, fns...)
			vals := make([]float32, 30)
			for i := range vals {
				vals[i] = float32(i)
			}
			x, err := newGPU(g.drv, "New"+b.title(), F32, []int{10, 3})
			if err != nil {
				t.Fatal(err)
			}
			y, err := newGPU(g.drv, "New"+b.title(), F32, []int{3})
			if err != nil {
				t.Fatal(err)
			}
			if err := Copy(x, f32Tensor(t, vals, 10, 3)); err != nil {
				t.Fatal(err)
			}
			// The call's tensors are host tensors of the right shapes: only
			// their dtypes and shapes count.
			call := fakeCall(t, k, [3]int{1, 1, 1}, mk(t, F32, 10, 3), mk(t, F32, 3))
			launch := func(ptrs ...DevicePtr) error {
				p := g.port(k)
				if b == ROCm {
					return p.(ROCmLauncher).LaunchROCm(5, call, ptrs)
				}
				return p.(CUDALauncher).LaunchCUDA(5, call, ptrs)
			}
			method := map[Backend]string{CUDA: "LaunchCUDA", ROCm: "LaunchROCm"}[b]
			g.log = nil
			if err := launch(x.gpuPtr(), y.gpuPtr()); err != nil {
				t.Fatal(err)
			}
			want := []string{"allocAsync@5 a3 256", "launch@5 colsum_part_f32 3x64x1", foldLaunch(b, 5), "freeAsync@5 a3"}
			if !slices.Equal(g.log, want) {
				t.Errorf("calls:%s\nwant:%s", logText(g.log), logText(want))
			}
			out := mk(t, F32, 3)
			if err := Copy(out, y); err != nil {
				t.Fatal(err)
			}
			if got := hostF32(out); !slices.Equal(got, []float32{135, 145, 155}) {
				t.Errorf("y = %v, want [135 145 155]", got)
			}
			g.log = nil
			for _, bad := range []struct {
				ptrs []DevicePtr
				want string
			}{
				{[]DevicePtr{x.gpuPtr()}, method + " takes 2 device pointers, got 1"},
				{[]DevicePtr{x.gpuPtr(), 0}, "is null or not 16-byte aligned"},
				{[]DevicePtr{x.gpuPtr() + 4, y.gpuPtr()}, "is null or not 16-byte aligned"},
				{[]DevicePtr{x.gpuPtr(), x.gpuPtr() + 16}, "overlap"},
			} {
				if err := launch(bad.ptrs...); err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("%s(%v): %v, want an error containing %q", method, bad.ptrs, err, bad.want)
				}
			}
			if len(g.log) != 0 {
				t.Errorf("refused launches reached the driver:%s", logText(g.log))
			}
		})
	}
}
