package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// Dialect is what differs between two C-family backends: spellings (types,
// address spaces, conversions, thread indices, barriers' helpers) and the
// few strategies that are truly one backend's (how a row pass loops, how
// the entry points are instantiated). Everything else is written once.
type Dialect struct {
	Name    string // "msl" or "cuda": names the template folder
	Backend ir.Backend
	// Types spells the storage, compute and field types.
	Types map[dtype.DType]string
	Uint  string // the 32-bit unsigned index type
	// Offset is the type of element offsets: "uint" on Metal, 64-bit on
	// CUDA, where one tensor may pass 4 Gi elements.
	Offset string
	// FuncQual and RefQual spell a stage function and its output
	// parameters ("thread float&" on Metal).
	FuncQual, RefQual string
	// In and Out spell a tensor pointer of the kernel body; Buffer adds the
	// binding's index where the backend binds by attribute.
	In, Out func(elem string) string
	Buffer  func(index int) string
	Args    func(strct string) string // the args struct parameter
	// Cvt converts any storage or compute value to type t; FromFloat a
	// float; ToFloat widens to float; FloatCast casts an unsigned count
	// (args.cols) to float.
	Cvt, FromFloat func(t, x string) string
	ToFloat        func(x string) string
	FloatCast      func(n string) string
	FloatFunc      func(name string) string // fmax → metal::fmax / fmaxf
	ReadOnly       func(elem string) string // a load through the read-only path, where there is one
	PosInf, NegInf string                   // accumulator identities of max and min
	InfLit, NegLit string                   // ±inf as expression literals
	Shared         string                   // the qualifier of team scratch memory
	Barrier        string                   // a threadgroup (block) barrier over its shared memory
	// AddRN spells a float sum the compiler may not contract into an FMA
	// with the multiply that made an operand (the column folds: their bits
	// must not depend on the optimiser).
	AddRN           func(a, b string) string
	SimdGroup       string                      // "simdgroup" or "warp", in comments
	ShuffleXor      func(v, lane string) string // v from the lane lane-xor away in the simdgroup or warp
	LaneOffset      string                      // the type of a shuffle's lane offset
	RowUnroll       string                      // the pragma before a matmul row pass's column loop, if any
	ThreadGroup     string                      // "threadgroup" or "block", in comments
	Threads         map[ThreadIndex]threadIndex
	ArrayAlign      string // the prefix of per-thread arrays moved as 16-byte vectors
	UnrollElemLoops bool   // loop over all kPerThread slots (constant trip count) with a guard
	// NarrowArith reports whether + - * / and negation of compute type c
	// are spelled in float and rounded once (Metal has native half).
	NarrowArith func(c dtype.DType) bool
	// PreludeOverloads: the prelude has overloads for every compute type,
	// so its functions are called without conversions.
	PreludeOverloads bool
	Spell            func(f *funcs.Func, math string) funcs.Spelling
	KernelHead       func(kernel string) string // the templated body function
	// RowLoops writes a row pass's element loops around body (the
	// backend's strategy for caches and vector loads).
	RowLoops func(rw *rowWriter, p int, body elemBody)
	// LetCache: RowLoops' let-cached path calls the let-cached stages
	// (ir.Rows.CachedStage), whose cache RowDecls declares.
	LetCache bool
	// RowDecls declares what RowLoops needs after the shared row setup.
	RowDecls func(rw *rowWriter)
	// ScalarRowCache: the element-by-element row loop keeps cached inputs
	// in registers (kCache values per lane); CUDA caches vectors only.
	ScalarRowCache bool
	// RowHelpers names the template blocks every rowwise kernel includes.
	RowHelpers []string
	// Instances writes the entry points, one per storage dtype.
	Instances func(w *Writer, v *view)
	// Refuses lists the kinds the dialect does not write, each with the
	// reason Emit gives (the IR refuses such a port at the spec first).
	Refuses map[ir.Kind]string
	// Wave spells the lanes of a simdgroup, warp or wavefront, which every
	// team reduction, lane index and shuffle butterfly respects: 32 on
	// Metal and CUDA, HIP's KGEN_WAVE (64 on CDNA, 32 on RDNA, per target).
	// HalfWave is a butterfly's first offset (Wave / 2).
	Wave, HalfWave string
	// Waves spells the simdgroups (warps, wavefronts) of n threads, at
	// least one: the size of the per-wave scratch arrays.
	Waves func(n string) string
}

