package kgenrt

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/launch"
)

// The shared GPU port on a fake driver row (gpu_fake_test.go), once per
// backend: what a phase launch calls and in which order, that its
// workspace and staging buffers are freed on success and on failure, that
// a strided output brings back only its elements, and that errors carry
// the backend's own error type.

// TestGPUPhasesCallSequence: Run of a column reduction stages x and y,
// allocates one workspace on the launch's stream, launches both phases
// there, frees the workspace on it, waits, copies y back and frees the
// staging: the same calls on CUDA and ROCm, and the sums right.
func TestGPUPhasesCallSequence(t *testing.T) {
	for _, b := range []Backend{CUDA, ROCm} {
		t.Run(b.String(), func(t *testing.T) {
			k, fns := colsumKernel()
			g := newFakeGPU(b, fns...)
			vals := make([]float32, 30)
			for i := range vals {
				vals[i] = float32(i)
			}
			x, y := f32Tensor(t, vals, 10, 3), f32Tensor(t, []float32{7, 7, 7}, 3)
			if err := g.port(k).Run(fakeCall(t, k, [3]int{1, 1, 1}, x, y)); err != nil {
				t.Fatal(err)
			}
			want := []string{
				"alloc a1 120", "h2d a1 120", "alloc a2 12", "h2d a2 12",
				"allocAsync@0 a3 256", // part [3 chunks, 3 cols] f32, at a 256-byte boundary
				"launch@0 colsum_part_f32 3x64x1", "launch@0 colsum_fold_f32 1x32x1",
				"freeAsync@0 a3", "sync after colsum_part_f32", "d2h a2 12", "free a1", "free a2",
			}
			if !slices.Equal(g.log, want) {
				t.Errorf("calls:%s\nwant:%s", logText(g.log), logText(want))
			}
			for j, got := range hostF32(y) {
				if w := float32(45*3 + 10*j); !near(got, w) { // Σ_r (3r + j)
					t.Errorf("y[%d] = %v, want %v", j, got, w)
				}
			}
			if l := g.leaks(); len(l) > 0 {
				t.Errorf("device memory not freed: %v", l)
			}
		})
	}
}

// TestGPUPhasesNoRows: with no rows the kernel is not idle (PortPhases):
// the row phase has no blocks and is skipped, the fold still writes zeros,
// and no workspace is allocated.
func TestGPUPhasesNoRows(t *testing.T) {
	for _, b := range []Backend{CUDA, ROCm} {
		k, fns := colsumKernel()
		g := newFakeGPU(b, fns...)
		x, y := mk(t, F32, 0, 3), f32Tensor(t, []float32{7, 7, 7}, 3)
		if err := g.port(k).Run(fakeCall(t, k, [3]int{0, 1, 1}, x, y)); err != nil {
			t.Fatal(err)
		}
		want := []string{"alloc a1 12", "h2d a1 12", "launch@0 colsum_fold_f32 1x32x1", "sync after colsum_part_f32", "d2h a1 12", "free a1"}
		if !slices.Equal(g.log, want) || !slices.Equal(hostF32(y), []float32{0, 0, 0}) {
			t.Errorf("%s: y = %v, calls:%s\nwant:%s", b, hostF32(y), logText(g.log), logText(want))
		}
	}
}

// TestGPUErrorsNameTheBackend: a failed launch or workspace allocation is
// the backend's typed error, wrapped with the kernel and entry point, and
// every buffer is still freed.
func TestGPUErrorsNameTheBackend(t *testing.T) {
	for _, c := range []struct {
		b          Backend
		fail, want string
	}{
		{ROCm, "launch", "kgenrt: kernel colsum: colsum_part_f32: hipModuleLaunchKernel: hipErrorOutOfMemory (2): out of memory"},
		{ROCm, "allocAsync@0", "allocAsync@0: hipErrorOutOfMemory (2)"},
		{CUDA, "launch", "kgenrt: kernel colsum: colsum_part_f32: cuLaunchKernel: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{CUDA, "alloc", "alloc: CUDA_ERROR_OUT_OF_MEMORY (2)"},
	} {
		k, fns := colsumKernel()
		g := newFakeGPU(c.b, fns...)
		g.fail = c.fail
		x, y := mk(t, F32, 10, 3), mk(t, F32, 3)
		err := g.port(k).Run(fakeCall(t, k, [3]int{1, 1, 1}, x, y))
		var re *ROCmError
		var ce *CUDAError
		typed := (c.b == ROCm && errors.As(err, &re)) || (c.b == CUDA && errors.As(err, &ce))
		if err == nil || !typed || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s failing %s: %v (%T); want a %s error containing %q", c.b, c.fail, err, err, c.b, c.want)
		}
		if l := g.leaks(); len(l) > 0 {
			t.Errorf("%s failing %s: device memory not freed: %v%s", c.b, c.fail, l, logText(g.log))
		}
	}
}

