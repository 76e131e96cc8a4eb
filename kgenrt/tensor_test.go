package kgenrt

import (
	"errors"
	"math"
	"testing"
)

func TestTensorConstructors(t *testing.T) {
	bf, err := FromFloat32(BF16, []float32{1 + 1.0/256, 3, -0.5, float32(math.Inf(-1))}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := bf.Float32s(); got[0] != 1 || got[1] != 3 || got[2] != -0.5 || !math.IsInf(float64(got[3]), -1) {
		t.Errorf("bf16 round trip = %v", got)
	}
	if bf.Len() != 4 || len(bf.Shape()) != 2 || bf.DType() != BF16 || len(bf.Bytes()) != 8 || bf.OnDevice() {
		t.Errorf("bf16 tensor: len %d shape %v", bf.Len(), bf.Shape())
	}
	h, err := FromF16Bits([]uint16{0x3c00, 0xc000})
	if err != nil || h.Float32At(0) != 1 || h.Float32At(1) != -2 || h.Bits16()[1] != 0xc000 {
		t.Fatalf("f16 bits: %v %v", h, err)
	}
	if b, _ := FromBF16Bits([]uint16{0x3f80}); b.Float64s()[0] != 1 {
		t.Errorf("bf16 bits")
	}
	f, _ := FromFloat32(F32, []float32{0.1})
	if f.Float32At(0) != 0.1 || f.Bits16() != nil {
		t.Errorf("f32")
	}
	f.SetFloat32(0, 2.5)
	if f.Float32s()[0] != 2.5 {
		t.Errorf("SetFloat32")
	}
	if z, err := New(F16); err != nil || z.Len() != 0 {
		t.Errorf("New(F16) = %v, %v", z, err)
	}
}

func TestTensorConstructorErrors(t *testing.T) {
	if _, err := FromFloat32(F32, []float32{1, 2, 3}, 2, 2); !errors.Is(err, ErrShape) {
		t.Errorf("3 values in [2 2]: %v", err)
	}
	if _, err := New(F32, 2, -1); !errors.Is(err, ErrShape) {
		t.Errorf("negative dim: %v", err)
	}
	if _, err := New(I32, 2); err == nil {
		t.Error("i32 tensor accepted")
	}
	if _, err := New(F32, math.MaxInt/2, 4); !errors.Is(err, ErrShape) {
		t.Errorf("overflow: %v", err)
	}
}
