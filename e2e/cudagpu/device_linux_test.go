//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

func upload(t testing.TB, h *kgenrt.Tensor) *kgenrt.Tensor {
	t.Helper()
	d, err := kgenrt.NewCUDA(h.DType(), h.Shape()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := kgenrt.Copy(d, h); err != nil {
		t.Fatal(err)
	}
	return d
}

func download(t testing.TB, d *kgenrt.Tensor) *kgenrt.Tensor {
	t.Helper()
	h, err := kgenrt.New(d.DType(), d.Shape()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := kgenrt.Copy(h, d); err != nil {
		t.Fatal(err)
	}
	return h
}

func sameBits(t *testing.T, what string, got, want *kgenrt.Tensor) {
	t.Helper()
	for i := 0; i < want.Len(); i++ {
		if g, w := got.Float32At(i), want.Float32At(i); g != w && !(g != g && w != w) {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, g, w)
		}
	}
}

// TestDeviceTensors: GeluTanh.Enqueue on the test's own non-blocking stream
// with NewCUDA tensors, against the CPU reference; the same launch through
// Run (device input, host output), into the caller's memory (WrapCUDA), and
// in place on the device, bit for bit; then the refusals.
func TestDeviceTensors(t *testing.T) {
	p, err := kernels.GeluTanh.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	s := newStream(t)
	stream := kgenrt.CUDAStream(s)
	n := 10007
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%97)/8 - 6
	}
	for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
		x, _ := kgenrt.FromFloat32(dt, vals)
		ref, _ := kgenrt.New(dt, n)
		if err := kernels.GeluTanh.Reference(x, ref); err != nil {
			t.Fatal(err)
		}
		dx := upload(t, x)
		dy, err := kgenrt.NewCUDA(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := kernels.GeluTanh.Enqueue(stream, dx, dy); err != nil {
			t.Fatal(err)
		}
		syncStream(t, s)
		y := download(t, dy)
		tol := map[kgenrt.DType]float64{kgenrt.F32: 1e-5, kgenrt.F16: 2e-3, kgenrt.BF16: 2e-2}[dt]
		for i := 0; i < n; i++ {
			g, w := y.Float32At(i), ref.Float32At(i)
			if d := math.Abs(float64(g - w)); d > tol*(1+math.Abs(float64(w))) {
				t.Fatalf("%v: y[%d] = %g, reference %g", dt, i, g, w)
			}
		}
		// Run binds the device input in place and stages the host output.
		y2, _ := kgenrt.New(dt, n)
		if err := kernels.GeluTanh.Run(kgenrt.CUDA, dx, y2); err != nil {
			t.Fatal(err)
		}
		sameBits(t, dt.String()+" Run(device x, host y)", y2, y)
		// The caller's memory, wrapped without ownership.
		raw := memAlloc(t, n*dt.Size())
		wy, err := kgenrt.WrapCUDA(kgenrt.DevicePtr(raw), dt, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := kernels.GeluTanh.EnqueueArgs(stream, kernels.GeluTanhArgs{X: dx, Y: wy}); err != nil {
			t.Fatal(err)
		}
		syncStream(t, s)
		sameBits(t, dt.String()+" into WrapCUDA memory", download(t, wy), y)
		if err := wy.Free(); err == nil {
			t.Error("Free of a wrapped tensor succeeded")
		}
		// In place on the device.
		if err := kernels.GeluTanh.Enqueue(stream, dx, dx); err != nil {
			t.Fatal(err)
		}
		syncStream(t, s)
		sameBits(t, dt.String()+" in place", download(t, dx), y)
		// A device output overlapping its input elsewhere than in place.
		shifted, _ := kgenrt.WrapCUDA(dx.DevicePtr()+16, dt, n-16/dt.Size())
		xs, _ := kgenrt.WrapCUDA(dx.DevicePtr(), dt, n-16/dt.Size())
		if err := kernels.GeluTanh.Enqueue(stream, xs, shifted); !errors.Is(err, kgenrt.ErrTensor) {
			t.Errorf("%v: overlapping device tensors: %v", dt, err)
		}
		if err := dx.Free(); err != nil {
			t.Fatal(err)
		}
		if err := dx.Free(); err == nil {
			t.Error("a second Free succeeded")
		}
		if err := kernels.GeluTanh.Enqueue(stream, dx, dy); !errors.Is(err, kgenrt.ErrTensor) {
			t.Errorf("%v: Enqueue of a freed tensor: %v", dt, err)
		}
		if err := kernels.GeluTanh.Enqueue(stream, x, dy); !errors.Is(err, kgenrt.ErrTensor) {
			t.Errorf("%v: Enqueue of a host tensor: %v", dt, err)
		}
		if err := kernels.GeluTanh.Reference(dy, ref); !errors.Is(err, kgenrt.ErrTensor) {
			t.Errorf("%v: Reference of a device tensor: %v", dt, err)
		}
		dy.Free()
	}
}

