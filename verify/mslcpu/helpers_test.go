package mslcpu

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// needCompiler skips tests that need clang when none is installed.
func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := Compiler(); err != nil {
		t.Skipf("no compiler for the MSL CPU harness: %v", err)
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, h := range v {
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

func bytesU16(b []byte) []uint16 {
	v := make([]uint16, len(b)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return v
}

// structBytes lays out {uint n; float f;} as Metal (and x86) do.
func structBytes(n uint32, f float32) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, n)
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(f))
	return b
}

// dtype describes one instantiation of a test kernel.
type dtype struct {
	suffix string
	size   int
	encode func([]float32) []byte // float32 values already representable in the type
	decode func([]byte) []float32 // exact widening
	round  func(float32) float32  // RNE rounding to the type, as Metal's cast
	bits   func(float32) uint16   // RNE bits (unused for f32)
	name   string
}

var dtypes = []dtype{
	{suffix: "f32", name: "float", size: 4, encode: f32Bytes, decode: bytesF32, round: func(f float32) float32 { return f }},
	{suffix: "f16", name: "half", size: 2,
		encode: func(v []float32) []byte { return u16Bytes(mapU16(v, F32ToF16)) },
		decode: func(b []byte) []float32 { return mapF32(bytesU16(b), F16ToF32) },
		round:  func(f float32) float32 { return F16ToF32(F32ToF16(f)) }, bits: F32ToF16},
	{suffix: "bf16", name: "bfloat", size: 2,
		encode: func(v []float32) []byte { return u16Bytes(mapU16(v, F32ToBF16)) },
		decode: func(b []byte) []float32 { return mapF32(bytesU16(b), BF16ToF32) },
		round:  func(f float32) float32 { return BF16ToF32(F32ToBF16(f)) }, bits: F32ToBF16},
}

func mapU16(v []float32, f func(float32) uint16) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

func mapF32(v []uint16, f func(uint16) float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

// sameFloat treats all NaNs as equal and distinguishes +0 from -0.
func sameFloat(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}
