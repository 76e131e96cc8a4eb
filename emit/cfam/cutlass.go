package cfam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA matmul: instead of one templated kernel body, the file
// instantiates CUTLASS 3.x SM90 GEMMs (ir.CUTLASS decides the problem
// classes and the EVT leaves) whose epilogue's compute node calls the
// kernel's epilogue stage function per element, and exports one host
// function per storage dtype, named by the variant's host name:
//
//	int <host>(void* stream, void* const* ptrs, const void* args, char* err, int errlen)
//
// ptrs are the device pointers in binding order, args the args struct's
// bytes; it returns 0, or non-zero with a message in err. `kgen cuda`
// builds the file into a shared library, one object per part (each dtype
// × problem class, and the entry points) so the parts compile in parallel:
// -DKGEN_PART_<part> selects one; without any, the whole file compiles.

// cutlassCode writes the EVT functor, the GEMM types, the parts and the
// entry points after the stage functions.
func cutlassCode(w *Writer, k *ir.Kernel, d *Dialect) {
	if sp := k.Matmul().Split; sp != nil && sp.CUDA != nil {
		splitCode(w, k, d) // cutlass_split.go
		return
	}
	c := k.Matmul().CUDA
	ns := "kgen_" + k.Name
	w.P("#if !defined(KGEN_NO_CUTLASS) // the entry points and the SIMT GEMM need none of CUTLASS")
	cutlassFunctor(w, k, ns)
	w.P("namespace ", ns, " {")
	w.P("using namespace ::cute;")
	w.P("using namespace ::cutlass::epilogue::fusion;")
	w.P()
	forms := cutlassForms(k)
	for i, f := range forms {
		if i == 1 && !anySwap(c) {
			continue
		}
		cutlassGemmType(w, c, ns, f)
		w.P()
		cutlassRun(w, k, c, f)
		w.P()
	}
	w.P("} // namespace ", ns)
	w.P("#endif")
	w.P()
	cutlassParts(w, k, forms, ns)
	for _, t := range c.SIMTParts() {
		simtCode(w, k, d, t, ns)
	}
	cutlassEntries(w, k, ns)
}

// cutlassFunctor writes the EVT compute node: a functor over fragments of
// float that calls the epilogue stage per element, the leaves' values in
// the stage's argument order and the params from its Arguments.
func cutlassFunctor(w *Writer, k *ir.Kernel, ns string) {
	st, args := k.Stages()[0], k.Name+"_args"
	w.P("// The EVT compute node: the epilogue stage applied to each element of a")
	w.P("// fragment; its children are the leaves below, in the stage's argument")
	w.P("// order; the params come from its Arguments (the args struct by value).")
	w.P("template <class F> struct ", ns, "_evt { struct Arguments { ", args, " args; }; };")
	w.P("template <int N> struct ", ns, "_evt<cutlass::Array<float, N>> {")
	w.Indent(func() {
		w.P("using Arguments = typename ", ns, "_evt<float>::Arguments;")
		var params, call []string
		leaf := 0
		for _, a := range st.Args {
			if a.Kind == ir.ArgParam {
				call = append(call, "kgen_a.args."+a.Name)
				continue
			}
			params = append(params, fmt.Sprintf("cutlass::Array<float, N> const& kgen_v%d", leaf))
			call = append(call, fmt.Sprintf("kgen_v%d[kgen_i]", leaf))
			leaf++
		}
		call = append(call, "kgen_y[kgen_i]")
		params = append(params, "Arguments const& kgen_a")
		w.Block("CUTLASS_DEVICE cutlass::Array<float, N> operator()("+strings.Join(params, ", ")+") const", func() {
			w.P("cutlass::Array<float, N> kgen_y;")
			w.P("CUTLASS_PRAGMA_UNROLL")
			w.P("for (int kgen_i = 0; kgen_i < N; ++kgen_i) ", st.Name, "(", strings.Join(call, ", "), ");")
			w.P("return kgen_y;")
		})
	})
	w.P("};")
	w.P()
}

// partSig is the signature of a part's function after its name.
func partSig(k *ir.Kernel) string {
	return "(void* kgen_stream, void* const* kgen_ptrs, const " + k.Name + "_args& kgen_args, char* kgen_err, int kgen_errlen)"
}

