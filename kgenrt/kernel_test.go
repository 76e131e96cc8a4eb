package kgenrt

import (
	"errors"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/launch"
)

// testKernel is a descriptor shaped like a generated one: x (T), gain
// (pinned f32) → y (T), args {n, slope}; variants f16 and bf16 only.
func testKernel() *Kernel {
	k := &Kernel{
		Name: "scale_gain", Spec: "specs/scale_gain.yaml", Kind: "elementwise", Math: "precise",
		Source: "// source\n", Fallback: "kernels.ScaleGain.Reference",
		Bindings: []Binding{
			{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"n"}},
			{Index: 1, Name: "gain", Role: Input, DType: F32, Shape: []string{"n"}},
			{Index: 2, Name: "y", Role: Output, DType: T, Shape: []string{"n"}},
			{Index: 3, Name: "args", Role: Args, Fields: []Field{
				{Name: "n", Type: U32, Offset: 0, Size: true}, {Name: "slope", Type: F32, Offset: 4}}},
		},
		ElemsPerThread: 8,
	}
	k.Launch[Metal] = launch.Launch{Grid: [3]*launch.Expr{launch.Ceil(launch.V("n"), launch.N(8)), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{256, 1, 1}}
	for _, d := range []DType{F16, BF16} {
		host := "scale_gain_" + d.String()
		k.Variants = append(k.Variants, Variant{DType: d, HostName: host, Key: KeyOf(k.Source, host, k.Math)})
	}
	return k
}

