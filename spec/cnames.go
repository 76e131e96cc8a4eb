package spec

import "fmt"

// The C-family names a kernel or value may not take. A value name becomes
// a parameter or local of the kernel's own MSL and CUDA functions, where it
// hides any global of the same name the function then uses (`float expf`
// makes the call expf(x) a call of a float; an input uint4 makes
// `reinterpret_cast<uint4*>` name a pointer); the kernel name becomes a
// global MSL function template. Either way the C compiler, not the spec,
// would report it, long after `kgen gen`. tests/cnames_test.go scans every
// generated MSL and CUDA source for the names its code looks up where user
// names are declared, and fails on one a spec could still choose.

// Why a word is reserved, as the diagnostic says it.
const (
	whyKeyword = "is a reserved word (a keyword or name of C++, MSL or Go, or one kgen's generated code uses)"
	whyCType   = "is a CUDA or MSL type name (the generated C++ uses these names itself)"
	whyCFunc   = "is a CUDA or Metal library function (the generated C++ calls these by name)"
	whyMetal   = "names a Metal standard library function, type or namespace, which the kernel's MSL template would be ambiguous with (using namespace metal)"
)

// cudaMathFuncs is the CUDA math API's single-precision functions (CUDA
// 12), declared globally by the CUDA headers; the generated CUDA calls
// many of them unqualified (expf, tanhf, fmaxf, fmaf, …). The double and
// integer variants without the f are Metal's names too, in metalLibrary.
var cudaMathFuncs = []string{
	"acosf", "acoshf", "asinf", "asinhf", "atan2f", "atanf", "atanhf", "cbrtf", "ceilf",
	"copysignf", "cosf", "coshf", "cospif", "cyl_bessel_i0f", "cyl_bessel_i1f", "erfcf",
	"erfcinvf", "erfcxf", "erff", "erfinvf", "exp10f", "exp2f", "expf", "expm1f", "fabsf",
	"fdimf", "fdividef", "floorf", "fmaf", "fmaxf", "fminf", "fmodf", "frexpf", "hypotf",
	"ilogbf", "j0f", "j1f", "jnf", "ldexpf", "lgammaf", "llrintf", "llroundf", "log10f",
	"log1pf", "log2f", "logbf", "logf", "lrintf", "lroundf", "modff", "nanf", "nearbyintf",
	"nextafterf", "norm3df", "norm4df", "normcdff", "normcdfinvf", "normf", "powf", "rcbrtf",
	"remainderf", "remquof", "rhypotf", "rintf", "rnorm3df", "rnorm4df", "rnormf", "roundf",
	"rsqrtf", "scalblnf", "scalbnf", "sincosf", "sincospif", "sinf", "sinhf", "sinpif", "sqrtf",
	"tanf", "tanhf", "tgammaf", "truncf", "y0f", "y1f", "ynf",
	// Integer minimum and maximum, and the classification functions.
	"umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "isfinite", "isinf", "isnan", "signbit",
}

// kgenCFuncs are the MSL functions, enums and namespaces kgen's generated
// MSL names unqualified anywhere (the prelude's team reductions, barriers,
// bit casts), beyond the formula functions, which the formula checker
// refuses as value names.
var kgenCFuncs = []string{
	"fmin", "fmax", "fabs", "simd_sum", "simd_max", "simd_min", "simd_shuffle_xor",
	"simd_shuffle_down", "simd_broadcast", "threadgroup_barrier", "simdgroup_barrier",
	"mem_flags", "mem_none", "mem_device", "mem_threadgroup", "mem_texture", "precise", "fast",
	// The simdgroup matrix API of matmul kernels.
	"simdgroup_load", "simdgroup_store", "simdgroup_multiply_accumulate",
	"make_filled_simdgroup_matrix", "simdgroup_float8x8", "simdgroup_matrix",
}

// kgenLocals are names the generated code declares itself in the scope of
// user names, not kgen_-prefixed for history's sake.
var kgenLocals = []string{"rows_per_group"}

// cTypes returns the vector, packed-vector and matrix type names of MSL
// and CUDA, the fixed-width integer types both define, and CUDA's fp16
// and bf16 typedefs.
func cTypes() []string {
	var out []string
	msl := []string{"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float"}
	cuda := []string{"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong", "float", "double"}
	for n := 2; n <= 4; n++ {
		for _, b := range msl {
			out = append(out, fmt.Sprintf("%s%d", b, n), fmt.Sprintf("packed_%s%d", b, n))
		}
		for _, b := range []string{"float", "half"} {
			for m := 2; m <= 4; m++ {
				out = append(out, fmt.Sprintf("%s%dx%d", b, n, m))
			}
		}
	}
	for n := 1; n <= 4; n++ {
		for _, b := range cuda {
			out = append(out, fmt.Sprintf("%s%d", b, n), fmt.Sprintf("make_%s%d", b, n))
		}
	}
	for _, b := range []string{"int", "uint"} {
		for _, w := range []string{"8", "16", "32", "64"} {
			out = append(out, b+w+"_t")
		}
	}
	return append(out, "dim3", "nv_half", "nv_half2", "nv_bfloat16", "nv_bfloat162")
}

