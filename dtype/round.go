package dtype

import (
	"math"
	"strconv"

	"github.com/x448/float16"
)

// Round returns v rounded to nearest even in type t (f32, f16 or bf16),
// as a float64 that holds that value exactly.
func Round(v float64, t DType) float64 {
	f := float32(v) // float64 → float32 rounds to nearest even
	switch t {
	case F16:
		return float64(F16Value(F16Bits(f)))
	case BF16:
		return float64(BF16Value(BF16Bits(f)))
	}
	return float64(f)
}

// F16Bits converts with round-to-nearest-even (overflow → ±Inf, NaN kept).
func F16Bits(f float32) uint16 { return uint16(float16.Fromfloat32(f)) }

// F16Value is the float32 holding an f16 exactly.
func F16Value(b uint16) float32 { return float16.Float16(b).Float32() }

// BF16Bits keeps the top 16 bits of f with round-to-nearest-even; NaNs stay
// NaN (quiet) instead of rounding into infinity.
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Value is the float32 holding a bf16 exactly.
func BF16Value(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Literal returns the value of a decimal literal rounded to type t. f32 is
// rounded once from the decimal; f16 and bf16 go through float64 first,
// whose 53 bits make a double-rounding difference practically impossible
// for literals written by hand.
func Literal(text string, t DType) (float64, error) {
	if t == F32 {
		v, err := strconv.ParseFloat(text, 32)
		return v, err
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, err
	}
	return Round(v, t), nil
}