// bdoubleKernel is a strided (batched) kernel y[b, n] = 2·x[b, n] whose
// fake entry point also scribbles on the gaps of y's device image, as
// memory a kernel does not own may change under it.
func bdoubleKernel() (*Kernel, fakeFn) {
	k := &Kernel{Name: "bdouble", Kind: "elementwise", Math: "precise", ElemsPerThread: 1, Batch: []string{"b"},
		Variants: []Variant{{DType: F32, HostName: "bdouble_f32"}},
		Bindings: []Binding{
			{Index: 0, Name: "x", Role: Input, DType: T, Batch: []string{"b"}, Shape: []string{"n"}},
			{Index: 1, Name: "y", Role: Output, DType: T, Batch: []string{"b"}, Shape: []string{"n"}},
			{Index: 2, Name: "args", Role: Args, Fields: []Field{
				{Name: "b", Type: U32, Offset: 0, Size: true}, {Name: "n", Type: U32, Offset: 4, Size: true},
				{Name: "x_stride_b", Type: U32, Offset: 8, StrideOf: "x", StrideDim: 0},
				{Name: "y_stride_b", Type: U32, Offset: 12, StrideOf: "y", StrideDim: 0}}}},
	}
	for _, b := range []Backend{CUDA, ROCm} {
		k.Launch[b] = launch.Launch{Grid: [3]*launch.Expr{launch.V("n"), launch.N(1), launch.V("b")}, Threadgroup: [3]int{64, 1, 1}}
	}
	return k, fakeFn{name: "bdouble_f32", ptrs: 2, nargs: 16, run: func(g *fakeGPU, _, _, z uint32, p []DevicePtr, a []byte) {
		n, xs, ys := u32(a, 4), u32(a, 8), u32(a, 12)
		ylen := len(g.at(p[1])) / 4
		x, y := g.f32s(p[0], int(z-1)*xs+n), g.f32s(p[1], ylen)
		for i := range y {
			y[i] = -999 // the gaps
		}
		for b := 0; b < int(z); b++ {
			for i := 0; i < n; i++ {
				y[b*ys+i] = 2 * x[b*xs+i]
			}
		}
	}}
}

// TestGPUStridedOutputBringsBackOnlyItsElements: y is columns 0..3 of a
// [2, 8] tensor; the gaps between its rows keep their host bytes whatever
// the device image holds there.
func TestGPUStridedOutputBringsBackOnlyItsElements(t *testing.T) {
	for _, b := range []Backend{CUDA, ROCm} {
		k, fn := bdoubleKernel()
		g := newFakeGPU(b, fn)
		x := f32Tensor(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
		whole := f32Tensor(t, []float32{0, 0, 0, 0, 41, 42, 43, 44, 0, 0, 0, 0, 45, 46, 47, 48}, 2, 8)
		y, err := whole.View(0, []int{2, 4}, []int{8, 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.port(k).Run(fakeCall(t, k, [3]int{4, 1, 2}, x, y)); err != nil {
			t.Fatal(err)
		}
		want := []float32{2, 4, 6, 8, 41, 42, 43, 44, 10, 12, 14, 16, 45, 46, 47, 48}
		if got := hostF32(whole); !slices.Equal(got, want) {
			t.Errorf("%s: y's tensor = %v, want %v", b, got, want)
		}
		if l := g.leaks(); len(l) > 0 {
			t.Errorf("%s: device memory not freed: %v", b, l)
		}
	}
}
