package parity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// TestInputsAdversarial: every value is exact in its storage type, finite
// values stay within the range, every special appears in a run of 30 or
// more, and the bands are there (subnormals of the type, the far-negative
// tail, the range's edge).
func TestInputsAdversarial(t *testing.T) {
	for _, typ := range dtype.Floats {
		lim := LimitsOf(typ)
		for _, n := range []int{30, 1000, LargeSize} {
			vals := Inputs(rand.New(rand.NewPCG(1, uint64(n))), n, typ, DefaultRange, true)
			var subnormal, tail, edge, negZero, nan, inf int
			for _, v := range vals {
				switch {
				case math.IsNaN(v):
					nan++
					continue
				case math.IsInf(v, 0):
					inf++
					continue
				case v == 0 && math.Signbit(v):
					negZero++
				}
				if v != dtype.Round(v, typ) {
					t.Fatalf("%s: %g is not exact in the type", typ, v)
				}
				if math.Abs(v) > DefaultRange {
					t.Fatalf("%s: %g is beyond ±%d", typ, v, DefaultRange)
				}
				a := math.Abs(v)
				if a > 0 && a < lim.MinNormal {
					subnormal++
				}
				if v < -20 {
					tail++
				}
				if a == DefaultRange {
					edge++
				}
			}
			if nan == 0 || inf < 2 || negZero == 0 || subnormal < 4 || edge < 2 {
				t.Errorf("%s n=%d: NaN %d, ±Inf %d, -0 %d, subnormals %d, ±170 %d: a special is missing", typ, n, nan, inf, negZero, subnormal, edge)
			}
			if n >= 1000 && tail < n/20 {
				t.Errorf("%s n=%d: only %d values below -20 (the far-negative tail)", typ, n, tail)
			}
		}
		plain := Inputs(rand.New(rand.NewPCG(1, 1)), 1000, typ, 8, false)
		for _, v := range plain {
			if math.IsNaN(v) || math.Abs(v) > 8 {
				t.Fatalf("%s plain: %g outside [-8, 8]", typ, v)
			}
		}
	}
}

// TestJudge pins the comparison rules.
func TestJudge(t *testing.T) {
	tol := ir.Tolerance{Abs: 1e-3, Rel: 1e-3}
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name             string
		got, want, bound float64
		t                dtype.DType
		ok               bool
		note             string
	}{
		{"within abs + rel", 1.0015, 1, 0, dtype.F32, true, ""},
		{"beyond abs + rel", 1.0025, 1, 0, dtype.F32, false, ""},
		{"the bound widens it", 1.0025, 1, 0.001, dtype.F32, true, ""},
		{"correctly rounded passes", 65504, 65519, 0, dtype.F16, true, ""},
		{"overflow to the rounded infinity", inf, 65520, 0, dtype.F16, true, ""},
		{"NaN for NaN", nan, nan, 0, dtype.F32, true, ""},
		{"NaN where the reference is finite", nan, 1, 0, dtype.F32, false, "NaN where"},
		{"a number where the reference is NaN", 1, nan, 0, dtype.F32, false, "reference is NaN"},
		{"the wrong infinity", -inf, inf, 0, dtype.F32, false, "infinity"},
		{"an infinity for a finite reference", inf, 1e30, 1e30, dtype.F32, false, "infinity"},
		{"an undecided lane accepts either", inf, 3.4e38, inf, dtype.F32, true, ""},
		{"a NaN bound counts as 0", 1.0025, 1, nan, dtype.F32, false, ""},
	}
	for _, c := range cases {
		_, ok, note := judge(c.got, c.want, c.bound, c.t, tol)
		if ok != c.ok || !strings.Contains(note, c.note) {
			t.Errorf("%s: judge(%g, %g, %g) = %v %q, want %v %q", c.name, c.got, c.want, c.bound, ok, note, c.ok, c.note)
		}
	}
}
