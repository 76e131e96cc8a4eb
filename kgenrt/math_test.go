package kgenrt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestMinMaxAreIEEEMinNumMaxNum(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	cases := []struct{ a, b, min, max float32 }{
		{1, 2, 1, 2}, {2, 1, 1, 2}, {nan, 3, 3, 3}, {3, nan, 3, 3}, {-1, -1, -1, -1},
	}
	for _, c := range cases {
		if MinNum(c.a, c.b) != c.min || MaxNum(c.a, c.b) != c.max {
			t.Errorf("MinNum/MaxNum(%g, %g) = %g, %g", c.a, c.b, MinNum(c.a, c.b), MaxNum(c.a, c.b))
		}
	}
	if v := MinNum(nan, nan); v == v {
		t.Errorf("MinNum(NaN, NaN) = %g, want NaN", v)
	}
	if !math.Signbit(float64(MinNum(0, negZero))) || math.Signbit(float64(MaxNum(negZero, 0))) {
		t.Errorf("signed zeros: min should be -0, max +0")
	}
	if Clamp(float32(5), 0, 1) != 1 || Clamp(nan, 0, 1) != 0 || Where(false, 1.0, 2.0) != 2 {
		t.Errorf("Clamp/Where")
	}
}

// FMA32 must equal the exact a*b+c rounded once to float32.
func TestFMA32IsSinglyRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	// Cases where double rounding through float64 goes wrong are near
	// float32 ties; build many by perturbing c around -a*b.
	for i := range 200_000 {
		a := math.Float32frombits(r.Uint32()&0x3fffffff | 0x30000000)
		b := math.Float32frombits(r.Uint32()&0x3fffffff | 0x30000000)
		c := float32(-float64(a) * float64(b))
		if i%2 == 0 {
			c = math.Float32frombits(r.Uint32()&0x3fffffff | 0x30000000)
		}
		if got, want := FMA32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	// (1+2^-23)(1-2^-24) + (2^-47+2^-70) = 1 + 2^-24 + 2^-70, just above a
	// float32 midpoint; float64 rounds it onto the midpoint, and a second
	// rounding to even would give 1 instead of 1 + 2^-23.
	a, b := float32(1+1.0/(1<<23)), float32(1-1.0/(1<<24))
	c := float32(math.Ldexp(1+1.0/(1<<23), -47))
	if naive := float32(float64(a)*float64(b) + float64(c)); naive != 1 {
		t.Fatalf("the test case lost its point: naive double rounding gives %g", naive)
	}
	if got, want := FMA32(a, b, c), exact(a, b, c); got != want || want != 1+1.0/(1<<23) {
		t.Errorf("FMA32 just above a tie = %g, want %g", got, want)
	}
}

func TestCeilDiv(t *testing.T) {
	for _, c := range [][3]int{{0, 4, 0}, {1, 4, 1}, {4, 4, 1}, {5, 4, 2}, {math.MaxInt, 8, math.MaxInt/8 + 1}} {
		if got := CeilDiv(c[0], c[1]); got != c[2] {
			t.Errorf("CeilDiv(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
