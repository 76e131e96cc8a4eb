package cfam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA split (ir.SplitCUDA): a row-reducing or gated matmul's two
// phases inside one host function per storage dtype. Phase 1 is one
// CUTLASS GEMM per B whose EVT is the identity over the accumulator with an
// f32 D, into the f32 [m, n] workspaces; phase 2 is a plain CUDA kernel
// over the workspaces, the Split.Rows phase's bindings: the row-owning
// kernel's passes (rowPassBody, as Metal's second phase) or the epilogue
// per element. The parts are Metal's split's: dtype × problem class (the
// GEMMs) and "entry" (phase 2, the workspace pool and the host functions).

// splitCode writes the split's GEMM types, parts, phase-2 kernel and host
// entry points after the stage functions.
func splitCode(w *Writer, k *ir.Kernel, d *Dialect) {
	c := k.Matmul().CUDA
	ns := "kgen_" + k.Name
	w.P("#if !defined(KGEN_NO_CUTLASS) // the entry points need none of CUTLASS")
	w.P("namespace ", ns, " {")
	w.P("using namespace ::cute;")
	w.P("using namespace ::cutlass::epilogue::fusion;")
	w.P()
	forms := cutlassForms(k)
	sc := k.Matmul().Split.CUDA
	for i, f := range forms {
		if i == 1 && !anySwap(c) {
			continue
		}
		w.P("// Launch 1: the accumulator as f32 into a workspace (an identity EVT, f32 D).")
		gemmType(w, c, f, "Sm90Compute<cutlass::epilogue::thread::Identity, float, float, cutlass::FloatRoundStyle::round_to_nearest>, Sm90AccFetch",
			epilogueIO{c: "void", d: "float", align: sc.AlignD})
		w.P()
		a, b := "static_cast<T const*>(kgen_pa)", "static_cast<T const*>(kgen_pb)"
		if f.a.Binding != k.Matmul().A.Binding { // swapped: CUTLASS's A is the B operand
			a, b = b, a
		}
		gemmRun(w, f, splitRunParams(k), a, b, "nullptr", "kgen_d", "")
		w.P()
	}
	w.P("} // namespace ", ns)
	w.P("#endif")
	w.P()
	splitParts(w, k, forms, ns)
	for _, t := range c.SIMTParts() {
		simtCode(w, k, d, t, ns) // simt.go: the workspace GEMM on CUDA cores
	}
	w.P("#if !defined(KGEN_PARTS) || defined(KGEN_PART_entry)")
	splitKernel(w, k, d)
	w.P()
	splitEntries(w, k, d, ns)
	w.P("#endif")
}

// splitRunParams are the parameters of a workspace GEMM: A's and B's
// device pointers and the f32 workspace it writes.
func splitRunParams(k *ir.Kernel) string {
	return "void* kgen_stream, const void* kgen_pa, const void* kgen_pb, float* kgen_d, const " + k.Name + "_args& kgen_a, char* kgen_err, int kgen_errlen"
}

// splitParts writes one extern "C" workspace GEMM per dtype × problem
// class, defined in its own part and declared in the others.
func splitParts(w *Writer, k *ir.Kernel, forms [2]gemmForm, ns string) {
	gemmParts(w, k, k.Matmul().CUDA, forms, ns, "("+splitRunParams(k)+")", "kgen_stream, kgen_pa, kgen_pb, kgen_d, kgen_a, kgen_err, kgen_errlen")
}

// splitPhase is the split's second phase and a copy of the kernel with its
// bindings (the workspaces, the epilogue inputs, the outputs, the args).
func splitPhase(k *ir.Kernel) (*ir.Phase, *ir.Kernel) {
	p := &k.Matmul().Split.Rows
	pk := *k
	pk.Bindings, pk.Variants = p.Bindings, p.Variants
	return p, &pk
}

// splitKernel writes phase 2, templated on the storage type: the row
// passes over the workspaces, a block per row, or the epilogue per
// element.
func splitKernel(w *Writer, k *ir.Kernel, d *Dialect) {
	p, pk := splitPhase(k)
	t := k.Matmul().Split.CUDA.Tile
	w.P("// Launch 2 (", p.Entry, "): ", k.Matmul().Split.CUDA.Comment, ".")
	w.P("template <typename T>")
	w.Func(fmt.Sprint("__global__ void __launch_bounds__(", t.Threads(), ") ", p.Entry), kernelParams(pk, d, "T"), func() {
		mw := newMatmulWriter(w, k, d)
		if mw.mm.Rows == nil {
			splitEpilogue(mw)
			return
		}
		for _, ix := range []ThreadIndex{LocalID, SimdID} {
			w.P(d.Threads[ix].Local)
		}
		mw.accAt = func(i int) string { return fmt.Sprintf("%s[kgen_i * args.n + kgen_j]", ir.WorkspaceName(i)) }
		mw.rowTeam = t.Threads() // a block per row
		mw.teamRowPassBody()
	})
}

