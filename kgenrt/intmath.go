package kgenrt

// The integer semantics of kgen formulas, as the generated CPU references
// call them; the kernels' prelude helpers (kgen_f2i, kgen_idiv, kgen_irem)
// and the generator's own evaluation (funcs.IntOp, funcs.FloatToInt) are
// the same rules, and a test holds them equal.

// F2I converts a number to an integer in [lo, hi]: toward zero, saturating
// at the bounds, NaN giving 0 (the formulas' i32(x), i8(x), u8(x)).
func F2I[F Float](v F, lo, hi int32) int32 {
	switch x := float64(v); {
	case x != x:
		return 0
	case x <= float64(lo):
		return lo
	case x >= float64(hi):
		return hi
	default:
		return int32(x)
	}
}

// SatI clamps an integer to [lo, hi] (i8(k), u8(k) of an integer k).
func SatI(v, lo, hi int32) int32 { return min(max(v, lo), hi) }

// IDiv is integer division truncating toward zero, 0 for a zero divisor;
// the most negative value divided by -1 wraps to itself.
func IDiv(p, q int32) int32 {
	if q == 0 {
		return 0
	}
	return p / q
}

// IRem is the remainder of IDiv (the dividend's sign), 0 for a zero divisor.
func IRem(p, q int32) int32 {
	if q == 0 {
		return 0
	}
	return p % q
}

// Shl and Shr shift by the count modulo 32; Shr is arithmetic.
func Shl(p, q int32) int32 { return p << (uint32(q) & 31) }

// Shr is p >> (q mod 32), arithmetic (the sign fills).
func Shr(p, q int32) int32 { return p >> (uint32(q) & 31) }

// ConvI32 is F2I over the whole int32 range.
func ConvI32(v float32) int32 { return F2I(v, -1<<31, 1<<31-1) }

// WrapInt is v stored in integer dtype d and read back: i8 and u8 keep the
// low byte (as a kernel's store does), i32 and u32 all 32 bits.
func WrapInt(d DType, v int32) int32 {
	switch d {
	case I8:
		return int32(int8(v))
	case U8:
		return int32(uint8(v))
	}
	return v
}

// Int32Of is an integer tensor's element held in a float64 (Reference64's
// inputs) as the int32 a formula sees; u32 values past 2^31 wrap.
func Int32Of(v float64) int32 { return int32(uint32(int64(v))) }

// PairInterleaved is the column paired with col in a row of cols values
// laid out in interleaved pairs (2k, 2k+1): col ^ 1, kept inside the row
// when cols is odd (which launchers refuse).
func PairInterleaved(col, cols int) int { return min(col^1, cols-1) }

// PairHalf is the column paired with col when a row of cols (even) values
// is split in halves (k, k + cols/2).
func PairHalf(col, cols int) int { return (col + cols/2) % cols }

// PairHalfWidth is the column paired with col by pair_half(x, w) in a row of
// cols values (partial rotary embeddings): with h = clamp(w, 0, cols) / 2,
// columns below h pair with col + h, columns in [h, 2h) with col - h, the
// rest with themselves (the generator's ir.PairColWidth).
func PairHalfWidth(col, cols int, w int32) int {
	h := min(max(int(w), 0), cols) / 2
	switch {
	case col < h:
		return col + h
	case col < 2*h:
		return col - h
	}
	return col
}
