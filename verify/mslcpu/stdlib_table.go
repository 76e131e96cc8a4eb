package mslcpu

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// The overload table of the harness's Metal standard library: one row per
// function of the MSL specification's math (6.5), common (6.3) and integer
// (6.4) function sets. shim/metal_overloads is generated from it
// (TestOverloadHeader rewrites it with -update and fails when it is stale),
// and TestOverloadTable walks it: every row, in every type and shape,
// compiled and compared with the row's Go reference at a few points.
//
// A real row is one scalar float expression in x, y, z; the header's macros
// (metal_stdlib: KGEN_UNARY, KGEN_BINARY, KGEN_TERNARY) make from it the
// float function, the half one (computed in float, rounded once), the
// elementwise vector template for float, half and bfloat vectors, and the
// scalar-vector mixes (`fmax(0, x4)`, `mix(a4, b4, t)`). bfloat scalars
// take the float function, as in Apple's library (bfloat converts to float
// implicitly), which leaves projects free to define their own bfloat
// overloads (MLX's bf16_math.h).
//
// An integer row is a generic C++ body over T (kgen_int in the header);
// the header defines it for each of the eight integer types by name
// (non-template overloads, so that literals convert as in Metal), for
// their vectors elementwise, and scalar-vector mixes where no real row has
// the name. Relational and geometric functions (6.6, 6.7) are templates in
// metal_stdlib, checked by TestGeometricRelational.
type realRow struct {
	name  string
	args  int
	expr  string                     // C++ over float x, y, z
	ref   func(a ...float64) float64 // the Go reference
	lo    float64                    // test points lie in [lo, hi)
	hi    float64
	ulps  float64 // float tolerance (half: one half ulp more than rounding)
	exact bool    // a float64 reference that float reproduces exactly
}

type intRow struct {
	name string
	args int
	body string // C++ generic over T (W bits, U unsigned T, S 128-bit)
	// ref computes on values of a type of w bits, signed or not, as int64
	// (uint64 values reinterpreted).
	ref func(w int, signed bool, a ...int64) int64
}

func unary(f func(float64) float64) func(...float64) float64 {
	return func(a ...float64) float64 { return f(a[0]) }
}

func binaryF(f func(x, y float64) float64) func(...float64) float64 {
	return func(a ...float64) float64 { return f(a[0], a[1]) }
}

func ternaryF(f func(x, y, z float64) float64) func(...float64) float64 {
	return func(a ...float64) float64 { return f(a[0], a[1], a[2]) }
}

const sinpiExpr = "float(__builtin_sin(3.141592653589793 * static_cast<__typeof__(1.0)>(x)))"