func mk(t *testing.T, dt DType, shape ...int) *Tensor {
	t.Helper()
	tn, err := New(dt, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// view is a tensor over bytes of another allocation, as an unsafe wrapper
// or a future view API could make.
func view(dt DType, data []byte) *Tensor {
	return &Tensor{dtype: dt, shape: []int{len(data) / dt.Size()}, data: data}
}

func TestCheckAcceptsAWellFormedLaunch(t *testing.T) {
	k := testKernel()
	x := mk(t, F16, 2, 3)
	gain := mk(t, F32, 2, 3)
	v, sizes, err := k.Check(x, gain, x) // in place: y = x
	if err != nil || v.HostName != "scale_gain_f16" || sizes["n"] != 6 {
		t.Fatalf("Check = %v, %v, %v", v, sizes, err)
	}
	if err := k.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusals(t *testing.T) {
	k := testKernel()
	x16, y16, g32, x32 := mk(t, F16, 4), mk(t, F16, 4), mk(t, F32, 4), mk(t, F32, 4)
	gBF, yBF, short := mk(t, BF16, 4), mk(t, BF16, 4), mk(t, F16, 3)
	buf := make([]byte, 16)
	cases := []struct {
		name    string
		tensors []*Tensor
		is      error
		want    string
	}{
		{"nil", []*Tensor{x16, nil, y16}, ErrTensor, "kgen: kernel scale_gain: input gain is nil"},
		{"dtype not in the table", []*Tensor{x32, g32, y16}, ErrDType,
			"kgen: kernel scale_gain has no f32 variant (tensor x); its dtype-key table has f16, bf16"},
		{"pinned dtype", []*Tensor{x16, gBF, y16}, ErrDType, "tensor gain is bf16, want f32 (its fixed dtype)"},
		{"variant dtype", []*Tensor{x16, g32, yBF}, ErrDType, "tensor y is bf16, want f16 (the variant's dtype)"},
		{"shape", []*Tensor{x16, g32, short}, ErrTensor, "output y has shape [3], want [4]"},
		{"count", []*Tensor{x16, g32}, nil, "takes 3 tensors, got 2"},
		{"partial overlap", []*Tensor{view(F16, buf[0:8]), g32, view(F16, buf[4:12])}, ErrTensor, "output y overlaps input x"},
		{"output in a pinned input", []*Tensor{x16, g32, view(F16, g32.data[:8])}, ErrTensor, "overlaps input gain"},
	}
	for _, c := range cases {
		_, _, err := k.Check(c.tensors...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v is not %v", c.name, err, c.is)
		}
	}
	var te *TensorError
	if _, _, err := k.Check(x16, nil, y16); !errors.As(err, &te) || te.Kernel != "scale_gain" || te.Tensor != "gain" {
		t.Errorf("nil tensor: %#v", err)
	}
	var de *DTypeError
	if _, _, err := k.Check(x32, g32, y16); !errors.As(err, &de) || de.Kernel != "scale_gain" || de.DType != F32 {
		t.Errorf("unknown dtype: %#v", err)
	}
}

func TestElementLimit(t *testing.T) {
	k := testKernel()
	if got := k.MaxElems(); got != 1<<32-8 {
		t.Fatalf("MaxElems = %d", got)
	}
}

func TestValidateCatchesAStaleKey(t *testing.T) {
	k := testKernel()
	k.Source += "// edited by hand\n"
	err := k.Validate()
	if err == nil || !strings.Contains(err.Error(), "embedded source hashes to") {
		t.Fatalf("Validate = %v", err)
	}
	k = testKernel()
	k.Bindings[1].Index = 5
	if err := k.Validate(); err == nil {
		t.Fatal("Validate accepted a binding out of order")
	}
	k = testKernel()
	k.Variants[1].DType = F16
	if err := k.Validate(); err == nil {
		t.Fatal("Validate accepted a repeated dtype")
	}
}

func TestSizes64(t *testing.T) {
	k := testKernel()
	if sizes, err := k.Sizes64(nil, 3, 3); sizes["n"] != 3 || err != nil {
		t.Fatalf("Sizes64 = %v, %v", sizes, err)
	}
	if _, err := k.Sizes64(nil, 3, 2); err == nil || !strings.Contains(err.Error(), "input gain has 2 values, want 3 (the length of x)") {
		t.Fatalf("Sizes64 = %v", err)
	}
}

// rowKernel is a rowwise descriptor with two segments and a row vector.
func rowKernel() *Kernel {
	return &Kernel{Name: "dual", Bindings: []Binding{
		{Index: 0, Name: "q_x", Role: Input, DType: T, Shape: []string{"q_rows", "cols"}},
		{Index: 1, Name: "q_w", Role: Input, DType: T, Shape: []string{"cols"}},
		{Index: 2, Name: "k_x", Role: Input, DType: T, Shape: []string{"k_rows", "cols"}},
		{Index: 3, Name: "k_w", Role: Input, DType: T, Shape: []string{"cols"}},
		{Index: 4, Name: "q_y", Role: Output, DType: T, Shape: []string{"q_rows", "cols"}},
		{Index: 5, Name: "k_y", Role: Output, DType: T, Shape: []string{"k_rows", "cols"}},
		{Index: 6, Name: "args", Role: Args},
	}, Variants: []Variant{{DType: F32}}, ElemsPerThread: 1}
}

func TestCheckRowShapes(t *testing.T) {
	k := rowKernel()
	qx, w, kx := mk(t, F32, 2, 3, 8), mk(t, F32, 8), mk(t, F32, 5, 8)
	qy, ky := mk(t, F32, 2, 3, 8), mk(t, F32, 5, 8)
	_, sizes, err := k.Check(qx, w, kx, w, qy, ky)
	if err != nil || sizes["q_rows"] != 6 || sizes["k_rows"] != 5 || sizes["cols"] != 8 {
		t.Fatalf("Check = %v, %v", sizes, err)
	}
	for _, c := range []struct {
		tensors []*Tensor
		want    string
	}{
		{[]*Tensor{qx, mk(t, F32, 2, 4), kx, w, qy, ky}, "input q_w has shape [2 4], want [cols]"},
		{[]*Tensor{qx, mk(t, F32, 9), kx, w, qy, ky}, "input q_w has cols = 9 (shape [9]), want 8 (the cols of q_x)"},
		{[]*Tensor{qx, w, mk(t, F32, 5, 9), w, qy, ky}, "input k_x has cols = 9 (shape [5 9]), want 8 (the cols of q_x)"},
		{[]*Tensor{qx, w, kx, w, mk(t, F32, 6, 8), ky}, "output q_y has shape [6 8], want [2 3 8] (the shape of q_x)"},
	} {
		if _, _, err := k.Check(c.tensors...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check = %v, want %q", err, c.want)
		}
	}
	sizes, err = k.Sizes64(Sizes{"cols": 4}, 8, 4, 12, 4)
	if err != nil || sizes["q_rows"] != 2 || sizes["k_rows"] != 3 {
		t.Errorf("Sizes64 = %v, %v", sizes, err)
	}
	if _, err := k.Sizes64(Sizes{"cols": 4}, 8, 5, 12, 4); err == nil || !strings.Contains(err.Error(), "input q_w has 5 values, want 4") {
		t.Errorf("Sizes64 = %v", err)
	}
}

// TestNoMetalIsNoPort: where Metal cannot run, asking for a command buffer
// or a Metal tensor fails with ErrNoPort, so the README's fallback covers
// Encode as it covers Run.
func TestNoMetalIsNoPort(t *testing.T) {
	if _, err := NewCommandBuffer(); err == nil {
		t.Skip("Metal runs here")
	} else if !errors.Is(err, ErrNoPort) {
		t.Errorf("NewCommandBuffer: %v is not ErrNoPort", err)
	}
	if _, err := NewMetal(F32, 4); err != nil && !errors.Is(err, ErrNoPort) {
		t.Errorf("NewMetal: %v is not ErrNoPort", err)
	}
	if _, err := CommandBufferFromMTL(nil); err != nil && !errors.Is(err, ErrNoPort) {
		t.Errorf("CommandBufferFromMTL: %v is not ErrNoPort", err)
	}
}

// TestPortRunsPhaseChains: a kernel's port takes a chain of its phases'
// calls (a split kernel's two launches) and checks every call before any
// launches: a chain whose second call belongs to another kernel, or is
// malformed, is refused whole.
func TestPortRunsPhaseChains(t *testing.T) {
	k, phase, other := testKernel(), testKernel(), testKernel()
	phase.Name, other.Name = "scale_gain_rows", "unrelated"
	k.Phases = []*Kernel{phase}
	x, gain := mk(t, F16, 4), mk(t, F32, 4)
	call := func(of *Kernel, next *Call) *Call {
		return &Call{Kernel: of, Variant: &of.Variants[0], Tensors: []*Tensor{x, gain, x}, Args: make([]byte, 8),
			Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{256, 1, 1}, Next: next}
	}
	p := &metalPort{kernel: k}
	if err := p.checkChain(call(k, call(phase, nil))); err != nil {
		t.Errorf("a chain of the kernel and its phase: %v", err)
	}
	if err := p.checkChain(call(phase, call(other, nil))); err == nil || !strings.Contains(err.Error(), "another kernel") {
		t.Errorf("a chain reaching another kernel: %v", err)
	}
	bad := call(phase, nil)
	bad.Tensors = bad.Tensors[:2]
	if err := p.checkChain(call(k, bad)); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("a chain with a malformed phase call: %v", err)
	}
	if err := (&metalPort{kernel: other}).Run(call(k, nil)); err == nil || !strings.Contains(err.Error(), "another kernel") {
		t.Errorf("a port of another kernel ran the call: %v", err)
	}
}

// TestChainsPhases: only Metal's port runs a split kernel's phases as a
// chain of calls; the CUDA port runs its split inside one library call and
// refuses a chain, so the generated builder must not lay one out for it.
func TestChainsPhases(t *testing.T) {
	if !Metal.ChainsPhases() || CUDA.ChainsPhases() {
		t.Errorf("ChainsPhases: metal %v, cuda %v; want true, false", Metal.ChainsPhases(), CUDA.ChainsPhases())
	}
	k, phase := testKernel(), testKernel()
	phase.Name = "scale_gain_rows"
	k.Phases = []*Kernel{phase}
	x, gain := mk(t, F16, 4), mk(t, F32, 4)
	c := &Call{Kernel: k, Variant: &k.Variants[0], Tensors: []*Tensor{x, gain, x}, Args: make([]byte, 8),
		Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{256, 1, 1}}
	c.Next = &Call{Kernel: phase, Variant: &phase.Variants[0], Tensors: []*Tensor{x, gain, x}, Args: make([]byte, 8),
		Grid: [3]int{1, 1, 1}, Threadgroup: [3]int{256, 1, 1}}
	if err := newCUDAPort(k, &CUDAModule{Kernel: k}).check(c); err == nil || !strings.Contains(err.Error(), "one call") {
		t.Errorf("the CUDA port took a chain: %v", err)
	}
}

// A kernel whose every tensor is pinned launches with its one variant
// (kgen refuses such a kernel with several); with two, no tensor can say
// which, and Check refuses.
func TestCheckPinnedKernelTakesItsOneVariant(t *testing.T) {
	k := testKernel()
	k.Bindings[0].DType, k.Bindings[2].DType = I32, I32
	k.Variants = k.Variants[:1]
	a, gain := mk(t, I32, 4), mk(t, F32, 4)
	if v, _, err := k.Check(a, gain, a); err != nil || v != &k.Variants[0] {
		t.Fatalf("Check = %v, %v; want the one variant", v, err)
	}
	k = testKernel()
	k.Bindings[0].DType, k.Bindings[2].DType = I32, I32
	if _, _, err := k.Check(a, gain, a); err == nil || !strings.Contains(err.Error(), "no tensor of the variant's dtype") {
		t.Fatalf("two variants, every tensor pinned: Check = %v", err)
	}
}