// splitEpilogue writes the gated form's phase 2: a grid-stride loop over
// the m·n elements, the epilogue stage over the workspaces' accumulators.
func splitEpilogue(mw *matmulWriter) {
	w, k, d := mw.Writer, mw.k, mw.d
	st := k.Stages()[0]
	outs := k.BindingsOf(ir.Output)
	w.P("using C = float;")
	w.P("const unsigned long long kgen_total = (unsigned long long)args.m * args.n;")
	w.Block("for (unsigned long long kgen_e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; kgen_e < kgen_total; kgen_e += (unsigned long long)gridDim.x * blockDim.x)", func() {
		if needsCoords(st) {
			w.P("const unsigned int kgen_i = (unsigned int)(kgen_e / args.n), kgen_j = (unsigned int)(kgen_e % args.n);")
		}
		args := mw.elementArgs(st, func(i int) string { return ir.WorkspaceName(i) + "[kgen_e]" })
		for _, b := range outs {
			w.P("C kgen_c_", b.Name, ";")
			args = append(args, "kgen_c_"+b.Name)
		}
		w.P(st.Name, "(", strings.Join(args, ", "), ");")
		for _, b := range outs {
			w.P(b.Name, "[kgen_e] = ", d.Cvt(d.TypeName(b.DType), "kgen_c_"+b.Name), ";")
		}
	})
}

// needsCoords reports whether stage st reads the element's row or column
// (an index, or an epilogue input indexed by them).
func needsCoords(st ir.Stage) bool {
	for _, a := range st.Args {
		if a.Kind == ir.ArgInput || a.Kind == ir.ArgIndex {
			return true
		}
	}
	return false
}

// splitEntries writes, per variant with a kernel, the workspace GEMM's
// dispatch — the SIMT GEMM for f32 storage and for what TMA cannot load,
// else the first problem class whose MaxM admits m — and the host entry
// point that runs both phases around the workspaces.
func splitEntries(w *Writer, k *ir.Kernel, d *Dialect, ns string) {
	c := k.Matmul().CUDA
	for _, v := range k.Variants {
		if !slices.Contains(c.Entries(), v.DType) {
			continue
		}
		gemm := fmt.Sprint(ns, "_gemm_", v.DType)
		simt := fmt.Sprint("return ", ns, "_", cuda.SIMTPart(v.DType), "(kgen_stream, kgen_pa, kgen_pb, kgen_d, kgen_a, kgen_err, kgen_errlen);")
		w.P("// The workspace GEMM of ", v.DType, " storage.")
		w.Block("static int "+gemm+"("+splitRunParams(k)+")", func() {
			if slices.Contains(c.SIMT, v.DType) {
				w.P(simt)
				return
			}
			if slices.Contains(c.Unaligned, v.DType) {
				w.P("// What TMA cannot load runs kgen's SIMT GEMM (CUDA cores, f32 into the workspace).")
				unalignedTest(w, k, c, "kgen_a", []string{"kgen_pa", "kgen_pb"}, simt)
			}
			classChain(w, c, "kgen_a.m", func(g ir.GemmConfig) string {
				return fmt.Sprint("return ", ns, "_", cuda.GemmPart(v.DType, g), "(kgen_stream, kgen_pa, kgen_pb, kgen_d, kgen_a, kgen_err, kgen_errlen);")
			})
		})
		w.P()
		w.Block(`extern "C" int `+v.HostName+"(void* kgen_stream, void* const* kgen_ptrs, const void* kgen_argp, char* kgen_err, int kgen_errlen)", func() {
			splitEntryBody(w, k, d, v.DType, gemm)
		})
		w.P()
	}
}