// cutlassParts writes one extern "C" function per dtype × problem class,
// defined in its own part and declared in the others.
func cutlassParts(w *Writer, k *ir.Kernel, forms [2]gemmForm, ns string) {
	gemmParts(w, k, k.Matmul().CUDA, forms, ns, partSig(k), "kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen")
}

// gemmParts writes one extern "C" function per dtype × problem class of c with
// signature sig (after the name), defined in its own part, where it runs
// the class's GEMM type through its form's run function with args, and
// declared in the others.
func gemmParts(w *Writer, k *ir.Kernel, c *ir.CUTLASS, forms [2]gemmForm, ns, sig, args string) {
	for _, t := range c.DTypes {
		for _, g := range c.Configs {
			part := cuda.GemmPart(t, g)
			w.P("#if !defined(KGEN_PARTS) || defined(KGEN_PART_", part, ")")
			w.Block(`extern "C" int `+ns+"_"+part+sig, func() {
				f := gemmAlias(w, ns, forms, t, g)
				w.P("return ", ns, "::", f.run, "<G>(", args, ");")
			})
			w.P("#else")
			w.P(`extern "C" int `, ns, "_", part, sig, ";")
			w.P("#endif")
			w.P()
		}
	}
}

// gemmAlias writes `using G = …;`, problem class g's GEMM type for storage
// t, and returns its form (swapped or not).
func gemmAlias(w *Writer, ns string, forms [2]gemmForm, t dtype.DType, g ir.GemmConfig) gemmForm {
	f := forms[0]
	if g.Swap {
		f = forms[1]
	}
	sched := "void" // CUTLASS's default: data-parallel tiles
	if g.StreamK {
		sched = "cutlass::gemm::StreamKScheduler"
	}
	w.P("using G = ", ns, "::", f.gemm, "<", cutlassElem(t), ", cute::Shape<cute::_", g.Tile[0], ", cute::_", g.Tile[1], ", cute::_", g.Tile[2],
		">, cute::Shape<cute::_", g.Cluster[0], ", cute::_", g.Cluster[1], ", cute::_1>, ", cutlassSchedules[g.Schedule], ", ", sched, ">;")
	return f
}

// cutlassEntries writes the host entry points, one per variant with a
// kernel: for 16-bit storage the first problem class whose MaxM admits m
// runs; for f32 the SIMT GEMM.
func cutlassEntries(w *Writer, k *ir.Kernel, ns string) {
	c, args := k.Matmul().CUDA, k.Name+"_args"
	w.P("#if !defined(KGEN_PARTS) || defined(KGEN_PART_entry)")
	for _, v := range k.Variants {
		if !slices.Contains(c.Entries(), v.DType) {
			continue
		}
		w.Block(`extern "C" int `+v.HostName+"(void* kgen_stream, void* const* kgen_ptrs, const void* kgen_argp, char* kgen_err, int kgen_errlen)", func() {
			w.P("const ", args, "& kgen_args = *static_cast<const ", args, "*>(kgen_argp);")
			if slices.Contains(c.SIMT, v.DType) {
				w.P("return ", ns, "_", cuda.SIMTPart(v.DType), "(kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen);")
				return
			}
			if slices.Contains(c.Unaligned, v.DType) {
				unalignedFallback(w, k, c, ns, v.DType)
			}
			classChain(w, c, "kgen_args.m", func(g ir.GemmConfig) string {
				return fmt.Sprint("return ", ns, "_", cuda.GemmPart(v.DType, g), "(kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen);")
			})
		})
	}
	w.P("#endif")
}

// classChain writes the run-time choice of a problem class: the first
// whose MaxM admits m (the C expression m) runs its call.
func classChain(w *Writer, c *ir.CUTLASS, m string, call func(g ir.GemmConfig) string) {
	for _, g := range c.Configs {
		if g.MaxM > 0 {
			w.P("if (", m, " <= ", g.MaxM, "u) ", call(g))
		} else {
			w.P(call(g))
		}
	}
}

