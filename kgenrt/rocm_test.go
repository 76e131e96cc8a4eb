package kgenrt

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// TestROCmModuleFindsItsCodeObjects: the module loads only code objects
// named by its own hash, one per target in Archs order, and without any
// says which files to build and how.
func TestROCmModuleFindsItsCodeObjects(t *testing.T) {
	k := testKernel()
	m := &ROCmModule{Kernel: k, Source: "gen/hip/scale_gain.hip", Hash: "0123456789abcdef", Archs: []string{"gfx942", "gfx1100"}, Dir: "hipbin"}
	if got := strings.Join(m.CodeObjects(), " "); got != "scale_gain-0123456789abcdef.gfx942.co scale_gain-0123456789abcdef.gfx1100.co" {
		t.Fatalf("CodeObjects = %s", got)
	}
	m.Binaries = fstest.MapFS{
		"hipbin/scale_gain-fedcba9876543210.gfx942.co":  {Data: []byte("stale")},
		"hipbin/scale_gain-0123456789abcdef.gfx1100.co": {Data: []byte("rdna")},
	}
	imgs, err := m.images()
	if err != nil || len(imgs) != 1 || string(imgs[0]) != "rdna" {
		t.Fatalf("images = %q, %v; want only the gfx1100 object of this hash", imgs, err)
	}
	m.Binaries = fstest.MapFS{"hipbin/scale_gain-fedcba9876543210.gfx942.co": {Data: []byte("stale")}}
	_, err = m.images()
	if err == nil || !strings.Contains(err.Error(), "kgen rocm") || !strings.Contains(err.Error(), "scale_gain-0123456789abcdef.gfx942.co") {
		t.Fatalf("images without a current object: %v", err)
	}
}

// TestROCmPortRefusesCleanly: without HIP's runtime (every machine here)
// the ROCm slot is filled but Select refuses it, naming the kernel, the
// backend and why; Run says the same and touches nothing; Encode is
// refused, Enqueue refuses host tensors, and NewROCm says why it cannot.
func TestROCmPortRefusesCleanly(t *testing.T) {
	k := testKernel()
	m := &ROCmModule{Kernel: k, Source: "gen/hip/scale_gain.hip", Hash: "0123456789abcdef", Archs: []string{"gfx942"}, Dir: "hipbin"}
	p := ROCmPort(k, m)
	table := PortTable{Kernel: k, Ports: [...]Port{nil, nil, p}}
	if rocmReady() == nil {
		t.Skip("HIP's runtime opened here: the refusal is not what this machine shows")
	}
	_, err := table.Select(ROCm)
	var pe *PortError
	if !errors.As(err, &pe) || pe.Backend != ROCm || pe.Unavailable == nil || !strings.Contains(err.Error(), "libamdhip64") {
		t.Fatalf("Select(ROCm) = %v", err)
	}
	if table.Available(ROCm) {
		t.Error("Available(ROCm) with no runtime")
	}
	if err := p.Encode(nil, nil); err == nil || !strings.Contains(err.Error(), "ROCm port") {
		t.Errorf("Encode = %v", err)
	}
	x, g, y := mk(t, F16, 8), mk(t, F32, 8), mk(t, F16, 8)
	c := fakeCall(t, k, [3]int{1, 1, 1}, x, g, y)
	if err := p.Enqueue(0, c); err == nil || !strings.Contains(err.Error(), "Enqueue binds ROCm tensors only (kgenrt.NewROCm, WrapROCm)") {
		t.Errorf("Enqueue of host tensors = %v", err)
	}
	if _, err := NewROCm(F32, 4); !errors.Is(err, ErrNoPort) || !strings.Contains(err.Error(), "no ROCm here") {
		t.Errorf("NewROCm without a runtime = %v", err)
	}
}