// splitEntryBody is one host entry point: the checks, the workspaces, the
// GEMMs, phase 2 and the workspaces' release, all on the caller's stream.
func splitEntryBody(w *Writer, k *ir.Kernel, d *Dialect, t dtype.DType, gemm string) {
	mm := k.Matmul()
	sp, args := mm.Split, k.Name+"_args"
	tile := sp.CUDA.Tile
	w.P("const ", args, "& kgen_args = *static_cast<const ", args, "*>(kgen_argp);")
	w.P("if (kgen_args.m == 0u || kgen_args.n == 0u) return 0; // nothing to write")
	w.P("const unsigned long long kgen_elems = (unsigned long long)kgen_args.m * kgen_args.n;")
	w.Block(fmt.Sprint("if (kgen_elems > ", sp.CUDA.MaxElems, "ull)"), func() {
		w.P(`std::snprintf(kgen_err, kgen_errlen, "m*n = %llu elements: the split's second launch indexes [m, n] in 32 bits", kgen_elems);`)
		w.P("return 5;")
	})
	w.P("cudaStream_t kgen_s = static_cast<cudaStream_t>(kgen_stream);")
	w.P("float* kgen_space = nullptr;")
	w.P(fmt.Sprintf("int kgen_rc = kgen_workspace(reinterpret_cast<void**>(&kgen_space), %d * kgen_elems * sizeof(float), kgen_s, \"the split's f32 workspace\", kgen_err, kgen_errlen);", len(sp.Space)))
	w.P("if (kgen_rc != 0) return kgen_rc;")
	for i, b := range sp.Space {
		w.P(fmt.Sprintf("float* %s = kgen_space + %d * kgen_elems;", b.Name, i))
	}
	w.P("// Launch 1: per B, the f32 accumulator into its workspace.")
	for i, b := range mm.B {
		cond := "if (kgen_rc == 0) "
		if i == 0 {
			cond = ""
		}
		w.P(cond, "kgen_rc = ", gemm, "(kgen_stream, kgen_ptrs[", mm.A.Binding, "], kgen_ptrs[", b.Binding, "], ", sp.Space[i].Name, ", kgen_args, kgen_err, kgen_errlen);")
	}
	ty := d.Types[t]
	blocks := fmt.Sprintf("(kgen_args.m < %du ? kgen_args.m : %du)", sp.CUDA.MaxRowBlocks, sp.CUDA.MaxRowBlocks)
	if mm.Rows == nil {
		blocks = fmt.Sprintf("(unsigned int)((kgen_elems + %dull) / %dull)", tile.Threads()-1, tile.Threads())
	}
	p := &sp.Rows
	w.Block("if (kgen_rc == 0)", func() {
		w.P("// Launch 2: ", sp.CUDA.Comment, ".")
		w.P(p.Entry, "<", ty, "><<<", blocks, ", ", tile.Threads(), ", 0, kgen_s>>>(", strings.Join(phaseArgs(k, d, ty), ", "), ");")
		w.P("const cudaError_t kgen_e = cudaGetLastError();")
		w.Block("if (kgen_e != cudaSuccess)", func() {
			w.P(`std::snprintf(kgen_err, kgen_errlen, "launch 2 (`, p.Entry, `): %s", cudaGetErrorString(kgen_e));`)
			w.P("kgen_rc = 6;")
		})
	})
	w.P("const cudaError_t kgen_fe = cudaFreeAsync(kgen_space, kgen_s);")
	w.Block("if (kgen_rc == 0 && kgen_fe != cudaSuccess)", func() {
		w.P(`std::snprintf(kgen_err, kgen_errlen, "freeing the workspace: %s", cudaGetErrorString(kgen_fe));`)
		w.P("kgen_rc = 7;")
	})
	w.P("return kgen_rc;")
}

// phaseArgs are phase 2's launch arguments in its binding order: the
// workspaces, the kernel's pointers (storage type ty unless pinned) and
// the args struct.
func phaseArgs(k *ir.Kernel, d *Dialect, ty string) []string {
	sp := k.Matmul().Split
	var out []string
	for j, b := range sp.Rows.Bindings {
		switch f := sp.Rows.From[j]; {
		case b.Role == ir.Args:
			out = append(out, "kgen_args")
		case f < 0:
			out = append(out, sp.Space[-1-f].Name)
		default:
			et := ty
			if b.DType != dtype.Invalid {
				et = d.Types[b.DType]
			}
			if b.Role == ir.Input {
				et = "const " + et
			}
			out = append(out, fmt.Sprintf("static_cast<%s*>(kgen_ptrs[%d])", et, f))
		}
	}
	return out
}