var realMathRows = []realRow{
	{"exp", 1, "__builtin_expf(x)", unary(math.Exp), -8, 8, 1, false},
	{"exp2", 1, "__builtin_exp2f(x)", unary(math.Exp2), -8, 8, 1, false},
	{"exp10", 1, "__builtin_exp10f(x)", unary(func(x float64) float64 { return math.Pow(10, x) }), -4, 4, 1, false},
	{"log", 1, "__builtin_logf(x)", unary(math.Log), 0.01, 100, 1, false},
	{"log2", 1, "__builtin_log2f(x)", unary(math.Log2), 0.01, 100, 1, false},
	{"log10", 1, "__builtin_log10f(x)", unary(math.Log10), 0.01, 100, 1, false},
	{"sqrt", 1, "__builtin_sqrtf(x)", unary(math.Sqrt), 0, 100, 0.5, false},
	{"rsqrt", 1, "1.0f / __builtin_sqrtf(x)", unary(func(x float64) float64 { return 1 / math.Sqrt(x) }), 0.01, 100, 1, false},
	{"cbrt", 1, "__builtin_cbrtf(x)", unary(math.Cbrt), -100, 100, 1, false},
	{"sin", 1, "__builtin_sinf(x)", unary(math.Sin), -6, 6, 1, false},
	{"cos", 1, "__builtin_cosf(x)", unary(math.Cos), -6, 6, 1, false},
	{"tan", 1, "__builtin_tanf(x)", unary(math.Tan), -1.5, 1.5, 1, false},
	{"asin", 1, "__builtin_asinf(x)", unary(math.Asin), -1, 1, 1, false},
	{"acos", 1, "__builtin_acosf(x)", unary(math.Acos), -1, 1, 1, false},
	{"atan", 1, "__builtin_atanf(x)", unary(math.Atan), -10, 10, 1, false},
	{"asinpi", 1, "__builtin_asinf(x) * 0.318309886f", unary(func(x float64) float64 { return math.Asin(x) / math.Pi }), -1, 1, 2, false},
	{"acospi", 1, "__builtin_acosf(x) * 0.318309886f", unary(func(x float64) float64 { return math.Acos(x) / math.Pi }), -1, 1, 2, false},
	{"atanpi", 1, "__builtin_atanf(x) * 0.318309886f", unary(func(x float64) float64 { return math.Atan(x) / math.Pi }), -10, 10, 2, false},
	{"sinh", 1, "__builtin_sinhf(x)", unary(math.Sinh), -5, 5, 2, false},
	{"cosh", 1, "__builtin_coshf(x)", unary(math.Cosh), -5, 5, 2, false},
	{"tanh", 1, "__builtin_tanhf(x)", unary(math.Tanh), -5, 5, 2, false},
	{"asinh", 1, "__builtin_asinhf(x)", unary(math.Asinh), -10, 10, 2, false},
	{"acosh", 1, "__builtin_acoshf(x)", unary(math.Acosh), 1, 10, 2, false},
	{"atanh", 1, "__builtin_atanhf(x)", unary(math.Atanh), -0.9, 0.9, 2, false},
	{"sinpi", 1, sinpiExpr, unary(func(x float64) float64 { return math.Sin(math.Pi * x) }), -2, 2, 1, false},
	{"cospi", 1, strings.ReplaceAll(sinpiExpr, "sin", "cos"), unary(func(x float64) float64 { return math.Cos(math.Pi * x) }), -2, 2, 1, false},
	{"tanpi", 1, strings.ReplaceAll(sinpiExpr, "sin", "tan"), unary(func(x float64) float64 { return math.Tan(math.Pi * x) }), -0.4, 0.4, 1, false},
	{"fabs", 1, "__builtin_fabsf(x)", unary(math.Abs), -8, 8, 0, true},
	{"abs", 1, "__builtin_fabsf(x)", unary(math.Abs), -8, 8, 0, true},
	{"floor", 1, "__builtin_floorf(x)", unary(math.Floor), -8, 8, 0, true},
	{"ceil", 1, "__builtin_ceilf(x)", unary(math.Ceil), -8, 8, 0, true},
	{"round", 1, "__builtin_roundf(x)", unary(math.Round), -8, 8, 0, true},
	{"trunc", 1, "__builtin_truncf(x)", unary(math.Trunc), -8, 8, 0, true},
	{"rint", 1, "__builtin_rintf(x)", unary(math.RoundToEven), -8, 8, 0, true},
	{"fract", 1, "__builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f)", unary(func(x float64) float64 { return x - math.Floor(x) }), -8, 8, 0, true},
	{"saturate", 1, "__builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f)", unary(func(x float64) float64 { return math.Min(math.Max(x, 0), 1) }), -2, 2, 0, true},
	{"sign", 1, "x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == x ? x * 0.0f : x))", unary(sign), -2, 2, 0, true},
	{"recip", 1, "1.0f / x", unary(func(x float64) float64 { return 1 / x }), 0.1, 10, 0.5, false},
	{"pow", 2, "__builtin_powf(x, y)", binaryF(math.Pow), 0.1, 4, 1, false},
	{"powr", 2, "__builtin_powf(x, y)", binaryF(math.Pow), 0.1, 4, 1, false},
	{"atan2", 2, "__builtin_atan2f(x, y)", binaryF(math.Atan2), -4, 4, 2, false},
	{"atan2pi", 2, "__builtin_atan2f(x, y) * 0.318309886f", binaryF(func(x, y float64) float64 { return math.Atan2(x, y) / math.Pi }), -4, 4, 2, false},
	{"fmod", 2, "__builtin_fmodf(x, y)", binaryF(math.Mod), 0.5, 8, 0, true},
	{"fmin", 2, "__builtin_fminf(x, y)", binaryF(math.Min), -8, 8, 0, true},
	{"fmax", 2, "__builtin_fmaxf(x, y)", binaryF(math.Max), -8, 8, 0, true},
	{"min", 2, "__builtin_fminf(x, y)", binaryF(math.Min), -8, 8, 0, true},
	{"max", 2, "__builtin_fmaxf(x, y)", binaryF(math.Max), -8, 8, 0, true},
	{"copysign", 2, "__builtin_copysignf(x, y)", binaryF(math.Copysign), -8, 8, 0, true},
	{"fdim", 2, "__builtin_fdimf(x, y)", binaryF(math.Dim), -8, 8, 0.5, false},
	{"step", 2, "y < x ? 0.0f : 1.0f", binaryF(func(e, x float64) float64 { return b2f(x >= e) }), -2, 2, 0, true},
	{"divide", 2, "x / y", binaryF(func(x, y float64) float64 { return x / y }), 0.5, 8, 0.5, false},
	{"fmax3", 3, "__builtin_fmaxf(__builtin_fmaxf(x, y), z)", ternaryF(max3), -8, 8, 0, true},
	{"fmin3", 3, "__builtin_fminf(__builtin_fminf(x, y), z)", ternaryF(min3), -8, 8, 0, true},
	{"max3", 3, "__builtin_fmaxf(__builtin_fmaxf(x, y), z)", ternaryF(max3), -8, 8, 0, true},
	{"min3", 3, "__builtin_fminf(__builtin_fminf(x, y), z)", ternaryF(min3), -8, 8, 0, true},
	{"median3", 3, "__builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z))", ternaryF(median3), -8, 8, 0, true},
	{"fmedian3", 3, "__builtin_fmaxf(__builtin_fminf(x, y), __builtin_fminf(__builtin_fmaxf(x, y), z))", ternaryF(median3), -8, 8, 0, true},
	{"fma", 3, "__builtin_fmaf(x, y, z)", ternaryF(func(x, y, z float64) float64 { return x*y + z }), -8, 8, 0.5, false},
	{"mad", 3, "__builtin_fmaf(x, y, z)", ternaryF(func(x, y, z float64) float64 { return x*y + z }), -8, 8, 0.5, false},
	{"mix", 3, "x + (y - x) * z", ternaryF(func(x, y, z float64) float64 { return x + (y-x)*z }), -1, 1, 4, false},
	{"clamp", 3, "__builtin_fminf(__builtin_fmaxf(x, y), z)", ternaryF(func(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }), -8, 8, 0, true},
	{"smoothstep", 3, "kgen_smoothstep(x, y, z)", ternaryF(smoothstep), -2, 2, 8, false},
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x * 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func max3(x, y, z float64) float64    { return math.Max(math.Max(x, y), z) }
func min3(x, y, z float64) float64    { return math.Min(math.Min(x, y), z) }
func median3(x, y, z float64) float64 { return math.Max(math.Min(x, y), math.Min(math.Max(x, y), z)) }

// smoothstep(edge0, edge1, x): Hermite interpolation between the edges.
func smoothstep(e0, e1, x float64) float64 {
	t := math.Min(math.Max((x-e0)/(e1-e0), 0), 1)
	return t * t * (3 - 2*t)
}

var intRows = []intRow{
	{"abs", 1, "x < T(0) ? T(-x) : x", func(w int, s bool, a ...int64) int64 {
		if s && a[0] < 0 {
			return wrap(w, s, -a[0])
		}
		return a[0]
	}},
	{"popcount", 1, "T(__builtin_popcountll((unsigned long long)U(x)))", func(w int, s bool, a ...int64) int64 {
		return int64(bits.OnesCount64(uint64(a[0]) & mask(w)))
	}},
	{"clz", 1, "T(U(x) == 0 ? W : __builtin_clzll((unsigned long long)U(x)) - (64 - W))", func(w int, s bool, a ...int64) int64 {
		return int64(bits.LeadingZeros64(uint64(a[0])&mask(w)) - (64 - w))
	}},
	{"ctz", 1, "T(U(x) == 0 ? W : __builtin_ctzll((unsigned long long)U(x)))", func(w int, s bool, a ...int64) int64 {
		if uint64(a[0])&mask(w) == 0 {
			return int64(w)
		}
		return int64(bits.TrailingZeros64(uint64(a[0])))
	}},
	{"reverse_bits", 1, "kgen_int::reverse(x)", func(w int, s bool, a ...int64) int64 {
		return wrap(w, s, int64(bits.Reverse64(uint64(a[0])&mask(w))>>(64-w)))
	}},
	{"min", 2, "y < x ? y : x", func(w int, s bool, a ...int64) int64 { return pick(s, a[1], a[0], less(s, a[1], a[0])) }},
	{"max", 2, "x < y ? y : x", func(w int, s bool, a ...int64) int64 { return pick(s, a[1], a[0], less(s, a[0], a[1])) }},
	{"absdiff", 2, "T(x < y ? U(U(y) - U(x)) : U(U(x) - U(y)))", func(w int, s bool, a ...int64) int64 {
		d := a[0] - a[1]
		if less(s, a[0], a[1]) {
			d = a[1] - a[0]
		}
		return wrap(w, s, d)
	}},
	{"addsat", 2, "kgen_int::sat<T>(__int128(x) + __int128(y))", func(w int, s bool, a ...int64) int64 { return sat(w, s, a[0], a[1], 1) }},
	{"subsat", 2, "kgen_int::sat<T>(__int128(x) - __int128(y))", func(w int, s bool, a ...int64) int64 { return sat(w, s, a[0], a[1], -1) }},
	{"hadd", 2, "T((__int128(x) + __int128(y)) >> 1)", func(w int, s bool, a ...int64) int64 { return half(s, a[0], a[1], 0) }},
	{"rhadd", 2, "T((__int128(x) + __int128(y) + 1) >> 1)", func(w int, s bool, a ...int64) int64 { return half(s, a[0], a[1], 1) }},
	{"mulhi", 2, "T((S(x) * S(y)) >> W)", func(w int, s bool, a ...int64) int64 { return mulhi(w, s, a[0], a[1]) }},
	{"rotate", 2, "kgen_int::rotl(x, y)", func(w int, s bool, a ...int64) int64 {
		v, k := uint64(a[0])&mask(w), int(uint64(a[1])%uint64(w))
		return wrap(w, s, int64((v<<k|v>>((w-k)%w))&mask(w)))
	}},
	{"clamp", 3, "min(max(x, y), z)", func(w int, s bool, a ...int64) int64 {
		m := pick(s, a[1], a[0], less(s, a[0], a[1]))
		return pick(s, a[2], m, less(s, a[2], m))
	}},
	{"max3", 3, "max(max(x, y), z)", func(w int, s bool, a ...int64) int64 {
		m := pick(s, a[1], a[0], less(s, a[0], a[1]))
		return pick(s, a[2], m, less(s, m, a[2]))
	}},
	{"min3", 3, "min(min(x, y), z)", func(w int, s bool, a ...int64) int64 {
		m := pick(s, a[1], a[0], less(s, a[1], a[0]))
		return pick(s, a[2], m, less(s, a[2], m))
	}},
}

func mask(w int) uint64 {
	if w == 64 {
		return math.MaxUint64
	}
	return 1<<w - 1
}

// wrap reduces v to a w-bit value, sign-extended when signed.
func wrap(w int, s bool, v int64) int64 {
	u := uint64(v) & mask(w)
	if s && w < 64 && u>>(w-1) == 1 {
		u |= ^mask(w)
	}
	return int64(u)
}

func less(s bool, a, b int64) bool {
	if s {
		return a < b
	}
	return uint64(a) < uint64(b)
}

func pick(_ bool, a, b int64, takeA bool) int64 {
	if takeA {
		return a
	}
	return b
}

func sat(w int, s bool, a, b int64, sgn int64) int64 {
	if s {
		lo, hi := -int64(1)<<(w-1), int64(mask(w-1))
		r, overflow := a+sgn*b, false
		if w == 64 {
			overflow = sgn > 0 && (a > 0 && b > 0 && r < 0 || a < 0 && b < 0 && r >= 0) ||
				sgn < 0 && (a >= 0 && b < 0 && r < 0 || a < 0 && b > 0 && r >= 0)
			if overflow {
				if a < 0 {
					return lo
				}
				return hi
			}
			return r
		}
		return max(lo, min(hi, r))
	}
	ua, ub := uint64(a), uint64(b)
	if sgn > 0 {
		r, c := bits.Add64(ua, ub, 0)
		if c != 0 || r > mask(w) {
			return int64(mask(w))
		}
		return int64(r)
	}
	if ub > ua {
		return 0
	}
	return int64(ua - ub)
}

func half(s bool, a, b, round int64) int64 {
	if s { // floor((a + b + round) / 2) without overflow
		return a>>1 + b>>1 + (a&1+b&1+round)>>1
	}
	ua, ub := uint64(a), uint64(b)
	return int64(ua>>1 + ub>>1 + (ua&1+ub&1+uint64(round))>>1)
}

func mulhi(w int, s bool, a, b int64) int64 {
	if s {
		hi, lo := bits.Mul64(uint64(a), uint64(b))
		// Signed high word from the unsigned product.
		if a < 0 {
			hi -= uint64(b)
		}
		if b < 0 {
			hi -= uint64(a)
		}
		if w == 64 {
			return int64(hi)
		}
		return wrap(w, true, int64(lo)>>w)
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if w == 64 {
		return int64(hi)
	}
	return int64(lo >> w)
}

// intTypes are MSL's integer scalar types: name, bits, signed.
var intTypes = []struct {
	name   string
	bits   int
	signed bool
}{
	{"char", 8, true}, {"uchar", 8, false}, {"short", 16, true}, {"ushort", 16, false},
	{"int", 32, true}, {"uint", 32, false}, {"long", 64, true}, {"ulong", 64, false},
}

// cppIntTypes are the C++ types of intTypes: MSL's char is signed char
// (the element type of char4); C++'s plain char gets the overloads too.
var cppIntTypes = []string{"char", "schar", "uchar", "short", "ushort", "int", "uint", "long", "ulong"}

// overloadHeader is shim/metal_overloads, generated from the tables.
func overloadHeader() string {
	var b strings.Builder
	b.WriteString("// metal_overloads: generated from verify/mslcpu/stdlib_table.go by\n")
	b.WriteString("// `go test ./verify/mslcpu -run TestOverloadHeader -update`. DO NOT EDIT.\n")
	b.WriteString("// Included by metal_stdlib inside namespace metal, after the KGEN_* macros.\n\n")
	b.WriteString("// Integer functions (MSL 6.4), for char, uchar, short, ushort, int, uint,\n// long and ulong and their vectors.\n")
	real := map[string]bool{}
	for _, r := range realMathRows {
		real[r.name] = true
	}
	params := []string{"T x", "T x, T y", "T x, T y, T z"}
	args := []string{"x", "x, y", "x, y, z"}
	for _, r := range intRows {
		fmt.Fprintf(&b, "namespace kgen_int {\ntemplate <class T> inline T %s(%s) {\n  KGEN_INT_TYPES(T);\n  return %s;\n}\n} // namespace kgen_int\n",
			r.name, params[r.args-1], r.body)
		for _, typ := range cppIntTypes {
			fmt.Fprintf(&b, "inline %s %s(%s) { return kgen_int::%s<%s>(%s); }\n", typ, r.name,
				strings.ReplaceAll(params[r.args-1], "T ", typ+" "), r.name, typ, args[r.args-1])
		}
		fmt.Fprintf(&b, "KGEN_INT_VEC%d(%s)\n", r.args, r.name)
		if r.args > 1 && !real[r.name] {
			fmt.Fprintf(&b, "KGEN_MIXED%d(%s)\n", r.args, r.name)
		}
	}
	b.WriteString("\n// Math and common functions (MSL 6.5, 6.3).\n")
	macro := []string{"KGEN_UNARY", "KGEN_BINARY", "KGEN_TERNARY"}
	for _, r := range realMathRows {
		fmt.Fprintf(&b, "%s(%s, %s)\n", macro[r.args-1], r.name, r.expr)
	}
	return b.String()
}
