package kgenrt

import (
	"errors"
	"strings"
	"testing"
)

// CUDA tensors made by WrapCUDA need no driver, so the checks the launchers
// apply to device memory run here; the GPU tests (e2e/cudagpu) launch them.

func wrap(t *testing.T, ptr DevicePtr, dt DType, shape ...int) *Tensor {
	t.Helper()
	tn, err := WrapCUDA(ptr, dt, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestWrapCUDA(t *testing.T) {
	x := wrap(t, 1<<20, BF16, 4, 8)
	if !x.OnCUDA() || x.DevicePtr() != 1<<20 || x.Len() != 32 || x.Bytes() != nil || x.OnDevice() {
		t.Fatalf("wrapped tensor: OnCUDA %v ptr %#x len %d", x.OnCUDA(), x.DevicePtr(), x.Len())
	}
	for _, c := range []struct {
		ptr  DevicePtr
		dt   DType
		want string
	}{
		{0, F32, "null or not 16-byte aligned"},
		{1<<20 + 8, F32, "null or not 16-byte aligned"},
		{1 << 20, T, "not a tensor storage dtype"},
	} {
		if _, err := WrapCUDA(c.ptr, c.dt, 4); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WrapCUDA(%#x, %v) = %v, want %q", uintptr(c.ptr), c.dt, err, c.want)
		}
	}
	if _, err := WrapCUDA(0, F32, 0); err != nil {
		t.Errorf("an empty tensor needs no pointer: %v", err)
	}
	if err := x.Free(); err == nil || !strings.Contains(err.Error(), "caller owns") {
		t.Errorf("Free of a wrapped tensor = %v", err)
	}
	h := mk(t, F32, 4)
	if err := h.Free(); err == nil || !strings.Contains(err.Error(), "not a CUDA tensor") {
		t.Errorf("Free of a host tensor = %v", err)
	}
	if h.DevicePtr() != 0 || h.OnCUDA() {
		t.Error("a host tensor reports device memory")
	}
}

// Check applies dtype, shape and overlap rules to CUDA tensors by their
// device addresses; host and device ranges never overlap.
func TestCheckCUDATensors(t *testing.T) {
	k := testKernel()
	const base = 1 << 30
	x := wrap(t, base, F16, 4, 8)         // 64 bytes
	gain := wrap(t, base+4096, F32, 4, 8) // 128 bytes
	if _, sizes, err := k.Check(x, gain, wrap(t, base+8192, F16, 32)); err == nil {
		t.Errorf("a [32] output for a [4 8] input passed: sizes %v", sizes)
	}
	if _, sizes, err := k.Check(x, gain, wrap(t, base, F16, 4, 8)); err != nil || sizes["n"] != 32 {
		t.Errorf("in place on the device: %v, %v", sizes, err)
	}
	if _, _, err := k.Check(x, gain, wrap(t, base+8192, F16, 4, 8)); err != nil {
		t.Errorf("disjoint device tensors: %v", err)
	}
	for name, y := range map[string]*Tensor{
		"overlapping x":    wrap(t, base+16, F16, 4, 8),
		"overlapping gain": wrap(t, base+4096+16, F16, 4, 8),
	} {
		_, _, err := k.Check(x, gain, y)
		var te *TensorError
		if !errors.As(err, &te) || te.Tensor != "y" || !strings.Contains(te.Reason, "overlaps") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := k.Check(x, gain, wrap(t, base+8192, F32, 4, 8)); !errors.Is(err, ErrDType) {
		t.Errorf("f32 output for f16 input: %v", err)
	}
	// A host tensor at the same numeric address is another memory.
	hx := mk(t, F16, 2, 3)
	dy := wrap(t, DevicePtr(uintptr(hx.span0())), F16, 2, 3)
	if _, _, err := k.Check(hx, mk(t, F32, 2, 3), dy); err != nil {
		t.Errorf("host input and device output at one number: %v", err)
	}
	// Freed tensors are refused.
	freed := wrap(t, base+16384, F16, 4, 8)
	freed.gpu.freed = true
	if _, _, err := k.Check(x, gain, freed); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("freed output: %v", err)
	}
}

// span0 is the address of a host tensor's first byte.
func (t *Tensor) span0() uintptr { lo, _, _ := t.span(); return lo &^ 15 }

// The CPU reference and the Metal port read host memory: CUDA tensors get a
// TensorError naming the tensor, before anything is read.
func TestHostOnlyPathsRefuseCUDATensors(t *testing.T) {
	k := testKernel()
	x, gain, y := wrap(t, 1<<20, F16, 8), mk(t, F32, 8), mk(t, F16, 8)
	var te *TensorError
	if _, _, err := k.CheckHost(x, gain, y); !errors.As(err, &te) || te.Tensor != "x" || !strings.Contains(te.Reason, "CUDA device memory") {
		t.Errorf("CheckHost: %v", err)
	}
	if _, _, err := k.CheckHost(mk(t, F16, 8), gain, y); err != nil {
		t.Errorf("CheckHost on host tensors: %v", err)
	}
	c := &Call{Kernel: k, Variant: &k.Variants[0], Tensors: []*Tensor{x, gain, y}, Args: make([]byte, 8), Grid: [3]int{1, 1, 1}}
	m := MetalPort(k)
	if err := m.Run(c); !errors.As(err, &te) || te.Tensor != "x" {
		t.Errorf("Metal Run: %v", err)
	}
	if err := m.Enqueue(0, c); err == nil || !strings.Contains(err.Error(), "no CUDA stream") {
		t.Errorf("Metal Enqueue: %v", err)
	}
}

// Enqueue binds CUDA tensors only; its refusals come before the driver.
func TestEnqueueRefusesHostTensors(t *testing.T) {
	k := testKernel()
	p := CUDAPort(k, &CUDAModule{Kernel: k, Hash: "0000000000000000"})
	x, gain, y := wrap(t, 1<<20, F16, 8), mk(t, F32, 8), wrap(t, 2<<20, F16, 8)
	c := &Call{Kernel: k, Variant: &k.Variants[0], Tensors: []*Tensor{x, gain, y}, Args: make([]byte, 8), Grid: [3]int{1, 1, 1}}
	var te *TensorError
	if err := p.Enqueue(0, c); !errors.As(err, &te) || te.Tensor != "gain" || !strings.Contains(te.Reason, "host memory") {
		t.Errorf("Enqueue with a host tensor: %v", err)
	}
	c.Tensors[1] = wrap(t, 3<<20, F32, 8)
	y.gpu.freed = true
	if err := p.Enqueue(0, c); !errors.As(err, &te) || te.Tensor != "y" || !strings.Contains(te.Reason, "freed") {
		t.Errorf("Enqueue with a freed tensor: %v", err)
	}
	y.gpu.freed = false
	if err := p.Enqueue(0, c); err == nil {
		t.Error("Enqueue without a driver or binary succeeded")
	}
}

func TestCopyRefusals(t *testing.T) {
	a, b := mk(t, F32, 4), mk(t, F16, 4)
	if err := Copy(a, b); err == nil || !strings.Contains(err.Error(), "same dtype and length") {
		t.Errorf("Copy across dtypes: %v", err)
	}
	if err := Copy(a, mk(t, F32, 5)); err == nil {
		t.Error("Copy across lengths succeeded")
	}
	src, _ := FromFloat32(F32, []float32{1, 2, 3, 4}, 2, 2)
	if err := Copy(a, src); err != nil || a.Float32At(3) != 4 {
		t.Errorf("host to host: %v, %v", err, a.Float32s())
	}
	d := wrap(t, 1<<20, F32, 4)
	d.gpu.freed = true
	if err := Copy(d, a); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("Copy into a freed tensor: %v", err)
	}
}

// Without a CUDA driver, NewCUDA says so and is ErrNoPort.
func TestNewCUDAWithoutADriver(t *testing.T) {
	if cudaReady() == nil {
		t.Skip("a CUDA driver is here; e2e/cudagpu tests NewCUDA")
	}
	if _, err := NewCUDA(F32, 4); !errors.Is(err, ErrNoPort) || !strings.Contains(err.Error(), "no CUDA here") {
		t.Errorf("NewCUDA = %v", err)
	}
	if _, err := NewCUDA(T, 4); err == nil || errors.Is(err, ErrNoPort) {
		t.Errorf("a bad dtype is not a missing driver: %v", err)
	}
}
