package kgenrt

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/funcs"
)

// TestIntRulesMatchTheGenerator: the runtime's integer helpers, which the
// CPU references call, are the generator's rules (funcs.IntOp,
// funcs.FloatToInt) on the edges that differ between languages.
func TestIntRulesMatchTheGenerator(t *testing.T) {
	vals := []int32{0, 1, -1, 2, -7, 7, 31, 32, 33, -32, math.MaxInt32, math.MinInt32}
	ops := map[string]func(p, q int32) int32{"/": IDiv, "%": IRem, "<<": Shl, ">>": Shr}
	for op, f := range ops {
		for _, p := range vals {
			for _, q := range vals {
				if got, want := f(p, q), funcs.IntOp(op, p, q); got != want {
					t.Errorf("%d %s %d: kgenrt %d, funcs %d", p, op, q, got, want)
				}
			}
		}
	}
	if IDiv(math.MinInt32, -1) != math.MinInt32 || IRem(5, 0) != 0 || IDiv(5, 0) != 0 || Shl(1, 33) != 2 || Shr(-8, 33) != -4 {
		t.Error("edge rules")
	}
	floats := []float64{0, -0.5, 0.5, 126.9, 127, 127.5, 128, -128.7, -129, 1e10, -1e10, math.Inf(1), math.Inf(-1), math.NaN(), 2147483520, -2147483648}
	for _, lim := range [][2]int32{{-128, 127}, {0, 255}, {math.MinInt32, math.MaxInt32}} {
		for _, v := range floats {
			if got, want := F2I(float32(v), lim[0], lim[1]), funcs.FloatToInt(float64(float32(v)), lim[0], lim[1]); got != want {
				t.Errorf("F2I(%g, %v) = %d, funcs %d", v, lim, got, want)
			}
		}
	}
	if F2I(float32(127.9), -128, 127) != 127 || F2I(float32(-200), -128, 127) != -128 || F2I(float32(math.NaN()), 0, 255) != 0 || F2I(float32(-0.9), 0, 255) != 0 {
		t.Error("saturation edges")
	}
}
