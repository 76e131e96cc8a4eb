package mslcpu

import "math"

// F32ToF16 converts to IEEE binary16 bits with round-to-nearest-even, as
// Metal's half(x) does; NaNs stay NaN (quiet), overflow gives infinity.
// Reference code for parity tests needs exactly this rounding.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		return sign | uint16(roundShift(mant|0x800000, uint(14-e)))
	}
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns v >> s rounded to nearest even; a carry out of the
// mantissa correctly bumps the exponent (or reaches infinity).
func roundShift(v uint32, s uint) uint32 {
	q, rem, half := v>>s, v&(1<<s-1), uint32(1)<<(s-1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// F16ToF32 widens binary16 bits to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		f := float32(mant) * (1.0 / (1 << 24)) // subnormal: mant * 2^-24, exact
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToBF16 converts to bfloat16 bits with round-to-nearest-even (Metal's
// bfloat(x)); NaNs stay NaN (quiet).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16(roundShift(b, 16))
}

// BF16ToF32 widens bfloat16 bits to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
