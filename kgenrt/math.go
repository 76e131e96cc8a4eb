package kgenrt

import "math"

// The formula functions' rows (package funcs, column Go) name the helpers
// below that the generated CPU reference calls; kgenrt does not import
// funcs, to stay light for generated code.

// Float is the element type of the CPU reference: float32 for the compute
// types (f32, and f16/bf16 values held exactly in a float32), float64 for the
// unrounded evaluation.
type Float interface{ ~float32 | ~float64 }

// MinNum is IEEE 754 minNum, like MSL fmin: a NaN operand yields the other
// operand. (Go's built-in min returns NaN instead.)
func MinNum[F Float](a, b F) F {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a < b:
		return a
	case b < a:
		return b
	}
	// Equal: prefer -0 over +0, as fmin does on Apple GPUs and in libm.
	if math.Signbit(float64(a)) {
		return a
	}
	return b
}

// MaxNum is IEEE 754 maxNum, like MSL fmax: a NaN operand yields the other
// operand.
func MaxNum[F Float](a, b F) F {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a > b:
		return a
	case b > a:
		return b
	}
	if math.Signbit(float64(a)) {
		return b
	}
	return a
}

// Clamp is MSL clamp(x, lo, hi) = fmin(fmax(x, lo), hi).
func Clamp[F Float](x, lo, hi F) F { return MinNum(MaxNum(x, lo), hi) }

// Where is the formula language's select(c, a, b): a when c holds, else b.
// Both operands are evaluated, which is harmless: formulas have no side
// effects.
func Where[F Float](c bool, a, b F) F {
	if c {
		return a
	}
	return b
}

// Sigmoid is 1 / (1 + exp(-x)), evaluated in float64.
func Sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Rsqrt is 1 / sqrt(x), evaluated in float64.
func Rsqrt(x float64) float64 { return 1 / math.Sqrt(x) }

// FMA32 is fma(a, b, c) rounded once to float32, like MSL fma. The product
// a*b is exact in float64 and the sum is rounded to odd before the final
// rounding to float32, which makes the double rounding correct.
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 24 + 24 bits
	s := p + float64(c)
	if math.IsInf(s, 0) || s != s || math.IsInf(p, 0) {
		return float32(s)
	}
	// TwoSum: err is the exact rounding error of s = p + c.
	bv := s - p
	err := (p - (s - bv)) + (float64(c) - bv)
	if err != 0 && math.Float64bits(s)&1 == 0 {
		// Round to odd: move s one ulp toward the exact sum.
		if (err > 0) == (s > 0) {
			s = math.Nextafter(s, math.Inf(1)*sign(s))
		} else {
			s = math.Nextafter(s, 0)
		}
	}
	return float32(s)
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

// CeilDiv is ceil(a / b) for a >= 0, b > 0, without overflow; the grid
// expressions of the inventory's dispatch use it as ceildiv(a, b).
func CeilDiv(a, b int) int {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