// ThreadIndex is a thread coordinate a kind's body reads.
type ThreadIndex int

// The thread coordinates.
const (
	GlobalID ThreadIndex = iota // thread position in the grid
	LocalID                     // thread index in its group
	GroupID                     // group position in the grid
	SimdLane                    // lane index in its simdgroup or warp
	SimdID                      // simdgroup or warp index in the group
	GroupXYZ                    // group position in the grid, all three axes (a uint3)
)

// threadIndex is how a dialect provides one coordinate: as a kernel
// parameter (Metal attributes), as a local declaration, and the expression
// that reads it.
type threadIndex struct {
	Param, Local, Expr string
}

// attribute is a coordinate Metal passes as a kernel parameter with an
// attribute.
func attribute(name, attr string) threadIndex {
	return threadIndex{Param: "uint " + name + " [[" + attr + "]]", Expr: name}
}

// local is a coordinate CUDA computes once into a local from its builtins.
func local(name, value string) threadIndex {
	return threadIndex{Local: "const unsigned int " + name + " = " + value + ";", Expr: name}
}

// TypeName spells a binding's element type; dtype.Invalid is the template
// parameter T.
func (d *Dialect) TypeName(t dtype.DType) string {
	if t == dtype.Invalid {
		return "T"
	}
	return d.Types[t]
}

// Metal is the Metal Shading Language dialect.
var Metal = &Dialect{
	Name: "msl", Backend: ir.Metal,
	Types: map[dtype.DType]string{dtype.F32: "float", dtype.F16: "half", dtype.BF16: "bfloat",
		dtype.I32: "int", dtype.U32: "uint", dtype.I8: "char", dtype.U8: "uchar"},
	Uint: "uint", Offset: "uint",
	FuncQual: "inline void", RefQual: "thread ",
	In:        func(t string) string { return "device const " + t + "*" },
	Out:       func(t string) string { return "device " + t + "*" },
	Buffer:    func(i int) string { return fmt.Sprintf(" [[buffer(%d)]]", i) },
	Args:      func(s string) string { return "constant " + s + "&" },
	Cvt:       func(t, x string) string { return t + "(" + x + ")" },
	FromFloat: func(t, x string) string { return t + "(" + x + ")" },
	ToFloat:   func(x string) string { return "float(" + x + ")" },
	FloatCast: func(n string) string { return "float(" + n + ")" },
	FloatFunc: func(n string) string { return "metal::" + n },
	ReadOnly:  func(e string) string { return e },
	PosInf:    "INFINITY", NegInf: "-INFINITY",
	InfLit: "INFINITY", NegLit: "(-INFINITY)",
	Shared: "threadgroup", SimdGroup: "simdgroup", ThreadGroup: "threadgroup",
	Barrier:    "threadgroup_barrier(mem_flags::mem_threadgroup);",
	AddRN:      func(a, b string) string { return a + " + " + b },
	ShuffleXor: func(v, o string) string { return "simd_shuffle_xor(" + v + ", " + o + ")" },
	LaneOffset: "ushort",
	Threads: map[ThreadIndex]threadIndex{
		GlobalID: attribute("gid", "thread_position_in_grid"),
		LocalID:  attribute("kgen_tid", "thread_index_in_threadgroup"),
		GroupID:  attribute("kgen_tg", "threadgroup_position_in_grid"),
		SimdLane: attribute("kgen_simd_lane", "thread_index_in_simdgroup"),
		SimdID:   attribute("kgen_simd", "simdgroup_index_in_threadgroup"),
		GroupXYZ: {Param: "uint3 kgen_tg3 [[threadgroup_position_in_grid]]", Expr: "kgen_tg3"},
	},
	NarrowArith:      func(c dtype.DType) bool { return c == dtype.BF16 },
	PreludeOverloads: true,
	Spell:            func(f *funcs.Func, math string) funcs.Spelling { return f.MSL.Mode(math) },
	KernelHead:       func(k string) string { return "kernel void " + k },
	RowLoops:         metalRowLoops,
	RowDecls:         func(*rowWriter) {},
	ScalarRowCache:   true,
	Instances:        metalInstances,
	Wave:             "32", HalfWave: "16",
	Waves: func(n string) string { return n + " / 32" },
}

