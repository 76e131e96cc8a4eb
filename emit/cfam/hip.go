package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// HIP is the HIP C++ dialect of the ROCm port: CUDA's structure (the same
// templated body, 16-byte vector row passes and extern "C" entry points)
// over its own primitives, written for clang with no ROCm headers or
// device libraries (templates/hip/notes.tmpl's head): clang's AMDGPU
// builtins for thread indices, barriers and ds_bpermute shuffles,
// _Float16 for half, kgen's own bf16 and math (templates/hip/prelude.tmpl).
//
// The wavefront is KGEN_WAVE lanes, the compiling target's
// __AMDGCN_WAVEFRONT_SIZE: one source serves gfx9 (CDNA, 64 lanes) and
// gfx11 (RDNA, 32 lanes, its native mode) because nothing outside the
// kernel depends on the wave size: a team narrower than a wavefront
// shares it, and the launch (rows_per_group) is the same on both.
var HIP = &Dialect{
	Name: "hip", Backend: ir.ROCm,
	Types: map[dtype.DType]string{dtype.F32: "float", dtype.F16: "_Float16", dtype.BF16: "kgen_bf16",
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
	FloatFunc: func(n string) string { return "__builtin_" + n + "f" },
	ReadOnly:  func(e string) string { return e },
	PosInf:    "__builtin_inff()", NegInf: "(-__builtin_inff())",
	InfLit: "__builtin_inff()", NegLit: "(-__builtin_inff())",
	Shared: "__shared__", SimdGroup: "wavefront", ThreadGroup: "block",
	Barrier:    "kgen_barrier();",
	AddRN:      func(a, b string) string { return "kgen_fadd_rn(" + a + ", " + b + ")" },
	ShuffleXor: func(v, o string) string { return "kgen_shfl_xor(" + v + ", " + o + ")" },
	LaneOffset: "int",
	Threads: map[ThreadIndex]threadIndex{
		GlobalID: {Expr: "((unsigned long long)kgen_group_id() * kgen_group_size() + kgen_thread_id())"},
		LocalID:  local("kgen_tid", "kgen_thread_id()"),
		GroupID:  {Expr: "kgen_group_id()"},
		SimdLane: local("kgen_simd_lane", "kgen_tid % KGEN_WAVE"),
		SimdID:   local("kgen_simd", "kgen_tid / KGEN_WAVE"),
		// A batched matmul's batch element is the block's z.
		GroupXYZ: {Local: "const struct { unsigned int x, y, z; } kgen_tg3 = {__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()};", Expr: "kgen_tg3"},
	},
	ArrayAlign:      "alignas(16) ",
	UnrollElemLoops: true,
	NarrowArith:     func(c dtype.DType) bool { return c != dtype.F32 },
	Spell:           hipSpell,
	KernelHead:      func(k string) string { return "__device__ __forceinline__ void " + k + "_body" },
	RowLoops:        cudaRowLoops,
	RowDecls:        cudaRowDecls,
	LetCache:        true,
	RowHelpers:      []string{"row_io"},
	Instances:       hipInstances,
	Wave:            "KGEN_WAVE", HalfWave: "KGEN_WAVE / 2",
	Waves: func(n string) string { return "kgen_waves(" + n + ")" },
}

// hipSpell spells a function as the CUDA column of the funcs table does,
// with HIP's own definition of every name: a kgen_ helper keeps its name
// (templates/hip/prelude.tmpl has a block of the same name), a libdevice
// name f becomes kgen_f and an SFU intrinsic __f kgen_fast_f, each from
// its prelude block. The table keeps two C-family columns: HIP's
// spellings follow CUDA's per math mode, and only their definitions differ.
func hipSpell(f *funcs.Func, math string) funcs.Spelling {
	sp := f.CUDA.Mode(math)
	if sp.Name == funcs.Conditional || sp.Prelude != "" || sp.Name == "" {
		return sp
	}
	name := "kgen_" + sp.Name
	if rest, ok := strings.CutPrefix(sp.Name, "__"); ok {
		name = "kgen_fast_" + rest
	}
	return funcs.Spelling{Name: name, Prelude: "prelude_" + name}
}

// hipInstances writes one extern "C" __global__ entry point per storage
// dtype, named by the variant's host name, calling the templated body;
// __launch_bounds__ is the block size (amdgpu_flat_work_group_size).
func hipInstances(w *Writer, v *view) {
	k, d := v.kernel, v.d
	for _, variant := range k.Variants {
		t := d.Types[variant.DType]
		w.Func(fmt.Sprintf(`extern "C" __global__ void __launch_bounds__(%d) %s`, v.Threads, variant.HostName), kernelParams(k, d, t), func() {
			w.P(v.Kernel, "_body<", t, ">(", v.ParamNames, ");")
		})
		w.P()
	}
}
