package mslcpu

import (
	"math"
	"testing"
)

// TestF16RoundTrip: every finite half survives float32 and back; every
// midpoint between neighbouring halves rounds to the even one.
func TestF16RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f {
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x, not NaN", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, g)
		}
		if h&0x7fff >= 0x7bff { // largest finite and infinities have no upper neighbour here
			continue
		}
		next := F16ToF32(uint16(h + 1))
		mid := float32((float64(f) + float64(next)) / 2) // exact in float32
		want := uint16(h)
		if h&1 == 1 {
			want = uint16(h + 1)
		}
		if g := F32ToF16(mid); g != want {
			t.Fatalf("midpoint of %#04x and %#04x (%v) -> %#04x, want %#04x", h, h+1, mid, g, want)
		}
	}
}

func TestF16Edges(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // halfway to 65536 rounds to even: infinity
		{float32(math.Inf(-1)), 0xfc00},
		{0x1p-24, 0x0001},
		{0x1p-25, 0x0000},        // tie to even: zero
		{0x1.000002p-25, 0x0001}, // just above the tie
		{0x1.ffcp-15, 0x0400},    // rounds up into the smallest normal
		{float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, c := range cases {
		if g := F32ToF16(c.f); g != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, g, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max float rounds to infinity
		{float32(math.NaN()), 0x7fc0},
	}
	for _, c := range cases {
		if g := F32ToBF16(c.f); g != c.want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.f, g, c.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		if f := BF16ToF32(uint16(h)); f == f && F32ToBF16(f) != uint16(h) {
			t.Fatalf("bf16 %#04x does not round-trip", h)
		}
	}
}