// unalignedFallback writes the entry's test for a call CUTLASS cannot
// take (ir.CUTLASS.Unaligned), which runs the SIMT GEMM instead.
func unalignedFallback(w *Writer, k *ir.Kernel, c *ir.CUTLASS, ns string, t dtype.DType) {
	var ptrs []string
	for _, b := range k.Bindings {
		if b.Role == ir.Input || b.Role == ir.Output {
			ptrs = append(ptrs, fmt.Sprintf("kgen_ptrs[%d]", b.Index))
		}
	}
	w.P("// What TMA cannot load runs kgen's SIMT GEMM (CUDA cores, same epilogue).")
	unalignedTest(w, k, c, "kgen_args", ptrs, fmt.Sprint("return ", ns, "_", cuda.SIMTPart(t), "(kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen);"))
}

// unalignedTest writes `if (<what TMA cannot take>) <fallback>`: a row of
// a TMA-loaded or -stored matrix not a multiple of 16 bytes (k, n, and m
// for a column-major A), k = 0, or one of ptrs (the tensors TMA reads or
// writes) off a 16-byte boundary. args names the args struct.
func unalignedTest(w *Writer, k *ir.Kernel, c *ir.CUTLASS, args string, ptrs []string, fallback string) {
	conds := []string{fmt.Sprintf("%s.k %% %du != 0", args, c.Align), fmt.Sprintf("%s.n %% %du != 0", args, c.Align), args + ".k == 0"}
	if k.Matmul().A.ColMajor { // A stored [k, m]: its rows are m long
		conds = append(conds, fmt.Sprintf("%s.m %% %du != 0", args, c.Align))
	}
	for _, p := range ptrs {
		conds = append(conds, fmt.Sprintf("reinterpret_cast<size_t>(%s) %% 16 != 0", p))
	}
	w.P("if (", conds[0], " ||")
	for i, cond := range conds[1:] {
		end := " ||"
		if i == len(conds)-2 {
			end = ")"
		}
		w.P("        ", cond, end)
	}
	w.P("    ", fallback)
}

// cutlassSchedules spells a problem class's schedule: the mainloop's and
// the epilogue's.
var cutlassSchedules = map[string]string{
	"cooperative": "cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative",
	"pingpong":    "cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized",
}

func cutlassElem(t dtype.DType) string {
	if t == dtype.BF16 {
		return "cutlass::bfloat16_t"
	}
	return "cutlass::half_t"
}

func anySwap(c *ir.CUTLASS) bool {
	for _, g := range c.Configs {
		if g.Swap {
			return true
		}
	}
	return false
}

// gemmForm is one orientation of a matmul as CUTLASS sees it: the problem
// as written (y = A·B) or swapped (yᵀ = Bᵀ·Aᵀ, the tiny-m class). Decided
// here from the IR's operands; the templates of both are written alike.
type gemmForm struct {
	gemm, run        string     // the C++ names of its GEMM type and run function
	layoutA, layoutB string     // CUTLASS's layout tags of its A and B
	layoutCD         string     // of the output and the C source
	a, b             ir.Operand // the kgen operands it reads as its A and B
	strideA, strideB string
	strideCD         string
	shape            string // the problem (M, N, K, L)
	row, col         string // the leaves of an [n] and an [m] input
	rowArgs, colArgs string // their strides
}

