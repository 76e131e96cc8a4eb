// Package dtype names the scalar types kgen knows: the storage and compute
// float types of tensors (f32, f16, bf16), the integer storage types of
// pinned tensors (i8, u8, i32, u32) and the integer types of params.
package dtype

// DType is a scalar type. The zero value is invalid.
type DType int

// The types, in the order kgen lists them.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	I32
	U32
	I8
	U8
)

var names = [...]string{Invalid: "invalid", F32: "f32", F16: "f16", BF16: "bf16", I32: "i32", U32: "u32", I8: "i8", U8: "u8"}

// MSL spellings of each type.
var mslNames = [...]string{Invalid: "void", F32: "float", F16: "half", BF16: "bfloat", I32: "int", U32: "uint", I8: "char", U8: "uchar"}

// Floats are the storage and compute types, in canonical order.
var Floats = []DType{F32, F16, BF16}

// Scalars are the types a runtime param may have.
var Scalars = []DType{F32, I32, U32}

// Ints are the integer storage types of pinned tensors; formulas see their
// elements as integers.
var Ints = []DType{I8, U8, I32, U32}

// Storage are the types a pinned tensor may have.
var Storage = []DType{F32, F16, BF16, I8, U8, I32, U32}

// String is the spec spelling ("bf16").
func (t DType) String() string { return names[t] }

// MSL is the Metal Shading Language type name ("bfloat").
func (t DType) MSL() string { return mslNames[t] }

// Size is the size in bytes.
func (t DType) Size() int {
	switch t {
	case F16, BF16:
		return 2
	case I8, U8:
		return 1
	case Invalid:
		return 0
	}
	return 4
}

// IsFloat reports whether t is a tensor type (f32, f16, bf16).
func (t DType) IsFloat() bool { return t == F32 || t == F16 || t == BF16 }

// IsInt reports whether t is an integer type (i8, u8, i32, u32).
func (t DType) IsInt() bool { return t == I8 || t == U8 || t == I32 || t == U32 }

// Parse returns the type spelled s in a spec, or Invalid.
func Parse(s string) DType {
	for t, n := range names {
		if n == s && DType(t) != Invalid {
			return DType(t)
		}
	}
	return Invalid
}

// Names returns the spellings of ts, for messages and suggestions.
func Names(ts []DType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}
