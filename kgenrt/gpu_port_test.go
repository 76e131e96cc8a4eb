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
				"launch@0 colsum_part_f32 3x64x1", foldLaunch(b, 0),
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
		want := []string{"alloc a1 12", "h2d a1 12", foldLaunch(b, 0), "sync after colsum_part_f32", "d2h a1 12", "free a1"}
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

// TestGPUEnqueueOnStream: device tensors of the port's backend (ROCm's
// from NewROCm's code path) are bound in place, and an Enqueue of a
// column reduction launches both phases on the caller's stream with the
// workspace allocated and freed in stream order: no staging, no wait. The
// generated launchers' way in, PortTable.Enqueue, takes a call of ROCm
// tensors to the ROCm slot.
func TestGPUEnqueueOnStream(t *testing.T) {
	for _, b := range []Backend{CUDA, ROCm} {
		t.Run(b.String(), func(t *testing.T) {
			k, fns := colsumKernel()
			g := newFakeGPU(b, fns...)
			vals := make([]float32, 30)
			for i := range vals {
				vals[i] = float32(i)
			}
			host := f32Tensor(t, vals, 10, 3)
			x, err := newGPU(g.drv, "New"+b.title(), F32, []int{10, 3})
			if err != nil {
				t.Fatal(err)
			}
			y, err := newGPU(g.drv, "New"+b.title(), F32, []int{3})
			if err != nil {
				t.Fatal(err)
			}
			if err := Copy(x, host); err != nil {
				t.Fatal(err)
			}
			p := g.port(k)
			var table PortTable
			table.Kernel, table.Ports[b] = k, p
			g.log = nil
			if err := table.Enqueue(7, fakeCall(t, k, [3]int{1, 1, 1}, x, y)); err != nil {
				t.Fatal(err)
			}
			want := []string{"allocAsync@7 a3 256", "launch@7 colsum_part_f32 3x64x1", foldLaunch(b, 7), "freeAsync@7 a3"}
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
			if err := y.Free(); err != nil || y.Free() == nil {
				t.Errorf("Free: %v, then a second Free succeeded", err)
			}
			if err := p.Enqueue(7, fakeCall(t, k, [3]int{1, 1, 1}, x, mk(t, F32, 3))); err == nil ||
				!strings.Contains(err.Error(), "Enqueue binds "+b.title()+" tensors only") {
				t.Errorf("Enqueue of a host output: %v", err)
			}
		})
	}
}

// TestGPUPortsRefuseTheOtherBackendsTensors: a ROCm tensor on the CUDA
// port, or a CUDA one on the ROCm port, is refused by Run and Enqueue, by
// name, before anything is allocated; Copy between the two refuses too.
func TestGPUPortsRefuseTheOtherBackendsTensors(t *testing.T) {
	k, fns := colsumKernel()
	cg, rg := newFakeGPU(CUDA, fns...), newFakeGPU(ROCm, fns...)
	cx, _ := newGPU(cg.drv, "NewCUDA", F32, []int{10, 3})
	rx, _ := newGPU(rg.drv, "NewROCm", F32, []int{10, 3})
	for _, c := range []struct {
		g    *fakeGPU
		x    *Tensor
		want string
	}{
		{cg, rx, "x is a ROCm tensor; the CUDA port binds CUDA tensors"},
		{rg, cx, "x is a CUDA tensor; the ROCm port binds ROCm tensors"},
	} {
		p := c.g.port(k)
		c.g.log = nil
		for name, run := range map[string]func() error{
			"Run":     func() error { return p.Run(fakeCall(t, k, [3]int{1, 1, 1}, c.x, mk(t, F32, 3))) },
			"Enqueue": func() error { return p.Enqueue(0, fakeCall(t, k, [3]int{1, 1, 1}, c.x, mk(t, F32, 3))) },
		} {
			if err := run(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s port %s: %v; want %q", c.g.b, name, err, c.want)
			}
		}
		if len(c.g.log) > 0 {
			t.Errorf("%s port: calls made before the refusal:%s", c.g.b, logText(c.g.log))
		}
	}
	if err := Copy(cx, rx); err == nil || !strings.Contains(err.Error(), "a ROCm tensor into a CUDA tensor") {
		t.Errorf("Copy(CUDA, ROCm) = %v", err)
	}
}