func cutlassForms(k *ir.Kernel) [2]gemmForm {
	mm := k.Matmul()
	a, b := mm.A, mm.B[0]
	// Strides of CUTLASS's (rows, cols, batch) views, the dynamic one the
	// leading dimension.
	rowMajor := func(ld string) string { return "cute::make_stride(int64_t(" + ld + "), cute::_1{}, int64_t(0))" }
	colMajor := func(ld string) string { return "cute::make_stride(cute::_1{}, int64_t(" + ld + "), int64_t(0))" }
	pick := func(c bool, x, y string) string {
		if c {
			return x
		}
		return y
	}
	row := "Sm90RowBroadcast<0, TileShape, T, float, Stride<_0, _1, int64_t>>"
	col := "Sm90ColBroadcast<0, TileShape, T, float, Stride<_1, _0, int64_t>, 1>"
	rowArgs, colArgs := "{cute::_0{}, cute::_1{}, int64_t(0)}", "{cute::_1{}, cute::_0{}, int64_t(0)}"
	plain := gemmForm{gemm: "Gemm", run: "kgen_run",
		layoutA: cutlassLayout(a.ColMajor), layoutB: cutlassLayout(b.ColMajor), layoutCD: cutlassLayout(false),
		a: a, b: b,
		// A [m, k]: row-major (K, 1), column-major (1, M); B as CUTLASS's
		// (N, K) view: row-major [k, n] is (1, N), column-major (K, 1).
		strideA: pick(a.ColMajor, colMajor("M"), rowMajor("K")), strideB: pick(b.ColMajor, rowMajor("K"), colMajor("N")),
		strideCD: rowMajor("N"), shape: "{M, N, K, 1}", row: row, col: col, rowArgs: rowArgs, colArgs: colArgs}
	// Swapped: its A is Bᵀ [n, k] (row-major B is then column-major), its B
	// Aᵀ in the (N, K) = (m, k) view, its output yᵀ column-major; an [n]
	// input varies along its rows, an [m] input along its columns.
	swapped := gemmForm{gemm: "GemmT", run: "kgen_run_t",
		layoutA: cutlassLayout(!b.ColMajor), layoutB: cutlassLayout(!a.ColMajor), layoutCD: cutlassLayout(true),
		a: b, b: a,
		strideA: pick(b.ColMajor, rowMajor("K"), colMajor("N")), strideB: pick(a.ColMajor, colMajor("M"), rowMajor("K")),
		strideCD: colMajor("N"), shape: "{N, M, K, 1}",
		row:     "Sm90ColBroadcast<0, TileShape, T, float, Stride<_1, _0, int64_t>, 1>",
		col:     "Sm90RowBroadcast<0, TileShape, T, float, Stride<_0, _1, int64_t>, 1>",
		rowArgs: colArgs, colArgs: rowArgs}
	return [2]gemmForm{plain, swapped}
}

// cutlassGemmType writes the GEMM type of one form, templated on the
// problem class: the EVT, the epilogue and mainloop collectives (CUTLASS's
// builders) and the adapter.
func cutlassGemmType(w *Writer, c *ir.CUTLASS, ns string, f gemmForm) {
	var leaves []string
	for _, l := range c.Leaves {
		switch l.Kind {
		case ir.EVTAcc:
			leaves = append(leaves, "Sm90AccFetch")
		case ir.EVTRow:
			leaves = append(leaves, f.row)
		case ir.EVTCol:
			leaves = append(leaves, f.col)
		case ir.EVTSource:
			leaves = append(leaves, "Sm90SrcFetch<T>")
		}
	}
	elemC := "void"
	if c.Source >= 0 {
		elemC = "T"
	}
	gemmType(w, c, f, "Sm90Compute<"+ns+"_evt, T, float, cutlass::FloatRoundStyle::round_to_nearest>,\n        "+strings.Join(leaves, ",\n        "),
		epilogueIO{c: elemC, d: "T", align: c.Align})
}

// epilogueIO is an epilogue's C and D element types and their alignment.
type epilogueIO struct {
	c, d  string
	align int
}

// gemmType writes the GEMM type of one form whose EVT is Sm90EVT<evt>.
func gemmType(w *Writer, c *ir.CUTLASS, f gemmForm, evt string, io epilogueIO) {
	w.P("template <class T, class TileShape, class ClusterShape, class MainSchedule, class EpiSchedule, class Scheduler>")
	w.P("struct ", f.gemm, " {")
	w.Indent(func() {
		w.P("using EVT = Sm90EVT<", evt, ">;")
		w.P("using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<")
		w.P("    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,")
		w.P("    cutlass::epilogue::collective::EpilogueTileAuto, float, float,")
		w.P("    ", io.c, ", ", f.layoutCD, ", ", io.align, ", ", io.d, ", ", f.layoutCD, ", ", io.align, ", EpiSchedule, EVT>::CollectiveOp;")
		w.P("using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<")
		w.P("    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,")
		w.P("    T, ", f.layoutA, ", ", c.Align, ", T, ", f.layoutB, ", ", c.Align, ", float,")
		w.P("    TileShape, ClusterShape,")
		w.P("    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,")
		w.P("    MainSchedule>::CollectiveOp;")
		w.P("using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue, Scheduler>;")
		w.P("using Adapter = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;")
	})
	w.P("};")
}

// cutlassLayout is CUTLASS's layout tag of an operand, which names the
// logical matrix ([m, k] for A, [k, n] for B) as kgen's layouts do.
func cutlassLayout(colMajor bool) string {
	if colMajor {
		return "cutlass::layout::ColumnMajor"
	}
	return "cutlass::layout::RowMajor"
}

