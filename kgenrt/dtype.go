package kgenrt

import (
	"math"

	"github.com/x448/float16"
)

// DType is the element type of a tensor, or the type of a field of a
// kernel's args struct. The numbering mirrors kgen's own dtype package (a
// test keeps the two in step), so generated code and the generator agree on
// every name.
type DType int

// The types. T is not a storage type: in a Binding it stands for "the
// variant's storage dtype" (the MSL template parameter T), and on a Tensor it
// means the zero Tensor, which every launcher rejects.
const (
	T    DType = iota
	F32        // IEEE binary32, MSL float
	F16        // IEEE binary16, MSL half
	BF16       // bfloat16 (the top half of a binary32), MSL bfloat
	I32        // int32: args fields and pinned integer tensors
	U32        // uint32: args fields and pinned integer tensors
	I8         // int8, pinned integer tensors (quantized values)
	U8         // uint8, pinned integer tensors
)

var dtypeNames = [...]string{T: "T", F32: "f32", F16: "f16", BF16: "bf16", I32: "i32", U32: "u32", I8: "i8", U8: "u8"}

// String is the spelling used in specs ("bf16").
func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeNames) {
		return "dtype(?)"
	}
	return dtypeNames[d]
}

// Size is the size of one element in bytes, 0 for T.
func (d DType) Size() int {
	switch d {
	case F16, BF16:
		return 2
	case F32, I32, U32:
		return 4
	case I8, U8:
		return 1
	}
	return 0
}

// IsFloat reports whether d is a tensor storage type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// IsInt reports whether d is an integer type: formulas see such a tensor's
// elements as integers, and Int32At/SetInt32 read and write them.
func (d DType) IsInt() bool { return d == I8 || d == U8 || d == I32 || d == U32 }

// F16Bits converts f to binary16 with round-to-nearest-even (overflow goes
// to ±Inf, NaN stays NaN).
func F16Bits(f float32) uint16 { return uint16(float16.Fromfloat32(f)) }

// F16Value is the float32 that holds the binary16 b exactly.
func F16Value(b uint16) float32 { return float16.Float16(b).Float32() }

// BF16Bits keeps the top 16 bits of f with round-to-nearest-even; a NaN
// stays a (quiet) NaN instead of rounding into infinity.
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Value is the float32 that holds the bfloat16 b exactly.
func BF16Value(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// RoundF16 rounds f to the nearest binary16 value (ties to even) and returns
// it as a float32. The CPU reference applies it after every operation of an
// f16 compute type: for + - * / and sqrt, an exact float32 result rounded
// once to f16 equals the f16 operation (double rounding is harmless because
// float32 has more than twice f16's precision plus two bits).
func RoundF16(f float32) float32 { return F16Value(F16Bits(f)) }

// RoundBF16 rounds f to the nearest bfloat16 value (ties to even) and
// returns it as a float32; see RoundF16.
func RoundBF16(f float32) float32 { return BF16Value(BF16Bits(f)) }

// ParseDType returns the dtype spelled s ("bf16", "i8"), or T when s
// names none.
func ParseDType(s string) DType {
	for d, n := range dtypeNames {
		if n == s && DType(d) != T {
			return DType(d)
		}
	}
	return T
}