// CUDA is the CUDA C++ dialect.
var CUDA = &Dialect{
	Name: "cuda", Backend: ir.CUDA,
	Types: map[dtype.DType]string{dtype.F32: "float", dtype.F16: "__half", dtype.BF16: "__nv_bfloat16",
		dtype.I32: "int", dtype.U32: "unsigned int", dtype.I8: "signed char", dtype.U8: "unsigned char"},
	Uint: "unsigned int", Offset: "unsigned long long",
	FuncQual: "__device__ __forceinline__ void", RefQual: "",
	In:        func(t string) string { return "const " + t + "* __restrict__" },
	Out:       func(t string) string { return t + "* __restrict__" },
	Buffer:    func(int) string { return "" },
	Args:      func(s string) string { return "const " + s },
	Cvt:       func(t, x string) string { return "kgen_cvt<" + t + ">(" + x + ")" },
	FromFloat: func(t, x string) string { return "kgen_to<" + t + ">(" + x + ")" },
	ToFloat:   func(x string) string { return "kgen_f(" + x + ")" },
	FloatCast: func(n string) string { return "(float)" + n },
	FloatFunc: func(n string) string { return n + "f" },
	ReadOnly:  func(e string) string { return "__ldg(&" + e + ")" },
	PosInf:    "__int_as_float(0x7f800000)", NegInf: "__int_as_float(0xff800000)",
	InfLit: "__int_as_float(0x7f800000)", NegLit: "(-__int_as_float(0x7f800000))",
	Shared: "__shared__", SimdGroup: "warp", ThreadGroup: "block",
	Barrier:    "__syncthreads();",
	AddRN:      func(a, b string) string { return "__fadd_rn(" + a + ", " + b + ")" },
	ShuffleXor: func(v, o string) string { return "__shfl_xor_sync(0xffffffffu, " + v + ", " + o + ")" },
	LaneOffset: "int", RowUnroll: "#pragma unroll 8",
	Threads: map[ThreadIndex]threadIndex{
		GlobalID: {Expr: "(unsigned long long)(blockIdx.x * blockDim.x + threadIdx.x)"},
		LocalID:  local("kgen_tid", "threadIdx.x"),
		GroupID:  {Expr: "blockIdx.x"},
		SimdLane: local("kgen_simd_lane", "kgen_tid % 32"),
		SimdID:   local("kgen_simd", "kgen_tid / 32"),
		GroupXYZ: {Local: "const uint3 kgen_tg3 = blockIdx;", Expr: "kgen_tg3"},
	},
	ArrayAlign:      "alignas(16) ",
	UnrollElemLoops: true,
	NarrowArith:     func(c dtype.DType) bool { return c != dtype.F32 },
	Spell:           func(f *funcs.Func, math string) funcs.Spelling { return f.CUDA.Mode(math) },
	KernelHead:      func(k string) string { return "__device__ __forceinline__ void " + k + "_body" },
	RowLoops:        cudaRowLoops,
	RowDecls:        cudaRowDecls,
	LetCache:        true,
	RowHelpers:      []string{"row_io"},
	Instances:       cudaInstances,
	Wave:            "32", HalfWave: "16",
	Waves: func(n string) string { return n + " / 32" },
}

// Dialects is the one table of C-family backends, in port-table order: the
// dialect that writes each backend's source, nil where kgen writes none yet.
// Generate loops over it for every kernel's ir.Kernel.Sources, and the
// templates are parsed from it; a backend gets a source by getting a row.
var Dialects = [ir.NumBackends]*Dialect{ir.Metal: Metal, ir.CUDA: CUDA, ir.ROCm: HIP}