// metalLibrary lists the Metal standard library's functions (MSL 3.1
// specification, chapter 6), namespaces and templates. A kernel name is a
// global function template in the .metal file, instantiated as
// `decltype(name<float>) name<float>`; with `using namespace metal` that
// name also finds metal's own templates of the same name (exp, min, simd_sum
// are templates over the scalar and vector types), and the instantiation is
// ambiguous. Value names are locals and hide nothing the code does not call,
// so they may use these (length, step, mix…) unless another list has them.
var metalLibrary = []string{
	// Math.
	"abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "copysign", "cos",
	"cosh", "cospi", "divide", "exp", "exp10", "exp2", "fdim", "floor", "fma", "fmax3", "fmedian3",
	"fmin3", "fmod", "fract", "frexp", "ilogb", "ldexp", "log", "log10", "log2", "max", "max3",
	"median3", "min", "min3", "modf", "nextafter", "pow", "powr", "rint", "round", "rsqrt", "sin",
	"sincos", "sinh", "sinpi", "sqrt", "tan", "tanh", "tanpi", "trunc",
	// Common, integer, relational, geometric and matrix functions.
	"clamp", "mix", "saturate", "sign", "smoothstep", "step", "absdiff", "addsat", "clz", "ctz",
	"extract_bits", "hadd", "insert_bits", "mad24", "madhi", "madsat", "mul24", "mulhi",
	"popcount", "reverse_bits", "rhadd", "rotate", "subsat", "all", "any", "isnormal",
	"isordered", "isunordered", "cross", "distance", "distance_squared", "dot", "faceforward",
	"length", "length_squared", "normalize", "reflect", "refract", "determinant", "transpose",
	// SIMD-group and quad-group functions.
	"simd_active_threads_mask", "simd_all", "simd_and", "simd_any", "simd_ballot",
	"simd_broadcast_first", "simd_is_first", "simd_is_helper_thread", "simd_or",
	"simd_prefix_exclusive_product", "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product",
	"simd_prefix_inclusive_sum", "simd_product", "simd_shuffle", "simd_shuffle_and_fill_down",
	"simd_shuffle_and_fill_up", "simd_shuffle_rotate_down", "simd_shuffle_rotate_up",
	"simd_shuffle_up", "simd_xor", "quad_active_threads_mask", "quad_all", "quad_and", "quad_any",
	"quad_ballot", "quad_broadcast", "quad_broadcast_first", "quad_is_first", "quad_max",
	"quad_min", "quad_or", "quad_prefix_exclusive_sum", "quad_prefix_inclusive_sum",
	"quad_product", "quad_shuffle", "quad_shuffle_down", "quad_shuffle_up", "quad_shuffle_xor",
	"quad_sum", "quad_xor",
	// Atomics and memory order.
	"atomic", "atomic_int", "atomic_uint", "atomic_bool", "atomic_float", "atomic_ulong",
	"atomic_load_explicit", "atomic_store_explicit", "atomic_exchange_explicit",
	"atomic_compare_exchange_weak_explicit", "atomic_fetch_add_explicit",
	"atomic_fetch_and_explicit", "atomic_fetch_max_explicit", "atomic_fetch_min_explicit",
	"atomic_fetch_or_explicit", "atomic_fetch_sub_explicit", "atomic_fetch_xor_explicit",
	"atomic_thread_fence", "memory_order", "memory_order_relaxed",
	// Templates and resource types.
	"vec", "matrix", "packed_vec", "array", "array_ref", "numeric_limits", "sampler", "texture1d",
	"texture1d_array", "texture2d", "texture2d_array", "texture3d", "texturecube",
	"texturecube_array", "texture2d_ms", "texture2d_ms_array", "texture_buffer", "depth2d",
	"depth2d_array", "depthcube", "depthcube_array", "depth2d_ms", "depth2d_ms_array",
	"simdgroup_matrix", "imageblock", "visible_function_table", "intersection_function_table",
}

// cReserved maps every C-family word above to its reason; reservedKernel
// the words only a kernel name may not be.
var cReserved, reservedKernel = func() (map[string]string, map[string]string) {
	all := map[string]string{}
	for _, w := range cTypes() {
		all[w] = whyCType
	}
	for _, w := range append(append([]string{}, cudaMathFuncs...), kgenCFuncs...) {
		all[w] = whyCFunc
	}
	for _, w := range kgenLocals {
		all[w] = whyKeyword
	}
	kernel := map[string]string{}
	for _, w := range metalLibrary {
		kernel[w] = whyMetal
	}
	return all, kernel
}()