// TestDeviceRowTensors: RmsNorm.EnqueueArgs with [rows, cols] device
// tensors (the CUDA port derives rows_per_group per launch) against the
// CPU reference, at the widths TestRowTypedLauncher uses.
func TestDeviceRowTensors(t *testing.T) {
	p, err := kernels.RmsNorm.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, cols := range []int{7, 128, 4096, 16384} {
		rows := 37
		xs := make([]float32, rows*cols)
		for i := range xs {
			xs[i] = float32(i%97)/8 - 6
		}
		ws := make([]float32, cols)
		for i := range ws {
			ws[i] = 1 + float32(i%5)/4
		}
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
			x, _ := kgenrt.FromFloat32(dt, xs, rows, cols)
			w, _ := kgenrt.FromFloat32(dt, ws, cols)
			ref, _ := kgenrt.New(dt, rows, cols)
			if err := kernels.RmsNorm.Reference(x, w, ref, 1e-5); err != nil {
				t.Fatal(err)
			}
			dx, dw := upload(t, x), upload(t, w)
			dy, _ := kgenrt.NewCUDA(dt, rows, cols)
			if err := kernels.RmsNorm.EnqueueArgs(0, kernels.RmsNormArgs{X: dx, W: dw, Y: dy, Eps: 1e-5}); err != nil {
				t.Fatal(err)
			}
			y := download(t, dy) // Copy synchronizes the context
			tol := map[kgenrt.DType]float64{kgenrt.F32: 1e-5, kgenrt.F16: 2e-3, kgenrt.BF16: 2e-2}[dt]
			for i := 0; i < rows*cols; i++ {
				g, r := y.Float32At(i), ref.Float32At(i)
				if d := math.Abs(float64(g - r)); d > tol*(1+math.Abs(float64(r))) {
					t.Fatalf("cols %d %v: y[%d] = %g, reference %g", cols, dt, i, g, r)
				}
			}
			for _, d := range []*kgenrt.Tensor{dx, dw, dy} {
				d.Free()
			}
		}
	}
}

// TestGraphCapture: kgen launches on a capturing stream are recorded into
// a CUDA graph (no kgen API is needed for it); the replayed graph computes
// what the direct launches compute.
func TestGraphCapture(t *testing.T) {
	p, err := kernels.GeluTanh.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	needGraphs(t)
	s := newStream(t)
	vals := make([]float32, 4099)
	for i := range vals {
		vals[i] = float32(i%31)/4 - 3
	}
	x, _ := kgenrt.FromFloat32(kgenrt.BF16, vals)
	dx, dy, dz := upload(t, x), upload(t, x), upload(t, x)
	// Direct: y = gelu(x), z = gelu(y).
	if err := kernels.GeluTanh.Enqueue(kgenrt.CUDAStream(s), dx, dy); err != nil {
		t.Fatal(err)
	}
	if err := kernels.GeluTanh.Enqueue(kgenrt.CUDAStream(s), dy, dz); err != nil {
		t.Fatal(err)
	}
	syncStream(t, s)
	want := download(t, dz)
	for _, d := range []*kgenrt.Tensor{dy, dz} {
		if err := kgenrt.Copy(d, x); err != nil { // reset
			t.Fatal(err)
		}
	}
	must(t, "cuStreamBeginCapture", ctxCall(drv.beginCapture, s, 2))
	kernels.GeluTanh.Enqueue(kgenrt.CUDAStream(s), dx, dy)
	kernels.GeluTanh.Enqueue(kgenrt.CUDAStream(s), dy, dz)
	var graph, exec uintptr
	must(t, "cuStreamEndCapture", ctxCall(drv.endCapture, s, uintptr(unsafe.Pointer(&graph))))
	defer ctxCall(drv.graphDestroy, graph)
	must(t, "cuGraphInstantiate", ctxCall(drv.graphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0))
	defer ctxCall(drv.graphExecDestroy, exec)
	if got := download(t, dz); got.Float32At(100) == want.Float32At(100) && want.Float32At(100) != x.Float32At(100) {
		t.Fatal("capturing launched the kernels")
	}
	must(t, "cuGraphLaunch", ctxCall(drv.graphLaunch, exec, s))
	syncStream(t, s)
	sameBits(t, "graph replay", download(t, dz), want)
}