// cutlassRun writes the host function of one form: CUTLASS's arguments
// from the pointers and the args struct, then the GEMM on the stream.
func cutlassRun(w *Writer, k *ir.Kernel, c *ir.CUTLASS, f gemmForm) {
	out := k.BindingsOf(ir.Output)[0]
	ptr := func(b int, cnst bool) string {
		if cnst {
			return fmt.Sprintf("static_cast<T const*>(kgen_ptrs[%d])", b)
		}
		return fmt.Sprintf("static_cast<T*>(kgen_ptrs[%d])", b)
	}
	src := "nullptr"
	if c.Source >= 0 {
		src = ptr(c.Source, true)
	}
	var leaves []string
	for _, l := range c.Leaves {
		switch l.Kind {
		case ir.EVTRow:
			leaves = append(leaves, "{"+ptr(l.Binding, true)+", T(0), "+f.rowArgs+"}")
		case ir.EVTCol:
			leaves = append(leaves, "{"+ptr(l.Binding, true)+", T(0), "+f.colArgs+"}")
		default:
			leaves = append(leaves, "{}")
		}
	}
	gemmRun(w, f, "void* kgen_stream, void* const* kgen_ptrs, const "+k.Name+"_args& kgen_a, char* kgen_err, int kgen_errlen",
		ptr(f.a.Binding, true), ptr(f.b.Binding, true), src, ptr(out.Index, false),
		"kgen_args.epilogue.thread = {"+strings.Join(append(leaves, "{kgen_a}"), ", ")+"};")
}

// gemmRun writes a form's host function with parameters params: the
// arguments over pointers a, b (the form's operands), the C source src and
// the output d, the epilogue's thread arguments (thread, a statement or
// ""), then the checks and the GEMM on kgen_stream.
func gemmRun(w *Writer, f gemmForm, params, a, b, src, d, thread string) {
	w.P("template <class G>")
	w.Block("int "+f.run+"("+params+")", func() {
		w.P("using T = typename G::Adapter::ElementA;")
		w.P("const int M = int(kgen_a.m), N = int(kgen_a.n), K = int(kgen_a.k);")
		w.P("typename G::Adapter::Arguments kgen_args{cutlass::gemm::GemmUniversalMode::kGemm, ", f.shape, ",")
		w.P("    {", a, ", ", f.strideA, ", ", b, ", ", f.strideB, "},")
		w.P("    {{}, ", src, ", ", f.strideCD, ", ", d, ", ", f.strideCD, "}};")
		if thread != "" {
			w.P(thread)
		}
		w.P("typename G::Adapter kgen_gemm;")
		w.P("cutlass::Status kgen_st = kgen_gemm.can_implement(kgen_args);")
		w.Block("if (kgen_st != cutlass::Status::kSuccess)", func() {
			w.P(`std::snprintf(kgen_err, kgen_errlen, "CUTLASS cannot run m=%d n=%d k=%d: %s", M, N, K, cutlass::cutlassGetStatusString(kgen_st));`)
			w.P("return 1;")
		})
		w.P("// Stream-K's partial sums: from kgen's stream-ordered pool, freed after")
		w.P("// the GEMM in the same stream (so a captured graph owns it too).")
		w.P("const cudaStream_t kgen_s = static_cast<cudaStream_t>(kgen_stream);")
		w.P("void* kgen_ws = nullptr;")
		w.P("const size_t kgen_wsize = G::Adapter::get_workspace_size(kgen_args);")
		w.Block("if (kgen_wsize != 0)", func() {
			w.P(`const int kgen_rc = kgen_workspace(&kgen_ws, kgen_wsize, kgen_s, "CUTLASS's stream-K workspace", kgen_err, kgen_errlen);`)
			w.P("if (kgen_rc != 0) return kgen_rc;")
		})
		w.P("kgen_st = kgen_gemm.run(kgen_args, kgen_ws, kgen_s);")
		w.P("if (kgen_ws != nullptr) cudaFreeAsync(kgen_ws, kgen_s);")
		w.Block("if (kgen_st != cutlass::Status::kSuccess)", func() {
			w.P(`std::snprintf(kgen_err, kgen_errlen, "CUTLASS run: %s (%s)", cutlass::cutlassGetStatusString(kgen_st), cudaGetErrorString(cudaGetLastError()));`)
			w.P("return 3;")
		})
		w.P("return 0;")
	})
}
