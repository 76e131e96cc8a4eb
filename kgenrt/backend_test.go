package kgenrt

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// fakePort is a port that is always ready and records its calls.
type fakePort struct {
	backend Backend
	runs    int
}

func (p *fakePort) Backend() Backend                   { return p.backend }
func (p *fakePort) Ready() error                       { return nil }
func (p *fakePort) Run(*Call) error                    { p.runs++; return nil }
func (p *fakePort) Encode(*CommandBuffer, *Call) error { return nil }
func (p *fakePort) Enqueue(CUDAStream, *Call) error    { return nil }

func TestSelectOwnsTheRefusal(t *testing.T) {
	k := testKernel()
	rocm := &fakePort{backend: ROCm}
	table := PortTable{Kernel: k, Ports: [...]Port{MetalPort(k), nil, rocm}}

	_, err := table.Select(CUDA)
	var pe *PortError
	if !errors.As(err, &pe) || pe.Kernel != "scale_gain" || pe.Backend != CUDA || pe.Unavailable != nil {
		t.Fatalf("Select(CUDA) = %#v", err)
	}
	if !errors.Is(err, ErrNoPort) {
		t.Errorf("%v is not ErrNoPort", err)
	}
	want := "kgen: kernel scale_gain has no cuda port (its spec sets cuda: null); the caller should take its fallback path (e.g. kernels.ScaleGain.Reference)"
	if err.Error() != want {
		t.Errorf("message\n got %s\nwant %s", err, want)
	}
	if p, err := table.Select(ROCm); p != rocm || err != nil {
		t.Errorf("Select(ROCm) = %v, %v", p, err)
	}
	if _, err := table.Select(Backend(7)); !errors.Is(err, ErrNoPort) {
		t.Errorf("Select(7) = %v", err)
	}
	for b := Backend(0); b < NumBackends; b++ {
		_, err := table.Select(b)
		if table.Available(b) != (err == nil) {
			t.Errorf("Available(%s) disagrees with Select", b)
		}
	}
}

// Off darwin+cgo the Metal slot is filled but refuses: Select says why.
func TestMetalIsUnavailableHere(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("this host may have Metal")
	}
	k := testKernel()
	table := PortTable{Kernel: k, Ports: [...]Port{MetalPort(k), nil, nil}}
	_, err := table.Select(Metal)
	var pe *PortError
	if !errors.As(err, &pe) || pe.Unavailable == nil || !strings.Contains(err.Error(), "metal port cannot run here: Metal needs darwin") {
		t.Fatalf("Select(Metal) = %v", err)
	}
	if table.Available(Metal) {
		t.Error("Available(Metal) on a non-darwin host")
	}
	if _, err := NewMetal(F32, 4); err == nil {
		t.Error("NewMetal succeeded off darwin")
	}
}

func TestMetalPortChecksItsCalls(t *testing.T) {
	k, other := testKernel(), testKernel()
	p := MetalPort(k)
	x, g := mk(t, F16, 4), mk(t, F32, 4)
	v, _, _ := k.Check(x, g, x)
	call := &Call{Kernel: other, Variant: v, Tensors: []*Tensor{x, g, x}, Args: make([]byte, 8)}
	if err := p.Run(call); err == nil || !strings.Contains(err.Error(), "another kernel") {
		t.Errorf("Run(other kernel's call) = %v", err)
	}
	call.Kernel = k
	if err := p.Encode(nil, call); err == nil || !strings.Contains(err.Error(), "needs a command buffer") {
		t.Errorf("Encode(nil) = %v", err)
	}
	if err := p.Encode(&CommandBuffer{}, call); !errors.Is(err, ErrTensor) || !strings.Contains(err.Error(), "host memory") {
		t.Errorf("Encode(host tensors) = %v", err)
	}
	call.Grid = [3]int{0, 1, 1}
	if err := p.Run(call); err != nil {
		t.Errorf("an empty launch should do nothing, got %v", err)
	}
}

func TestStagesShareInPlaceBuffers(t *testing.T) {
	k := testKernel()
	x, g := mk(t, F16, 4), mk(t, F32, 4)
	dev := &Tensor{dtype: F32, shape: []int{4}, data: make([]byte, 16), dev: &deviceBuffer{}}
	plan := stages(&Call{Kernel: k, Tensors: []*Tensor{x, dev, x}})
	want := []stage{
		{Index: 0, Tensor: x, CopyIn: true, SameAs: -1},
		{Index: 1, Tensor: dev, SameAs: -1, OnDevice: true},
		{Index: 2, Tensor: x, CopyOut: true, SameAs: 0},
	}
	for i := range want {
		if plan[i] != want[i] {
			t.Errorf("stage %d = %+v, want %+v", i, plan[i], want[i])
		}
	}
	_ = g
}

func TestCheckDispatch(t *testing.T) {
	k := testKernel()
	c := &Call{Kernel: k, Variant: &k.Variants[0], Grid: [3]int{10, 1, 1}, Threadgroup: [3]int{256, 1, 1}}
	if err := checkDispatch(c, 1024); err != nil {
		t.Error(err)
	}
	if err := checkDispatch(c, 128); err == nil || !strings.Contains(err.Error(), "allows 128") {
		t.Errorf("oversize threadgroup: %v", err)
	}
	c.Grid[0] = 1 << 33
	if err := checkDispatch(c, 1024); err == nil {
		t.Error("oversize grid accepted")
	}
}
