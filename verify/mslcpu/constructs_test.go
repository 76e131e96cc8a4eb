package mslcpu

import (
	"math"
	"os"
	"testing"
)

// TestConstructs runs testdata/constructs.metal: shuffle_and_fill follows
// Apple's documented example (delta 1, modulo 4: data {a,b,c,d} and fill
// {s,t,u,v} give {v,a,b,c} up and {b,c,d,s} down), __metal_exp is exp, the
// thread variant of an address-space overload is the one that runs, and
// 0.1h is half's nearest value to 0.1 (0.0999755859375), 0.5bf exact.
func TestConstructs(t *testing.T) {
	needCompiler(t)
	src, err := os.ReadFile("testdata/constructs.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: "constructs", Buffers: [][]byte{make([]byte, 4*128)},
		Grid: [3]uint32{32, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32(out[0])
	for l := 0; l < 32; l++ {
		base, i := l/4*4, l%4
		up := float32(base + i - 1)
		if i == 0 {
			up = 100 + float32(base+3)
		}
		down := float32(base + i + 1)
		if i == 3 {
			down = 100 + float32(base)
		}
		if got[l] != up || got[32+l] != down {
			t.Errorf("lane %d: fill up %v (want %v), fill down %v (want %v)", l, got[l], up, got[32+l], down)
		}
		if got[64+l] != 0 {
			t.Errorf("lane %d: __metal_exp differs from exp by %v", l, got[64+l])
		}
		if want := float32(1 + 0.0999755859375 + 0.5); got[96+l] != want {
			t.Errorf("lane %d: acc().get() + 0.1h + 0.5bf = %v, want %v", l, got[96+l], want)
		}
	}
}

// TestTraits runs testdata/traits.metal (the constructs candle's
// reduce.metal needs): vec_elements is 4 for float4 and 0 for float, a
// specialised _numeric_limits_impl answers numeric_limits, a class with
// only defaulted constructors is aggregate-initialised, a threadgroup array
// parameter is the group's memory (0+…+31 = 496), fast::min is min, half4
// is a simdgroup type and long is not; a braced list reaches a uint3
// parameter ((3+4)·2), half 1.00390625 converts to bfloat by rounding to
// nearest even (1), int4 converts to float4 by value, and sqrt takes a
// double ((496+4)/2.0) as float, and metal::array<float, 2>{1.5, 2.5}
// indexes and has size 2.
func TestTraits(t *testing.T) {
	needCompiler(t)
	src, err := os.ReadFile("testdata/traits.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: "traits", Buffers: [][]byte{make([]byte, 4*13)},
		Grid: [3]uint32{32, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{4, 0, 7, -65504, 496, -3, 1, 1, 14, 1, -2, float32(math.Sqrt(250)), 4.5}
	for i, g := range bytesF32(out[0]) {
		if g != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, g, want[i])
		}
	}
}
