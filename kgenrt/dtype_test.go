package kgenrt

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
)

// Every 16-bit pattern decodes like the generator, and encoding agrees on
// special values and a million random float32s.
func TestConversionsMatchTheGenerator(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		h, bf := F16Value(uint16(b)), BF16Value(uint16(b))
		if !same32(h, dtype.F16Value(uint16(b))) || !same32(bf, dtype.BF16Value(uint16(b))) {
			t.Fatalf("bits %#04x decode differently", b)
		}
	}
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65520, 1e-8, 6e-8, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32, 3.3895314e38}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	for _, v := range vals {
		if F16Bits(v) != dtype.F16Bits(v) || BF16Bits(v) != dtype.BF16Bits(v) {
			t.Fatalf("%g (%#08x) encodes differently", v, math.Float32bits(v))
		}
	}
}

func same32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func TestRoundingIsNearestEven(t *testing.T) {
	// 1 + 2^-8 is a bf16 tie between 1 and 1 + 2^-7: even (1) wins; f16 keeps it.
	x := float32(1 + 1.0/256)
	if RoundBF16(x) != 1 || RoundF16(x) != x {
		t.Errorf("RoundBF16(%g) = %g, RoundF16 = %g", x, RoundBF16(x), RoundF16(x))
	}
	if y := float32(1 + 3.0/256); RoundBF16(y) != 1+4.0/256 {
		t.Errorf("RoundBF16(%g) = %g, want the even neighbour", y, RoundBF16(y))
	}
	if RoundF16(70000) != float32(math.Inf(1)) {
		t.Errorf("f16 overflow should round to +Inf")
	}
}
