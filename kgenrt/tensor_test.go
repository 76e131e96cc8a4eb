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
	if _, err := New(T, 2); err == nil {
		t.Error("a T tensor accepted")
	}
	if _, err := New(F32, math.MaxInt/2, 4); !errors.Is(err, ErrShape) {
		t.Errorf("overflow: %v", err)
	}
}

// TestIntegerTensors: integer tensors hold what a formula sees (i8
// sign-extends, u8 zero-extends, u32 wraps), stores keep the low bits, and
// float stores into them convert toward zero, saturating, NaN to 0.
func TestIntegerTensors(t *testing.T) {
	q, err := FromBytes(I8, []byte{0x80, 0x7f, 0xff, 0x00})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int32{-128, 127, -1, 0} {
		if got := q.Int32At(i); got != want {
			t.Errorf("i8[%d] = %d, want %d", i, got, want)
		}
	}
	u, _ := FromBytes(U8, []byte{0x80, 0xff})
	if u.Int32At(0) != 128 || u.Int32At(1) != 255 || u.Float32At(1) != 255 {
		t.Errorf("u8 = %d %d", u.Int32At(0), u.Int32At(1))
	}
	q.SetInt32(0, 300) // low byte: 44
	q.SetFloat32(1, float32(math.NaN()))
	q.SetFloat32(2, -1e9) // saturates to int32 min, low byte 0
	q.SetFloat32(3, -2.7)
	for i, want := range []int32{44, 0, 0, -2} {
		if got := q.Int32At(i); got != want {
			t.Errorf("after stores i8[%d] = %d, want %d", i, got, want)
		}
	}
	w, _ := New(U32, 1)
	w.SetInt32(0, -1)
	if w.Int32At(0) != -1 || w.Float32At(0) != 4294967296 {
		t.Errorf("u32 = %d / %g", w.Int32At(0), w.Float32At(0))
	}
	if _, err := FromBytes(I32, []byte{1, 2, 3}); !errors.Is(err, ErrShape) {
		t.Errorf("3 bytes of i32: %v", err)
	}
}
