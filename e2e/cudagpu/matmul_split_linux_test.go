//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"math"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// splitInputs are small deterministic matmul operands of dtype dt.
func splitInputs(t *testing.T, dt kgenrt.DType, shape ...int) *kgenrt.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*7+3)%13-6) / 8
	}
	x, err := kgenrt.FromFloat32(dt, v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// near fails unless got matches the CPU reference want within a 16-bit
// storage's rounding (the reference sums in another order).
func near(t *testing.T, what string, dt kgenrt.DType, got, want *kgenrt.Tensor) {
	t.Helper()
	tol := map[kgenrt.DType]float64{kgenrt.F16: 4e-3, kgenrt.BF16: 2e-2}[dt]
	for i := 0; i < want.Len(); i++ {
		g, w := float64(got.Float32At(i)), float64(want.Float32At(i))
		if math.IsNaN(g) || math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("%s %v: y[%d] = %g, reference %g", what, dt, i, g, w)
		}
	}
}

// TestMatmulSplitTypedLauncher: the split kernels (ir.SplitCUDA) through the
// generated API on CUDA at n = 14336, above Metal's row-owning strip, where
// Metal's launcher would chain its phases: Run with host tensors and
// Enqueue with device tensors are one Go call each, agree bit for bit, and
// match the CPU reference.
func TestMatmulSplitTypedLauncher(t *testing.T) {
	p, err := kernels.MatmulRmsNorm.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	s := newStream(t)
	m, n, k := 5, 14336, 64
	for _, dt := range []kgenrt.DType{kgenrt.BF16, kgenrt.F16} {
		x, w, g := splitInputs(t, dt, m, k), splitInputs(t, dt, k, n), splitInputs(t, dt, n)
		y, _ := kgenrt.New(dt, m, n)
		ref, _ := kgenrt.New(dt, m, n)
		if err := kernels.MatmulRmsNorm.Run(kgenrt.CUDA, x, w, g, y, 1e-6); err != nil {
			t.Fatal(err)
		}
		if err := kernels.MatmulRmsNorm.Reference(x, w, g, ref, 1e-6); err != nil {
			t.Fatal(err)
		}
		near(t, "matmul_rms_norm Run", dt, y, ref)
		dy, err := kgenrt.NewCUDA(dt, m, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := kernels.MatmulRmsNorm.Enqueue(kgenrt.CUDAStream(s), upload(t, x), upload(t, w), upload(t, g), dy, 1e-6); err != nil {
			t.Fatal(err)
		}
		syncStream(t, s)
		sameBits(t, "matmul_rms_norm Enqueue", download(t, dy), y)

		wg, wu := splitInputs(t, dt, n, k), splitInputs(t, dt, n, k) // [n, k]: col-major Bs
		for i := 0; i < wu.Len(); i += 3 {
			wu.SetFloat32(i, -wu.Float32At(i)) // the two Bs differ: a swap shows
		}
		y2, _ := kgenrt.New(dt, m, n)
		ref2, _ := kgenrt.New(dt, m, n)
		if err := kernels.MatmulSiluMul.Run(kgenrt.CUDA, x, wg, wu, y2); err != nil {
			t.Fatal(err)
		}
		if err := kernels.MatmulSiluMul.Reference(x, wg, wu, ref2); err != nil {
			t.Fatal(err)
		}
		near(t, "matmul_silu_mul Run", dt, y2, ref2)
	}
}

// TestMatmulSplitGraphCapture: a split kernel's one call — two GEMMs'
// worth of launches, the workspace's stream-ordered allocation and release
// — records into a CUDA graph whose replay computes what the direct call
// computes.
func TestMatmulSplitGraphCapture(t *testing.T) {
	p, err := kernels.MatmulRmsNorm.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	needGraphs(t)
	s := newStream(t)
	m, n, k := 33, 4096, 128
	dt := kgenrt.BF16
	dx, dw, dg := upload(t, splitInputs(t, dt, m, k)), upload(t, splitInputs(t, dt, k, n)), upload(t, splitInputs(t, dt, n))
	dy, err := kgenrt.NewCUDA(dt, m, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := kernels.MatmulRmsNorm.Enqueue(kgenrt.CUDAStream(s), dx, dw, dg, dy, 1e-6); err != nil {
		t.Fatal(err)
	}
	syncStream(t, s)
	want := download(t, dy)
	zero, _ := kgenrt.New(dt, m, n)
	if err := kgenrt.Copy(dy, zero); err != nil {
		t.Fatal(err)
	}
	must(t, "cuStreamBeginCapture", ctxCall(drv.beginCapture, s, 2))
	cerr := kernels.MatmulRmsNorm.Enqueue(kgenrt.CUDAStream(s), dx, dw, dg, dy, 1e-6)
	var graph, exec uintptr
	must(t, "cuStreamEndCapture", ctxCall(drv.endCapture, s, uintptr(unsafe.Pointer(&graph))))
	if cerr != nil {
		t.Fatalf("Enqueue under capture: %v", cerr)
	}
	defer ctxCall(drv.graphDestroy, graph)
	must(t, "cuGraphInstantiate", ctxCall(drv.graphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0))
	defer ctxCall(drv.graphExecDestroy, exec)
	must(t, "cuGraphLaunch", ctxCall(drv.graphLaunch, exec, s))
	syncStream(t, s)
	sameBits(t, "graph replay", download(t, dy), want)
}
